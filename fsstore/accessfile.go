package fsstore

import (
	"path/filepath"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Access reads the access file; ok is false in open mode (no file).
func (w *Workspace) Access() (f *access.File, ok bool, err error) {
	return access.Load(filepath.Join(w.dir, note.AccessFile))
}

// SaveAccess writes and commits the access file, as the person running the
// command (git's user.name, else "human").
func (w *Workspace) SaveAccess(f *access.File, message string) error {
	if err := f.Check(); err != nil {
		return err
	}
	content, err := f.Marshal()
	if err != nil {
		return err
	}
	return w.lock.with(func() error {
		return w.follower.WhileBranchMoves("save access", note.AccessFile, w.people.Repair, func() error {
			head, _, err := w.catch.CatchUp(nil, nil)
			if err != nil {
				return err
			}
			_, err = w.people.CommitLocked(head, []commits.Change{{Path: note.AccessFile, Content: content}}, w.people.PersonSignature(),
				message+"\n", false)
			if _, committed := unfinished(err, 0); committed {
				return nil // the next write finishes it
			}
			return err
		})
	})
}
