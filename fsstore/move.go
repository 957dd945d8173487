package fsstore

import (
	"errors"
	"fmt"
	"path"

	"golang.org/x/sync/errgroup"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// moveBranchWithFiles moves the local branch from one commit to another and
// puts the files that differ in place, through the journal, so that a crash
// midway is finished like any write; a file a person changed stays theirs.
// The new files are staged beside their targets first, synced in one round
// with the journal and with alongside (what else must be durable before the
// branch names it; nil for nothing), so that after the branch moves only
// renames remain. moved is false when the branch was no longer at from.
func (w *Workspace) moveBranchWithFiles(from, to gitver.Hash, reason string, alongside func() error) (moved bool, err error) {
	a, err := w.repo.ReadCommit(from)
	if err != nil {
		return false, err
	}
	b, err := w.repo.ReadCommit(to)
	if err != nil {
		return false, err
	}
	changes, err := w.repo.DiffTrees(a.Tree, b.Tree)
	if err != nil {
		return false, err
	}
	who := w.agentSignature(note.InitAgent)
	j := &journal{Old: from, New: to, Time: who.When, BranchOnly: w.repo.WorkTree().Elsewhere != ""}
	for _, ch := range changes {
		j.Files = append(j.Files, journalFile{Path: ch.Path, Old: ch.Old, New: ch.New})
	}
	if err := w.writeJournal(j); err != nil {
		return false, err
	}
	staged := make([]stagedFile, len(j.Files))
	defer func() {
		for _, f := range staged {
			if f.tmp != "" {
				w.root.Remove(f.tmp)
			}
		}
	}()
	var durable errgroup.Group
	durable.SetLimit(stagingWorkers)
	durable.Go(w.syncJournal)
	if alongside != nil {
		durable.Go(alongside)
	}
	if !j.BranchOnly {
		for i, f := range j.Files {
			if f.New.IsZero() {
				continue
			}
			durable.Go(func() error {
				if w.holds(f.Path, f.New) {
					return nil // in place already
				}
				content, err := w.repo.ReadBlob(f.New)
				if err != nil {
					return err
				}
				staged[i].tmp, staged[i].info, err = w.stageFile(f.Path, content)
				return err
			})
		}
	}
	if err := durable.Wait(); err != nil {
		return false, errors.Join(err, w.clearJournal())
	}
	reach("move staged")
	// git's index lock is held from before the branch moves until the
	// files are in place: a git command that read the branch before the
	// move (a person's `git reset --hard`) cannot write its older files
	// over these meanwhile; it either finished before, or fails to take
	// the lock, or starts after and then moves the branch too, which the
	// reflog tells.
	var gitIndex *gitver.IndexLock
	if !j.BranchOnly {
		if gitIndex, err = w.repo.LockIndex(); err != nil {
			return false, errors.Join(err, w.clearJournal())
		}
		defer gitIndex.Release()
	} else {
		// As for a write made while another branch is checked out: git
		// may write the older files when the branch is checked out again.
		older := make(map[string]gitver.Hash, len(changes))
		for _, ch := range changes {
			older[ch.Path] = ch.Old
		}
		if err := w.recordUnplaced(older); err != nil {
			return false, errors.Join(err, w.clearJournal())
		}
	}
	if err := w.repo.UpdateBranch(from, to, who, reason); errors.Is(err, gitver.ErrMovedUnsynced) {
		return true, err // the journal stays: the next hold of the write lock finishes the files
	} else if err != nil {
		if cerr := w.clearJournal(); cerr != nil {
			return false, cerr
		}
		if errors.Is(err, gitver.ErrBranchMoved) {
			return false, nil // moved meanwhile: the next look decides
		}
		return false, err
	}
	reach("move branch")
	if j.BranchOnly {
		return true, w.clearJournal()
	}
	return true, w.placeStaged(j, staged, gitIndex)
}

// stagingWorkers bounds the files a branch move stages at once.
const stagingWorkers = 16

// placeStaged finishes a branch move once the branch holds j.New: each
// file staged for it renamed into place (or removed, for a deleted one)
// unless a person changed it since, which stays theirs; the directories
// synced in one round; git's index entries written; the journal cleared.
// The caller holds git's index lock.
func (w *Workspace) placeStaged(j *journal, staged []stagedFile, gitIndex *gitver.IndexLock) error {
	entries := make([]gitver.IndexEntry, 0, len(j.Files))
	dirs := map[string]bool{}
	for i, f := range j.Files {
		var placed bool
		var err error
		info := staged[i].info
		switch {
		case f.New.IsZero():
			placed, err = w.removeIf(f.Path, f.Old)
		case staged[i].tmp == "":
			// In place already when staging began.
			if placed = w.holds(f.Path, f.New); placed {
				info, err = w.root.Lstat(f.Path)
			}
		default:
			placed, err = w.placeFile(staged[i].tmp, f.Path, f.Old, f.New)
			staged[i].tmp = ""
		}
		if err != nil {
			return fmt.Errorf("finish %s: %w", f.Path, err)
		}
		dirs[path.Dir(f.Path)] = true
		e := gitver.IndexEntry{Path: f.Path}
		switch {
		case !placed:
			// A person's change since the move began: it stays, to be
			// committed as their edit; git's index gets the commit's blob
			// with a stat that matches no file, so git compares the
			// content and sees the difference.
			w.edits.add([]string{f.Path}, false)
			if !f.New.IsZero() {
				e.Blob, e.Info = f.New, staleInfo{}
			}
		case !f.New.IsZero():
			e.Blob, e.Info = f.New, info
		}
		entries = append(entries, e)
	}
	var synced errgroup.Group
	synced.SetLimit(stagingWorkers)
	for d := range dirs {
		synced.Go(func() error { return w.syncDir(d) })
	}
	if err := synced.Wait(); err != nil {
		return err
	}
	if err := gitIndex.Write(entries); err != nil {
		return err
	}
	return w.clearJournal()
}
