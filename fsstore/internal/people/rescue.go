package people

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A person's git command can drop agents' commits from the board's branch.
// `git reset --hard HEAD` and `git stash` resolve HEAD, write its files, and
// then move the branch there: a write that lands in between is dropped from
// the branch and its files reverted, though the person only meant to throw
// away their own uncommitted changes. A person can also rewind the branch on
// purpose (`git reset --hard HEAD~3`).
//
// Before every write and every commit of people's edits, under the write
// lock, the workspace reads the end of the branch's reflog: the program's
// own moves say "blackboard: ...". When the branch no longer holds the
// commit of its last one, and a reset moved the branch away from it:
//
//   - if every such reset was "to HEAD" (a race) and the branch is behind
//     the program's commit, on its history, the branch moves forward again, and the dropped writes' files go back in place
//     (a file the person changed since stays theirs, to be committed on
//     top), through the journal, so that a crash midway is finished like
//     any write;
//   - otherwise the rewind was meant: its content stands, as a commit on
//     top of the dropped commits that puts back the content the person
//     reset to, followed by the commits the person made since. The dropped
//     writes stay in history and versions keep rising: a version number is
//     never given twice to different content;
//   - a reset to a commit outside the branch's history (another branch) is
//     left as it is, and the dropped commits are kept under
//     refs/blackboard/rescued/<commit>, said in the log and by health until
//     the person deletes the ref.
//
// The reflog is what tells a reset from other moves: a person who means to
// take commits out of the board's history for good (a secret written by
// mistake) stops the servers, rewrites the branch and expires its reflog.

// maxDropped bounds the walks from the program's last commit back to where
// a reset went, and from the branch back to that commit.
const maxDropped = history.MaxDropped

// bringBackDropped restores or keeps what a reset dropped from the branch.
// The caller holds the write lock, and has finished any interrupted write.
func (p *People) bringBackDropped() error {
	head, err := p.repo.Head()
	if err != nil {
		return err
	}
	d, err := p.hist.DroppedByAReset(head)
	if err != nil || d == nil {
		return err
	}
	move := gitver.ReflogEntry{Old: d.Ours, New: head, Message: d.Moves[len(d.Moves)-1].Message}
	if d.Races == d.Resets {
		if d.Behind && p.repo.WorkTree().Operation == "" {
			return p.restoreBranch(move, d.Dropped)
		}
		return p.keepDropped(move, d.Dropped)
	}
	if done, err := p.undoOnTop(d.Ours, head, d.Rewind, d.Dropped); err != nil || done {
		return err
	}
	return p.keepDropped(move, d.Dropped)
}

