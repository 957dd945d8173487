package fsstore

import (
	"fmt"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// adoptEdits commits, as the person's own version, any change made on disk to
// the files of note key that git does not have yet, and returns the branch's
// commit after it. A tool write is only considered after this: its
// compare-and-swap then fails against the person's version instead of
// overwriting their edit. The caller holds the write lock.
func (w *Workspace) adoptEdits(key string) (gitver.Hash, error) {
	head, _, err := w.catchUp(nil, nil)
	if err != nil {
		return head, err
	}
	paths := []string{key + ".md", key + ".blob.md", key + ".blob.tsv"}
	var changes []fileChange
	unchanged := map[string]fileStat{}
	blobs := map[string]string{}
	err = w.idx.Read(func(s *index.Snapshot) error {
		// The three files share their directories: check the chain once,
		// then each file.
		if err := w.checkNoLinks(paths[0]); err != nil {
			return err
		}
		for i, p := range paths {
			if i > 0 {
				if err := w.checkFile(p); err != nil {
					return err
				}
			}
			committed, err := s.FileBlob(p)
			if err != nil {
				return err
			}
			fi, err := w.root.Lstat(p)
			if err != nil {
				if committed != "" {
					changes = append(changes, fileChange{path: p, deleted: true})
				}
				continue
			}
			st := statOf(fi)
			blob, size, mtime, ino, ok, err := s.Disk(p)
			if err != nil {
				return err
			}
			if ok && blob == committed && (fileStat{size, mtime, ino}) == st {
				continue // unchanged since it last matched git: no need to read it
			}
			content, st, _, err := w.readDisk(p, maxFileBytes)
			if err != nil {
				return err
			}
			h := gitver.BlobHash(content).String()
			if h == committed {
				unchanged[p], blobs[p] = st, h
				continue
			}
			changes = append(changes, fileChange{path: p, content: content})
		}
		return nil
	})
	if err != nil {
		return head, err
	}
	if len(unchanged) > 0 && len(changes) == 0 {
		// Remember the stat so the next write need not read the file again.
		_, _, err = w.catchUp(nil, func(tx *index.Tx) error {
			for p, st := range unchanged {
				if err := tx.SetDisk(p, blobs[p], st.size, st.mtime, st.ino); err != nil {
					return err
				}
			}
			return nil
		})
		return head, err
	}
	if len(changes) == 0 {
		return head, nil
	}
	cur, err := w.indexedNote(key)
	if err != nil {
		return head, err
	}
	version := cur.Version + 1
	uri := "bb://" + w.name + "/" + key
	who := w.personSignature()
	msg := fmt.Sprintf("edit %s v%d by hand\n\nBlackboard-Uri: %s\nBlackboard-Version: %d\nBlackboard-Agent: %s\n",
		key, version, uri, version, who.Name)
	commit, err := w.commitLocked(head, changes, who, msg, true)
	if err != nil {
		return head, err
	}
	return commit, nil
}
