// Package gitindex is git's index file format (the .git/index "dircache";
// gitformat-index(5)), versions 2 and 3 written, 4 read: the whole form
// (Whole) and the split form (Split: a shared index, sharedindex.<SHA-1>,
// and the index file's `link` extension with its EWAH bitmaps). It parses
// an index, finds, sets and removes a path's entry in place, and writes
// the file's bytes back. It knows bytes only: no *Repo, no files, no
// locks, no policy of when to split, when to write a new shared index,
// where it lives or what entries to record (all of that is gitver's:
// gitindex.go and splitindex.go).
//
// Rooms: whole.go holds the whole form, an entry's bytes (Entry, Stat) and
// Parse; split.go the split form (Index is either); ewah.go the bitmaps.
//
// It is not go-git's plumbing/format/index, whose encoder re-encodes every
// entry through reflection (about 125 ms a write for 100,000 notes; this
// package patches an entry's bytes in place) and which does not write the
// split form; go-git's decoder is used to read version 4.
//
// The name is not "index": fsstore/index is the board's search index.
package gitindex
