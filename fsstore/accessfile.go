package fsstore

import (
	"errors"
	"path/filepath"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
)

// accessFile lists the agents, their token hashes and topics. It is
// committed like any file of the board, so `git log` tells who was given
// access when; no address can name it.
const accessFile = ".blackboard/access.yaml"

// Access reads the access file; ok is false in open mode (no file).
func (w *Workspace) Access() (f *access.File, ok bool, err error) {
	return access.Load(filepath.Join(w.dir, accessFile))
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
	return w.withWriteLock(func() error {
		for range maxMoves {
			head, _, err := w.catchUp(nil, nil)
			if err != nil {
				return err
			}
			_, err = w.commitLocked(head, []fileChange{{path: accessFile, content: content}}, w.personSignature(),
				message+"\n", false)
			if !errors.Is(err, errBranchMoved) {
				return err
			}
		}
		return errors.New("the branch kept moving; try again")
	})
}
