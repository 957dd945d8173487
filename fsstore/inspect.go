package fsstore

import (
	"os"
	"path/filepath"

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
	return sameStat(recorded, diskStat(st))
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
