package fsstore

import (
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// commitLocked makes one commit of changes the program did not build as a
// tool write: a person's edits found in the work tree (onDisk: their files
// are in place already), the board's first commit, the access file. Tool
// writes are built in a writeTx (tx.go) and reach the branch through
// moveBranch (move.go). It brings every copy in step, in the order that
// makes a crash at any point recoverable:
//
//  1. the journal (intent) names the commit, built in memory; then blobs,
//     trees and the commit object, the journal, and the new files (under
//     temporary names beside their targets) are written and synced together;
//  2. git's index lock is taken, so no `git commit` can take the index
//     while the branch moves (see gitver.IndexLock);
//  3. the branch moves from parent to the commit: the commit point;
//  4. the files are swapped into place (unless onDisk: a person's edit
//     already is) and their directories synced;
//  5. git's index file is written and unlocked, the derived index updated;
//  6. the journal is cleared.
//
// While a person has another branch checked out, the commit goes to the
// branch only: the files and git's index are that checkout's, and git puts
// its files in place when the person checks the branch out again. While a
// person is in the middle of a merge or a rebase, only their own edits are
// committed.
//
// The caller holds the write lock. It returns errBranchMoved when the branch
// was not at parent, or the work tree changed hands meanwhile; nothing then
// changed.
func (w *Workspace) commitLocked(parent gitver.Hash, changes []fileChange, author gitver.Signature,
	message string, onDisk bool) (commit gitver.Hash, err error) {
	committed := false // the branch holds the commit: the write happened
	defer func() {
		if committed && err != nil {
			err = &unfinishedError{commit: commit, err: err}
		}
	}()
	// A reset may have dropped the program's commits from the branch since
	// the repairs ran, before parent was read: put that right first, or
	// this commit would give a version they had to other content.
	if err := w.bringBackDropped(); err != nil {
		return gitver.ZeroHash, err
	}
	if head, err := w.repo.Head(); err != nil || head != parent {
		if err != nil {
			return gitver.ZeroHash, err
		}
		return gitver.ZeroHash, errBranchMoved
	}
	wt := w.repo.WorkTree()
	if !onDisk && wt.Operation != "" {
		return gitver.ZeroHash, busyWithGit(wt)
	}
	if why := wt.Busy(); onDisk && why != "" {
		// A person's edits are the branch's only while the files are: a
		// checkout since the comparison makes them another's.
		return gitver.ZeroHash, fmt.Errorf("%w: %s", ErrWorkTreeBusy, why)
	}
	branchOnly := !onDisk && wt.Elsewhere != ""
	j := &journal{Old: parent, Time: author.When, OnDisk: onDisk, BranchOnly: branchOnly}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.path
	}
	olds, err := w.committedBlobs(paths)
	if err != nil {
		return gitver.ZeroHash, err
	}
	req := commitRequest(parent, changes, author, message)
	blobs := req.Changes
	for i, c := range changes {
		j.Files = append(j.Files, journalFile{Path: c.path, Old: olds[i], New: blobs[c.path]})
	}
	pending, err := w.repo.BuildCommit(req)
	if err != nil {
		return gitver.ZeroHash, err
	}
	commit = pending.Hash
	j.New = commit
	// The journal is written first (a killed writer's temporary files are
	// found through it), then the objects, the journal and the new files are
	// made durable together: concurrent fsyncs share the file system's
	// journal commits. The new files go beside their targets under temporary
	// names, so that after the commit point only renames remain and the
	// window in which the branch is ahead of the files and of git's index
	// stays tiny.
	if err := w.writeJournal(j); err != nil {
		return gitver.ZeroHash, err
	}
	reach("journal")
	staged := map[string]stagedFile{}
	var stagedMu sync.Mutex
	defer func() {
		for _, f := range staged {
			w.root.Remove(f.tmp)
		}
	}()
	stage := func(g *errgroup.Group) {
		if onDisk || branchOnly {
			return
		}
		for _, c := range changes {
			if c.deleted {
				continue
			}
			g.Go(func() error {
				tmp, fi, err := w.stageFile(c.path, c.content)
				if err == nil {
					stagedMu.Lock()
					staged[c.path] = stagedFile{tmp, fi}
					stagedMu.Unlock()
				}
				return err
			})
		}
	}
	var durable errgroup.Group
	durable.Go(pending.Write)
	durable.Go(w.syncJournal)
	if w.remote == "" {
		stage(&durable)
	}
	if err := durable.Wait(); err != nil {
		return gitver.ZeroHash, errors.Join(err, w.clearJournal())
	}
	reach("objects")
	pushed := false
	if w.remote != "" {
		// The remote is where the write counts: the local branch moves
		// only once it took the commit, and from then on the write stands,
		// whatever happens here. The files are staged after: a push the
		// remote refuses brings the remote's files first.
		if err := w.publish(commit); err != nil {
			return gitver.ZeroHash, errors.Join(err, w.clearJournal())
		}
		pushed, committed = true, true
		reach("pushed")
		var files errgroup.Group
		stage(&files)
		if err := files.Wait(); err != nil {
			return commit, errors.Join(err, w.clearJournal())
		}
	}
	var gitIndex *gitver.IndexLock
	if !branchOnly {
		if gitIndex, err = w.repo.LockIndex(); err != nil {
			return gitver.ZeroHash, errors.Join(err, w.clearJournal())
		}
		defer gitIndex.Release()
		// Holding git's index, look again: a checkout that began since
		// has finished writing its files by now.
		// And a checkout of the branch that ended since the repairs ran
		// may have left files older than the branch's, to be put right
		// before anything is compared or placed (see unplaced.go).
		if now := w.repo.WorkTree(); now.Operation != wt.Operation || now.Elsewhere != wt.Elsewhere || w.hasUnplaced() {
			gitIndex.Release()
			if !pushed {
				return gitver.ZeroHash, errors.Join(errBranchMoved, w.clearJournal())
			}
			// The remote took the write: it stands, and the branch moves
			// alone; its files come as those of any write made while the
			// work tree is not the branch's.
			gitIndex, branchOnly, j.BranchOnly = nil, true, true
			if err := w.writeJournal(j); err != nil {
				return commit, err
			}
			if err := w.syncJournal(); err != nil {
				return commit, err
			}
		}
		// A person's edits were read from the work tree while a git
		// command was writing it: a `git reset --hard` that read the
		// branch before an agent's write writes older files, and moves the
		// branch only after it lets the index go. Let it finish, and
		// compare again: its move shows in the reflog then, and the
		// repairs put the agent's write back instead of taking the older
		// files for an edit.
		if onDisk && gitIndex != nil && gitIndex.Waited && !pushed {
			gitIndex.Release()
			time.Sleep(settleBeforeEdits)
			return gitver.ZeroHash, errors.Join(errBranchMoved, w.clearJournal())
		}
	}
	if branchOnly {
		// The work tree keeps the parent's files; when the branch is
		// checked out again, git may write those (see unplaced.go).
		older := make(map[string]gitver.Hash, len(changes))
		for i, c := range changes {
			older[c.path] = olds[i]
		}
		if err := w.recordUnplaced(older); err != nil {
			if pushed {
				return commit, errors.Join(err, w.clearJournal())
			}
			return gitver.ZeroHash, errors.Join(err, w.clearJournal())
		}
	}
	if err := w.repo.UpdateBranch(parent, commit, author, ownMove+subject(message)); errors.Is(err, gitver.ErrMovedUnsynced) {
		// The branch holds the write. The journal stays: the next hold of
		// the write lock finishes the files from it.
		committed = true
		return commit, err
	} else if err != nil {
		if gitIndex != nil {
			gitIndex.Release()
		}
		if cerr := w.clearJournal(); cerr != nil {
			return gitver.ZeroHash, cerr
		}
		if pushed && errors.Is(err, gitver.ErrBranchMoved) {
			// A person's commit moved the local branch since: the remote
			// holds the write, and the next fetch rebuilds their commit on
			// it (remote.go).
			return commit, nil
		}
		if errors.Is(err, gitver.ErrBranchMoved) {
			return gitver.ZeroHash, errBranchMoved
		}
		return gitver.ZeroHash, err
	}
	// Past the commit point: the write is in git. A failure from here on
	// is an unfinishedError, and recover() finishes the work on the next
	// write.
	committed = true
	reach("branch")
	// The commit's changes, as gitver.Repo.Changes would list them: a file
	// the commit left as its parent had it is no change, and counts no
	// version.
	hint := map[gitver.Hash][]gitver.PathChange{commit: nil}
	for _, jf := range j.Files {
		if jf.Old != jf.New {
			hint[commit] = append(hint[commit], gitver.PathChange{Path: jf.Path, Old: jf.Old, New: jf.New})
		}
	}
	if branchOnly {
		if _, _, err := w.catchUp(hint, nil); err != nil {
			return commit, err
		}
		return commit, w.clearJournal()
	}
	entries := make([]gitver.IndexEntry, 0, len(changes))
	stats := make(map[string]index.DiskStat, len(changes))
	dirs := map[string]bool{}
	for i, c := range changes {
		e := gitver.IndexEntry{Path: c.path}
		dirs[path.Dir(c.path)] = true
		if onDisk {
			// A person's edit: the file is already there, and its stat
			// was taken before it was read.
			if !c.deleted {
				e.Blob, e.Info = blobs[c.path], c.info
				if st := statOf(c.info); trustworthy(st) {
					stats[c.path] = st
				}
			}
			entries = append(entries, e)
			continue
		}
		var placed bool
		var err error
		sf := staged[c.path]
		if c.deleted {
			placed, err = w.removeIf(c.path, olds[i])
		} else {
			placed, err = w.placeFile(sf.tmp, c.path, olds[i], blobs[c.path])
			delete(staged, c.path)
		}
		if err != nil {
			return commit, err
		}
		switch {
		case !placed:
			// A person changed the file since it was compared: their file
			// stays, to be committed as their edit next. git's index gets
			// the commit's blob with a stat that matches no file, so git
			// compares the content and sees the difference (a deleted path
			// leaves the index, and their file is untracked).
			if !c.deleted {
				e.Blob, e.Info = blobs[c.path], staleInfo{}
			}
			w.edits.add([]string{c.path}, false)
		case !c.deleted:
			// The staged file's own stat: a rename keeps its inode, size
			// and time, and a save that replaced it since does not match.
			e.Blob, e.Info = blobs[c.path], sf.info
			if st := statOf(sf.info); trustworthy(st) {
				stats[c.path] = st
			}
		}
		entries = append(entries, e)
	}
	reach("files")
	if !onDisk && w.repo.WorkTree().Elsewhere != "" {
		// `git checkout -b` moves HEAD after it lets git's index lock go:
		// it did so during this write, and the work tree is now that
		// checkout's, of a commit behind this one. The board's files go
		// back out of it, to be put in place when the branch is checked
		// out again.
		back, _, err := w.takeBack(commit)
		if err != nil {
			return commit, err
		}
		entries = replaceEntries(entries, back)
		stats = nil
	}
	if err := gitIndex.Write(entries); err != nil {
		return commit, err
	}
	if !onDisk {
		for d := range dirs {
			if err := w.syncDir(d); err != nil {
				return commit, err
			}
		}
	}
	reach("gitindex")
	if _, _, err := w.catchUp(hint, func(tx *index.Tx) error {
		for p, st := range stats {
			st.Blob = blobs[p]
			if err := tx.SetDisk(p, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return commit, err
	}
	reach("index")
	if err := w.clearJournal(); err != nil {
		return commit, err
	}
	w.counted(1)
	return commit, nil
}

// committedBlobs returns the blobs paths hold at the indexed head (zero for
// none), read at one point of history.
func (w *Workspace) committedBlobs(paths []string) ([]gitver.Hash, error) {
	out := make([]gitver.Hash, len(paths))
	err := w.idx.Read(func(snap *index.Snapshot) error {
		for i, p := range paths {
			var err error
			if out[i], err = snap.FileBlob(p); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
