// Package pack is git's pack file format (gitformat-pack(5)). It writes a
// pack as the program does (whole objects, no deltas) in memory with its
// index (gitver/packidx), reads an entry at the offset the index gives,
// verifies a pack against its index and checksums, and reads any pack in
// place, deltas included, through its index mapped into memory (Mapped).
// It knows bytes only: no *Repo, no locks, no policy of when a pack is
// written, synced, published, kept or merged, nor of where its files go
// (all of that is gitver's, packs.go).
//
// Rooms: write.go builds a pack (Writer, entry headers, the trailer);
// read.go reads one (Reader: entries at offsets, where each ends,
// inflating, checking every entry against its CRC and the whole against
// its checksum); mapped.go reads any pack git wrote (Mapped: the index
// searched in place, delta chains resolved, a cache of their bases).
//
// The entry types are go-git's plumbing.ObjectType, whose values are the
// pack's own (commit 1, tree 2, blob 3, tag 4, deltas 6 and 7).
package pack
