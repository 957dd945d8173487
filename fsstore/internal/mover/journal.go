package mover

import (
	"fmt"
	"path"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/journal"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Recover finishes or drops the write a killed process left in the
// journal, whichever process comes next: before the branch moves again
// (Move), and before anyone compares the work tree (the engine's repairs).
// The caller holds the write lock.
//
// It reads the journal once a hold: no other process writes one while this
// one holds the lock, and this process's own moves clear theirs, unless
// one failed past its commit point (journal.File.Written).
func (m *Mover) Recover() error {
	if err := m.stillOpen(); err != nil {
		return err
	}
	if m.recovered() {
		return nil
	}
	if err := m.finishInterrupted(); err != nil {
		return fmt.Errorf("finish an interrupted write: %w", err)
	}
	m.recoveredIn = m.holds()
	return nil
}

// recovered says that Recover left no journal to finish in this hold of
// the write lock, and no move of this process has written one since.
func (m *Mover) recovered() bool {
	return m.recoveredIn != 0 && m.recoveredIn == m.holds() && !m.journal.Written()
}

// finishInterrupted is recover, unworded.
func (m *Mover) finishInterrupted() error {
	j, torn, err := m.journal.Read()
	if err != nil {
		return err
	}
	if torn {
		// Torn while being written: the writer died before the commit point.
		return m.journal.Clear()
	}
	if j == nil {
		return nil
	}
	newHash := j.New
	if newHash.IsZero() {
		return m.journal.Clear()
	}
	if _, err := m.git.RemoveStaleLock(newHash); err != nil {
		return err
	}
	// File times come from a coarse kernel clock that may lag the journal's
	// time by a tick: allow a second.
	if _, err := m.git.RemoveStaleIndexLock(j.Time.Add(-time.Second)); err != nil {
		return err
	}
	head, err := m.git.Head()
	if err != nil {
		return err
	}
	if head != newHash {
		// The commit point was not reached (or a person has since moved the
		// branch past it, and their commit is the truth now).
		m.dropTemps(j)
		return m.journal.Clear()
	}
	if j.BranchOnly {
		return m.journal.Clear()
	}
	return m.finishJournal(j)
}

// finishJournal does what is left of j once the branch holds j.New: the
// files in place (a person's change to one since stays), git's index
// entries, the temporary files gone, the journal cleared.
func (m *Mover) finishJournal(j *journal.Journal) error {
	gitIndex, err := m.git.LockIndex()
	if err != nil {
		return err
	}
	defer gitIndex.Release()
	return m.finishJournalHolding(j, gitIndex)
}

// finishJournalHolding is finishJournal for a caller that holds git's
// index lock, which it releases: no git command writes files meanwhile.
func (m *Mover) finishJournalHolding(j *journal.Journal, gitIndex *gitver.IndexLock) error {
	var entries []gitver.IndexEntry
	for _, f := range j.Files {
		entry, err := m.finishFile(f, j.OnDisk)
		if err != nil {
			return err
		}
		if entry != nil {
			entries = append(entries, *entry)
		}
	}
	m.dropTemps(j)
	if err := gitIndex.Write(entries); err != nil {
		return err
	}
	return m.journal.Clear()
}

// finishFile puts one file of an interrupted write in place, unless a person
// changed it since (then their content stays, to be committed as their edit).
// It returns the git index entry to record, or nil.
func (m *Mover) finishFile(f journal.Change, onDisk bool) (*gitver.IndexEntry, error) {
	content, _, exists, err := m.files.ReadFile(f.Path)
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
			if err := m.files.Remove(f.Path); err != nil {
				return nil, err
			}
			break
		}
		blob, err := m.git.ReadBlob(f.New)
		if err != nil {
			return nil, err
		}
		if err := m.files.WriteAtomic(f.Path, blob); err != nil {
			return nil, err
		}
	default:
		// A person's edit made after the crash: their file stays, to be
		// committed as their edit. git's index still must follow the
		// commit, or a person's next `git commit` would revert it: it gets
		// the commit's blob with a stat that matches no file, so git
		// compares the content and sees the edit.
		m.edited([]string{f.Path})
		entry := &gitver.IndexEntry{Path: f.Path}
		if !f.New.IsZero() {
			entry.Blob, entry.Info = f.New, worktree.StaleInfo{}
		}
		return entry, nil
	}
	entry := &gitver.IndexEntry{Path: f.Path}
	if !f.New.IsZero() {
		fi, err := m.root.Lstat(f.Path)
		if err != nil {
			return nil, fmt.Errorf("finish %s: %w", f.Path, err)
		}
		entry.Blob, entry.Info = f.New, fi
	}
	return entry, nil
}

func (m *Mover) dropTemps(j *journal.Journal) {
	blobs := map[string][]gitver.Hash{}
	for _, f := range j.Files {
		blobs[f.Path] = []gitver.Hash{f.Old, f.New} // New last: see removeTemps
	}
	seen := map[string]bool{}
	for _, f := range j.Files {
		dir := path.Dir(f.Path)
		if !seen[dir] {
			seen[dir] = true
			m.files.RemoveTemps(dir, blobs)
		}
	}
}
