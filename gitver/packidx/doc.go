// Package packidx is git's pack index file format, version 2 (the .idx
// beside a .pack; gitformat-pack(5)): encoding one from the entries of a
// pack, and parsing and checking one. It knows bytes only: no *Repo, no
// files, no locks, no policy of when a pack is written, published or read
// (that is gitver's, packs.go); the pack itself is gitver/pack's.
//
// Rooms: idx.go holds Encode, Parse and Index; idx_test.go the comparison
// with go-git and the benchmarks.
//
// go-git's plumbing/format/idxfile (Writer, Encoder, Decoder, MemoryIndex)
// does the same job, and its encoder writes the same bytes (TestEncodeAsGoGit
// proves it; gitver/pack's tests have `git index-pack` write the same bytes
// too). It is not used, as measured by this package's benchmarks (2 shared
// cores, an index of 2000 objects, the size of a merged pack):
//
//   - parsing, done for every pack a reader has not seen yet (one per group
//     of commits of any writer): 78-83 µs and 4 allocations here, 195-229 µs
//     and 1059 allocations through Decoder, which reads field by field into
//     per-fan-out buckets, and counts the objects only after reading them
//     all (Parse refuses a pack too large for the program before);
//   - looking an object up, for every read of a pack the program wrote:
//     75-103 ns here, 94-106 ns through MemoryIndex.FindOffset and FindCRC32
//     (FindOffset takes a mutex and records the offset in a map at every
//     look), and MemoryIndex gives no position to find an entry's end by;
//   - encoding, once per group of commits written: 0.54-0.60 ms and 5
//     allocations here, 1.2-1.6 ms and 7051 allocations through Writer and
//     Encoder.
//
// So the encoder stays beside the parser that shares its layout.
package packidx
