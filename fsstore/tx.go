package fsstore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// writeTx is one tool write being built: the unit of work that travels
// down the write path as an argument, from the caller's build function
// (updateLocked, linkLocked) to the commit it makes. Every tool write is
// built the same way, alone or in a group: on base, the branch or the tip
// of the pending writes of this clone, checked against the note's version
// there (noteIn), and made one commit on top (commit). Whether that commit
// is then moved onto the branch at once (a write that came alone) or
// published with the others (a group) is the queue's to decide
// (queue.go); the build is the same.
type writeTx struct {
	head gitver.Hash // the branch when the write began
	base gitver.Hash // what the write builds on: head, or the pending writes' tip
	tip  gitver.Hash // base, then the write's own commit once built
	// commit is the write's commit once built: its objects are staged in
	// memory (gitver.Repo.Stage), readable until the group writes them.
	commit *gitver.PendingCommit
	// changes are the files the commit changed, as gitver.Repo.Changes
	// lists them, so that nothing need diff its trees again.
	changes []gitver.PathChange
	// stageOnly keeps the objects in memory alone (written later, as one
	// pack with the group's, or loose by a write that commits alone);
	// false writes them at once (a clone with a remote pushes them).
	stageOnly bool
}

// noteIn is the note at key as tx builds on it: the derived index's row at
// the branch, then each pending write that changed the note counted as a
// version, as every reader counts them once they are published. The index
// must be at tx.head: another process may have brought it to where the
// branch went since (a person's reset), and then the write starts over
// (errBranchMoved), or it would check its expect_version against one
// commit and build on another.
func (w *Workspace) noteIn(tx *writeTx, key string) (index.Note, error) {
	if tx.base == tx.head {
		return w.noteAtIndex(key, tx.head)
	}
	return w.pendingNote(key, tx)
}

// commit builds the write's commit of changes on tx's base, and makes it
// the tip; committed is false, and nothing is built, when base holds every
// file as changes would leave it. A note's version counts the commits
// whose content at its files differs from a parent's (gitver.Repo.Changes),
// so a write that changes nothing is no version: it must make no commit,
// or it would be acknowledged at a version that no reader of git counts.
func (w *Workspace) commit(tx *writeTx, changes []fileChange, author gitver.Signature, message string) (committed bool, err error) {
	if tx.tip != tx.base {
		return false, fmt.Errorf("a write makes one commit; this one made %s already", tx.tip.Short())
	}
	var real []fileChange
	var diff []gitver.PathChange
	for _, c := range changes {
		was, err := w.repo.PathBlob(tx.base, c.path)
		if err != nil {
			return false, err
		}
		now := gitver.ZeroHash
		if !c.deleted {
			now = gitver.BlobHash(c.content)
		}
		if was != now {
			real = append(real, c)
			diff = append(diff, gitver.PathChange{Path: c.path, Old: was, New: now})
		}
	}
	if len(real) == 0 {
		return false, nil
	}
	if wt := w.repo.WorkTree(); wt.Operation != "" {
		return false, busyWithGit(wt)
	}
	pending, err := w.repo.BuildCommit(commitRequest(tx.base, real, author, message))
	if err != nil {
		return false, err
	}
	w.repo.Stage(pending)
	if !tx.stageOnly {
		if err := pending.Write(); err != nil {
			return false, err
		}
	}
	slices.SortFunc(diff, func(a, b gitver.PathChange) int { return strings.Compare(a.Path, b.Path) })
	tx.tip, tx.commit, tx.changes = pending.Hash, pending, diff
	return true, nil
}
