// Package pack is git's pack file format (gitformat-pack(5)), as the
// program writes it: whole objects, no deltas. It writes a pack in memory
// with its index (gitver/packidx), reads an entry at the offset the index
// gives, and verifies a pack against its index and checksums. It knows
// bytes only: no *Repo, no locks, no policy of when a pack is written,
// synced, published, kept or merged, nor of where its files go (all of
// that is gitver's, packs.go).
//
// Rooms: write.go builds a pack (Writer, entry headers, the trailer);
// read.go reads one (Reader: entries at offsets, where each ends,
// inflating, checking every entry against its CRC and the whole against
// its checksum).
//
// The entry types are go-git's plumbing.ObjectType, whose values are the
// pack's own (commit 1, tree 2, blob 3, tag 4, deltas 6 and 7).
package pack
