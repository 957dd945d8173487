// Package catchup brings the derived index (fsstore/index) to the board's
// branch: the one part that applies commits to the index, whoever made them
// (this process, another one, a person's commit or pull, a reset).
//
// A catch-up a caller waits for is bounded: when the index is more than a
// few hundred commits behind the branch (a board cloned with plain git, an
// index of an older schema rebuilt, a person's pull of thousands of
// commits), the catch-up is left to a build in the background, which
// applies the commits in transactions of a fraction of a second each, so
// that readers see the index grow and writers get the index between them.
// One process at a time builds (a file lock); the others read its progress.
//
// The rooms, by file:
//
//	catcher.go  Catcher: the bounded catch-up a caller waits for, the
//	            background build, its progress and its lock
//	sync.go     the version rule: which commits the index holds, in which
//	            order, and each note's row refreshed from git
//	fromgit.go  notes read from git while the index is behind: a named
//	            note for a reader; for a writer, with its version counted
//	            by the same rule for that note alone
//
// It knows git through gitver and the board's format through fsstore/note;
// it knows nothing of writes, people's edits or the remote, which call it.
package catchup