// undoOnTop keeps a person's rewind of the branch to an older commit of its
// own history as a commit on top of what the rewind dropped: a commit that
// puts back the older content, and then the person's commits made on the
// rewound branch since, each with its tree, author and message unchanged.
// The branch ends with the same files the person has, so their work tree
// and git's index stay as they are; the dropped writes stay in history, and
// every note the rewind changed gets a new, higher version instead of a
// number its dropped commits had with other content. done is false when the
// rewind went somewhere this cannot describe (to a commit that is not in
// the dropped commits' history, or followed by more than a linear history
// of commits on top): that case is kept under a rescue ref.
func (p *People) undoOnTop(ours, head gitver.Hash, rewind gitver.ReflogEntry, dropped int) (done bool, err error) {
	if onOurs, err := p.hist.Reaches(ours, rewind.New); err != nil || !onOurs {
		return false, err
	}
	// The person's commits on the rewound branch, newest first.
	since, found, err := p.hist.CommitsUntil(head, rewind.New, maxDropped)
	if err != nil || !found {
		return false, err
	}
	if p.repo.WorkTree().Operation != "" {
		return true, nil // the person is in the middle of a merge or rebase: look again when it is over
	}
	to, err := p.repo.ReadCommit(rewind.New)
	if err != nil {
		return false, err
	}
	program := p.program()
	person := rewind.Who
	if person.Name == "" || person.When.IsZero() {
		person = p.PersonSignature()
	}
	branch := strings.TrimPrefix(p.repo.Branch(), "refs/heads/")
	what := strings.TrimPrefix(rewind.Message, "reset: moving to ")
	tip, err := p.repo.WriteCommit(gitver.CommitObject{
		Tree: to.Tree, Parents: []gitver.Hash{ours}, Author: person, Committer: program,
		Message: fmt.Sprintf("rewind %s to %s (%s)\n\n"+
			"A person reset %s to %s, past %d of the board's commits. This commit puts\n"+
			"the content back as the reset left it, on top of them: they stay in the\n"+
			"history, and no note's version number is given twice to different content.\n",
			branch, rewind.New.Short(), what, branch, rewind.New.Short(), dropped),
	})
	if err != nil {
		return false, err
	}
	for i := len(since) - 1; i >= 0; i-- {
		c := since[i]
		if tip, err = p.repo.WriteCommit(gitver.CommitObject{
			Tree: c.Tree, Parents: append([]gitver.Hash{tip}, c.Parents[1:]...),
			Author: c.Author, Committer: c.Committer, Message: c.Message,
		}); err != nil {
			return false, err
		}
	}
	reason := fmt.Sprintf(history.OwnMove+"keep `%s` as an undo on top of the %d commits it dropped", rewind.Message, dropped)
	if err := p.repo.UpdateBranch(head, tip, program, reason); err != nil {
		if errors.Is(err, gitver.ErrBranchMoved) {
			return true, nil // moved meanwhile: the next look decides
		}
		return false, err
	}
	p.logf("`%s` rewound %s past %d of the board's commits; the rewound content stands as a new commit on top of them "+
		"(%s), so the notes it changed get new versions; `git log %s` shows all of it", rewind.Message, branch, dropped,
		tip.Short(), branch)
	return true, nil
}

// restoreBranch moves the branch forward again to the commits a racing
// reset dropped, and puts their files back.
func (p *People) restoreBranch(move gitver.ReflogEntry, dropped int) error {
	reason := fmt.Sprintf(history.OwnMove+"bring back %d commits a reset to HEAD (git reset --hard HEAD, git stash) dropped", dropped)
	moved, err := p.mover.MoveWithFiles(move.New, move.Old, reason, nil)
	if err != nil {
		return err
	}
	if !moved {
		// The branch or the work tree moved meanwhile (the person's next
		// git command): nothing may be built on the branch as the reset
		// left it, or a write could be checked against the version the
		// reset dropped and counted again. The caller looks again.
		return fail.ErrBranchMoved
	}
	p.logf("a `git reset --hard HEAD` (or `git stash`) raced with writes and dropped %d of the board's commits from %s; "+
		"they are back (%s), with their files", dropped, strings.TrimPrefix(p.repo.Branch(), "refs/heads/"), move.Old.Short())
	return nil
}

// keepDropped keeps the commits a rewind dropped under a rescue ref, once.
func (p *People) keepDropped(move gitver.ReflogEntry, dropped int) error {
	name := history.RescuePrefix + move.Old.String()
	kept, err := p.repo.Refs(history.RescuePrefix)
	if err != nil {
		return err
	}
	if _, ok := kept[name]; ok {
		return nil
	}
	who := p.program()
	who.When = time.Now()
	if err := p.repo.UpdateRef(name, gitver.ZeroHash, move.Old, who, history.OwnMove+"keep what `"+move.Message+"` dropped"); err != nil {
		return err
	}
	p.logf("`%s` dropped %d of the board's commits from %s; they are kept under %s: `git log %s..%s` shows them, "+
		"`git merge %s` brings them back", move.Message, dropped, strings.TrimPrefix(p.repo.Branch(), "refs/heads/"),
		name, move.New.Short(), name, name)
	return nil
}
