package fsstore

import (
	"os"
	"path/filepath"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// initCommit commits the workspace's own files and the state note, in one
// commit, unless they are already on the branch.
func (w *Workspace) initCommit() error {
	return w.withWriteLock(func() error {
		head, _, err := w.catch.CatchUp(nil, nil)
		if err != nil {
			return err
		}
		var changes []fileChange
		own := []string{note.ConfigFile, note.GitignoreFile}
		blobs, err := w.committedBlobs(own)
		if err != nil {
			return err
		}
		for i, p := range own {
			if !blobs[i].IsZero() {
				continue
			}
			content, err := os.ReadFile(filepath.Join(w.dir, filepath.FromSlash(p)))
			if err != nil {
				return err
			}
			changes = append(changes, fileChange{path: p, content: content})
		}
		state, err := w.indexedNote(note.StateNote)
		if err != nil {
			return err
		}
		if state.Version == 0 {
			if _, err := os.Stat(filepath.Join(w.dir, filepath.FromSlash(note.StateNote+".md"))); os.IsNotExist(err) {
				content, err := note.StateNoteFile(time.Now())
				if err != nil {
					return err
				}
				changes = append(changes, fileChange{path: note.StateNote + ".md", content: content})
			}
		}
		if len(changes) == 0 {
			return nil
		}
		_, err = w.commitLocked(head, changes, w.agentSignature(note.InitAgent), note.InitMessage(w.name).String(), false)
		return err
	})
}
