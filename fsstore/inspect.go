package fsstore

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/journal"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The read-only surface that diagnosis (fsstore/health) needs besides
// WalkNotes, ReadFile and Rel. Nothing here takes the write lock or changes
// anything.

// Repo is the workspace's git repository, to read from. Writes go through
// the workspace's write path only.
func (w *Workspace) Repo() *gitver.Repo { return w.repo }

// IndexHead is the commit the derived index reflects and its cursor, as the
// index has them now: it does not catch up first.
func (w *Workspace) IndexHead() (commit gitver.Hash, cursor int, err error) { return w.idx.Head() }

// BuildProgress is how far a build of the derived index in the background
// has come.
type BuildProgress struct {
	// Done and Total count the commits applied and to apply; Total is 0
	// while the history is still being read.
	Done, Total int
	// Message says it for people and models, with the time left.
	Message string
}

// IndexBuild says how far the build of the derived index in the background
// has come while one runs, in this process or another (a server's):
// ok is false when none does.
func (w *Workspace) IndexBuild() (BuildProgress, bool) {
	if st, ok := w.catch.Building(); ok {
		return BuildProgress{Done: st.Done, Total: st.Total, Message: st.String()}, true
	}
	return BuildProgress{}, false
}

// ReadIndex reads the derived index at one point of history, as it is now:
// it does not catch up first.
func (w *Workspace) ReadIndex(fn func(*index.Snapshot) error) error { return w.idx.Read(fn) }

// SameStat reports whether a file's stat is the one the index recorded when
// the file last matched its committed blob: then it need not be read again.
func SameStat(recorded index.DiskStat, st gitver.FileStat) bool {
	return index.SameStat(recorded, index.StatOf(st))
}

// InterruptedWrite is a write that a killed process left half-finished.
type InterruptedWrite struct {
	Commit gitver.Hash // the commit it was making, zero when the journal is torn
	Paths  []string    // the files it was writing
}

// FindInterruptedWrite reports the write a killed process left in the
// journal of the workspace at dir, or nil: a non-empty journal while no
// process holds the write lock. (A writer holds the lock for as long as its
// journal is non-empty.) It reads only; opening the workspace or any write
// finishes the write.
func FindInterruptedWrite(dir string) *InterruptedWrite {
	j, torn, err := journal.At(filepath.Join(dir, note.JournalFile), false).Read()
	if err != nil || j == nil && !torn {
		return nil
	}
	if lock, err := os.OpenFile(filepath.Join(dir, note.LockFile), os.O_RDWR, 0); err == nil {
		busy := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
		if !busy {
			unix.Flock(int(lock.Fd()), unix.LOCK_UN)
		}
		lock.Close()
		if busy {
			return nil // a live writer's journal
		}
	}
	iw := &InterruptedWrite{}
	if j != nil && !j.New.IsZero() {
		iw.Commit = j.New
		for _, f := range j.Files {
			iw.Paths = append(iw.Paths, f.Path)
		}
	}
	return iw
}

// ReadFile reads the work-tree file p (slash-separated, relative to the
// workspace) through the workspace's root: ok is false when it does not
// exist.
func (w *Workspace) ReadFile(p string) (content []byte, fi fs.FileInfo, ok bool, err error) {
	return w.files.ReadFile(p)
}

// WalkNotes is every note file in the work tree, with its stat, and the
// files that cannot be notes; ok is false when the walk did not finish.
func (w *Workspace) WalkNotes() (found map[string]gitver.FileStat, problems []TreeProblem, ok bool) {
	return w.people.WalkNotes()
}

// Rel is the workspace-relative, slash-separated path of abs.
func (w *Workspace) Rel(abs string) string {
	rel, err := filepath.Rel(w.dir, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}

// Reindex rebuilds the derived index from git, in one transaction: other
// processes keep reading the old index until the new one is complete, and
// their writes wait for it.
func (w *Workspace) Reindex(progress Progress) (int, error) {
	var seq int
	err := w.idx.Update(func(tx *index.Tx) error {
		var err error
		seq, err = w.catch.Rebuild(tx, progress)
		return err
	})
	if err != nil {
		return seq, err
	}
	if err := w.idx.Tidy(); err != nil {
		return seq, err
	}
	// The notes' vectors, made again from the start (Reset forgot them
	// and where the last pass finished).
	_, err = w.vectors.EmbedPending(true, func(done int) {
		if progress != nil {
			progress("vectors", done, 0)
		}
	})
	return seq, err
}

// BranchHead is the commit the board's branch points to now: whoever moved
// it (this process, another, a person's commit or pull). It reads one ref.
func (w *Workspace) BranchHead() (gitver.Hash, error) { return w.repo.Head() }

// ChangesBetween lists the notes whose file or out-of-line content differs
// between the trees of commits from and to (from zero: every note of to).
func (w *Workspace) ChangesBetween(from, to gitver.Hash) (NoteChanges, error) {
	var out NoteChanges
	tree := func(c gitver.Hash) (gitver.Hash, error) {
		if c.IsZero() {
			return gitver.Hash{}, nil
		}
		info, err := w.repo.ReadCommit(c)
		if err != nil {
			return gitver.Hash{}, err
		}
		return info.Tree, nil
	}
	a, err := tree(from)
	if err != nil {
		return out, err
	}
	b, err := tree(to)
	if err != nil {
		return out, err
	}
	changes, err := w.repo.DiffTrees(a, b)
	if err != nil {
		return out, err
	}
	// A note's file and its blob file are one note: it was added or removed
	// when its .md file was, and updated when either changed.
	kinds := map[string]*[]string{}
	for _, ch := range changes {
		key, ok := note.KeyOf(ch.Path)
		if !ok {
			continue
		}
		isNote := ch.Path == key+".md"
		switch {
		case isNote && ch.Old.IsZero():
			kinds[key] = &out.Added
		case isNote && ch.New.IsZero():
			kinds[key] = &out.Removed
		case kinds[key] == nil:
			kinds[key] = &out.Updated
		}
	}
	for key, list := range kinds {
		if _, err := note.ParseAddress(key, w.name); err == nil {
			*list = append(*list, key)
		}
	}
	slices.Sort(out.Updated)
	slices.Sort(out.Added)
	slices.Sort(out.Removed)
	return out, nil
}

// URI is the canonical address of the note key (topic/key...).
func (w *Workspace) URI(key string) string { return w.reader.uri(key) }

// Cursor returns the board's change sequence: the number of commits in the
// branch's first-parent history.
func (w *Workspace) Cursor() (int, error) {
	return w.reader.readAtHead(func(*index.Snapshot) error { return nil })
}

// NoteChanges is what changed on the board between two commits of its
// branch, as note keys (topic/key...), each list sorted.
type NoteChanges struct {
	Updated []string // present before and after, with other content
	Added   []string // present only after
	Removed []string // present only before
}

// Empty reports whether no note changed.
func (c NoteChanges) Empty() bool { return len(c.Updated)+len(c.Added)+len(c.Removed) == 0 }
