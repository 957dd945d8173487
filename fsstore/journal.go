package fsstore

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// journal is the intent of the one write in progress, recorded (and synced)
// before the branch moves. A writer killed after the commit point leaves it
// behind, and the next writer finishes the work from it: the files are put in
// place and git's index is brought up to date, so the half-finished write is
// completed rather than mistaken for a person's edit (which would revert it).
// A writer killed before the commit point leaves a journal whose commit the
// branch never reached: it is dropped, and nothing on disk had changed.
//
// The file always exists once a workspace has been written; empty means no
// write is in progress. Truncating it is not synced: a journal that survives a
// power failure describes a finished write, and finishing it again is a no-op.
type journal struct {
	Old   gitver.Hash   `json:"old"`
	New   gitver.Hash   `json:"new"`
	Time  time.Time     `json:"time"`
	Files []journalFile `json:"files"`
	// OnDisk is set when the files already hold the new content: a
	// person's edit being committed, not a tool write.
	OnDisk bool `json:"on_disk,omitempty"`
	// BranchOnly is set when the write went to the branch alone, while a
	// person had another branch checked out: no file or git index entry
	// is the write's to finish.
	BranchOnly bool `json:"branch_only,omitempty"`
}

type journalFile struct {
	Path string      `json:"path"`
	Old  gitver.Hash `json:"old"` // blob before, zero when the file was absent
	New  gitver.Hash `json:"new"` // blob after, zero when the file is deleted
}

// writeJournal records j. A process killed after it still leaves the journal
// readable (it is in the page cache); durability against a power failure is
// syncJournal's, run alongside the objects' syncs.
func (w *Workspace) writeJournal(j *journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(w.dir, note.JournalFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncJournal makes the journal durable.
func (w *Workspace) syncJournal() error {
	if !w.repo.Durable() {
		return nil
	}
	f, err := os.Open(filepath.Join(w.dir, note.JournalFile))
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (w *Workspace) clearJournal() error {
	return os.Truncate(filepath.Join(w.dir, note.JournalFile), 0)
}

// recover finishes or drops the write a killed process left in the journal.
// It runs under the write lock, before every write.
func (w *Workspace) recover() error {
	f, err := os.Open(filepath.Join(w.dir, note.JournalFile))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	f.Close()
	if err != nil || len(b) == 0 {
		return err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		// Torn while being written: the writer died before the commit point.
		return w.clearJournal()
	}
	newHash := j.New
	if newHash.IsZero() {
		return w.clearJournal()
	}
	if _, err := w.repo.RemoveStaleLock(newHash); err != nil {
		return err
	}
	// File times come from a coarse kernel clock that may lag the journal's
	// time by a tick: allow a second.
	if _, err := w.repo.RemoveStaleIndexLock(j.Time.Add(-time.Second)); err != nil {
		return err
	}
	head, err := w.repo.Head()
	if err != nil {
		return err
	}
	if head != newHash {
		// The commit point was not reached (or a person has since moved the
		// branch past it, and their commit is the truth now).
		w.dropTemps(&j)
		return w.clearJournal()
	}
	if j.BranchOnly {
		return w.clearJournal()
	}
	return w.finishJournal(&j)
}

// finishJournal does what is left of j once the branch holds j.New: the
// files in place (a person's change to one since stays), git's index
// entries, the temporary files gone, the journal cleared.
func (w *Workspace) finishJournal(j *journal) error {
	gitIndex, err := w.repo.LockIndex()
	if err != nil {
		return err
	}
	defer gitIndex.Release()
	return w.finishJournalHolding(j, gitIndex)
}

// finishJournalHolding is finishJournal for a caller that holds git's
// index lock, which it releases: no git command writes files meanwhile.
func (w *Workspace) finishJournalHolding(j *journal, gitIndex *gitver.IndexLock) error {
	var entries []gitver.IndexEntry
	for _, f := range j.Files {
		entry, err := w.finishFile(f, j.OnDisk)
		if err != nil {
			return err
		}
		if entry != nil {
			entries = append(entries, *entry)
		}
	}
	w.dropTemps(j)
	if err := gitIndex.Write(entries); err != nil {
		return err
	}
	return w.clearJournal()
}

// finishFile puts one file of an interrupted write in place, unless a person
// changed it since (then their content stays, to be committed as their edit).
// It returns the git index entry to record, or nil.
func (w *Workspace) finishFile(f journalFile, onDisk bool) (*gitver.IndexEntry, error) {
	content, _, exists, err := w.ReadFile(f.Path)
	if err != nil {
		return nil, err
	}
	var disk gitver.Hash
	if exists {
		disk = gitver.BlobHash(content)
	}
	switch {
	case disk == f.New:
		// already in place
	case !onDisk && disk == f.Old:
		if f.New.IsZero() {
			if err := w.files.Remove(f.Path); err != nil {
				return nil, err
			}
			break
		}
		blob, err := w.repo.ReadBlob(f.New)
		if err != nil {
			return nil, err
		}
		if err := w.files.WriteAtomic(f.Path, blob); err != nil {
			return nil, err
		}
	default:
		// A person's edit made after the crash: their file stays, to be
		// committed as their edit. git's index still must follow the
		// commit, or a person's next `git commit` would revert it: it gets
		// the commit's blob with a stat that matches no file, so git
		// compares the content and sees the edit.
		w.edits.add([]string{f.Path}, false)
		entry := &gitver.IndexEntry{Path: f.Path}
		if !f.New.IsZero() {
			entry.Blob, entry.Info = f.New, staleInfo{}
		}
		return entry, nil
	}
	entry := &gitver.IndexEntry{Path: f.Path}
	if !f.New.IsZero() {
		fi, err := w.root.Lstat(f.Path)
		if err != nil {
			return nil, fmt.Errorf("finish %s: %w", f.Path, err)
		}
		entry.Blob, entry.Info = f.New, fi
	}
	return entry, nil
}

func (w *Workspace) dropTemps(j *journal) {
	blobs := map[string][]gitver.Hash{}
	for _, f := range j.Files {
		blobs[f.Path] = []gitver.Hash{f.Old, f.New} // New last: see removeTemps
	}
	seen := map[string]bool{}
	for _, f := range j.Files {
		dir := path.Dir(f.Path)
		if !seen[dir] {
			seen[dir] = true
			w.files.RemoveTemps(dir, blobs)
		}
	}
}

// crashPoint, when set (only by the crash tests), is called as a write passes
// each step; the tests kill the process there to prove every step recoverable.
var crashPoint func(step string)

func reach(step string) {
	if crashPoint != nil {
		crashPoint(step)
	}
}
