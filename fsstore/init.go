package fsstore

import (
	"os"
	"path/filepath"
	"time"
)

// initCommit commits the workspace's own files and the state note, in one
// commit, unless they are already on the branch.
func (w *Workspace) initCommit() error {
	return w.withWriteLock(func() error {
		head, _, err := w.catchUp(nil, nil)
		if err != nil {
			return err
		}
		var changes []fileChange
		own := []string{configFile, gitignoreFile}
		blobs, err := w.committedBlobs(own)
		if err != nil {
			return err
		}
		for i, p := range own {
			if blobs[i] != "" {
				continue
			}
			content, err := os.ReadFile(filepath.Join(w.dir, filepath.FromSlash(p)))
			if err != nil {
				return err
			}
			changes = append(changes, fileChange{path: p, content: content})
		}
		state, err := w.indexedNote(StateNote)
		if err != nil {
			return err
		}
		if state.Version == 0 {
			if _, err := os.Stat(filepath.Join(w.dir, filepath.FromSlash(StateNote+".md"))); os.IsNotExist(err) {
				f := newNoteFile()
				for _, kv := range [][2]string{
					{keyDigest, "Board state: nothing recorded yet. Keep this note to what a newcomer needs first."},
					{keyKind, "state"}, {keyAuthor, "blackboard-mcp"},
				} {
					if err := f.set(kv[0], kv[1]); err != nil {
						return err
					}
				}
				if err := f.set(keyUpdated, time.Now().UTC().Truncate(time.Second)); err != nil {
					return err
				}
				f.body = []byte("# Current state\n\nThe team's catch-me-up note: what is going on, what is decided, where to look.\n")
				content, err := f.render()
				if err != nil {
					return err
				}
				changes = append(changes, fileChange{path: StateNote + ".md", content: content})
			}
		}
		if len(changes) == 0 {
			return nil
		}
		msg := "init workspace " + w.name + "\n\nBlackboard-Uri: bb://" + w.name + "/" + StateNote + "\nBlackboard-Version: 1\n" + trailerAgent + "blackboard-mcp\n"
		_, err = w.commitLocked(head, changes, w.agentSignature("blackboard-mcp"), msg, false)
		return err
	})
}
