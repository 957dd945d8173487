// Package history answers the engine's questions about the board's git
// history: which commits lie between two, what changed, what a person's
// reset took from the branch, what a checkout may have written. It reads
// git and its reflogs, and changes nothing.
package history

import (
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Git is what the history needs of the board's repository.
type Git interface {
	Branch() string
	ReadCommit(h gitver.Hash) (*gitver.CommitInfo, error)
	DiffTrees(a, b gitver.Hash) ([]gitver.PathChange, error)
	Changes(c *gitver.CommitInfo) ([]gitver.PathChange, error)
	PathBlob(commit gitver.Hash, path string) (gitver.Hash, error)
	LastMoveBy(own string) (last gitver.ReflogEntry, found bool, err error)
	RecentBranchMoves() ([]gitver.ReflogEntry, error)
	RecentHeadMoves() ([]gitver.ReflogEntry, error)
	Refs(prefix string) (map[string]gitver.Hash, error)
}

// History is the board's history, as git holds it.
type History struct{ git Git }

// New is the history of git's repository.
func New(git Git) *History { return &History{git: git} }

// OwnMove starts the reflog message of every move of the branch the
// program makes.
const OwnMove = "blackboard: "

// RescuePrefix names the refs that keep commits a person's rewind dropped
// from the board's branch.
const RescuePrefix = "refs/blackboard/rescued/"

// MaxDropped bounds the walks from the program's last commit back to where
// a reset went, and from the branch back to that commit.
const MaxDropped = 10000

// CommitsUntil lists the commits on the first-parent history of from that
// come after stop, newest first. found is false when stop is not on that
// history within limit commits.
func (h *History) CommitsUntil(from, stop gitver.Hash, limit int) (chain []*gitver.CommitInfo, found bool, err error) {
	for at := from; at != stop; {
		if at.IsZero() || len(chain) == limit {
			return chain, false, nil
		}
		c, err := h.git.ReadCommit(at)
		if err != nil {
			return chain, false, err
		}
		chain = append(chain, c)
		at = c.FirstParent()
	}
	return chain, true, nil
}

// ChangedSince lists the files whose content differs between a commit and
// a later one.
func (h *History) ChangedSince(from, to gitver.Hash) ([]gitver.PathChange, error) {
	older, err := h.git.ReadCommit(from)
	if err != nil {
		return nil, err
	}
	newer, err := h.git.ReadCommit(to)
	if err != nil {
		return nil, err
	}
	return h.git.DiffTrees(older.Tree, newer.Tree)
}

// ResetDrop is what a person's reset took from the branch: the program's
// commits after the branch as the reset left it, up to ours, the program's
// last move.
type ResetDrop struct {
	Ours          gitver.Hash
	Moves         []gitver.ReflogEntry // the branch's recent moves, oldest first
	Resets, Races int                  // the resets that moved away from Ours; Races: those "to HEAD"
	Rewind        gitver.ReflogEntry   // the last reset that was not a race
	Dropped       int                  // the program's commits dropped
	Behind        bool                 // the branch is on Ours' history
}

// DroppedByAReset is what a person's reset dropped from the branch at
// head, nil for nothing: head holds the program's last commit, or no reset
// moved away from it (a rebase or a pull rewrote it, and has its content),
// or it dropped none of the program's commits. The one decision both
// bringBackDropped and the mover's check (buildsOnADrop) take.
func (h *History) DroppedByAReset(head gitver.Hash) (*ResetDrop, error) {
	own, found, err := h.git.LastMoveBy(OwnMove)
	if err != nil || !found || head == own.New {
		return nil, err
	}
	d := &ResetDrop{Ours: own.New}
	if held, err := h.Reaches(head, d.Ours); err != nil || held {
		return nil, err // commits, merges and pulls on top keep the program's commit
	}
	// The branch no longer holds the program's last commit. The moves that
	// left it say how. git and this program both log a move while they
	// hold the branch's lock, so the reflog has them in order; all of those
	// that moved away from the program's commit are read.
	if d.Moves, err = h.git.RecentBranchMoves(); err != nil {
		return nil, err
	}
	for _, m := range d.Moves {
		if m.Old == d.Ours && !strings.HasPrefix(m.Message, OwnMove) {
			switch {
			case m.Message == "reset: moving to HEAD":
				d.Resets++
				d.Races++
			case strings.HasPrefix(m.Message, "reset: moving to "):
				d.Resets++
				d.Rewind = m
			}
		}
	}
	if d.Resets == 0 {
		return nil, nil
	}
	if d.Dropped, d.Behind, err = h.DroppedProgramCommits(d.Ours, head); err != nil || d.Dropped == 0 {
		return nil, err
	}
	return d, nil
}

// Reaches reports whether target is on the first-parent history of from,
// within MaxDropped commits.
func (h *History) Reaches(from, target gitver.Hash) (bool, error) {
	_, found, err := h.CommitsUntil(from, target, MaxDropped)
	return found, err
}

// DroppedProgramCommits counts the program's commits on the first-parent
// history of from that are not on to's: those a move from from to to
// dropped. onChain is false when to is not an ancestor of from within
// MaxDropped commits (the branch went elsewhere).
func (h *History) DroppedProgramCommits(from, to gitver.Hash) (n int, onChain bool, err error) {
	chain, onChain, err := h.CommitsUntil(from, to, MaxDropped)
	for _, c := range chain {
		if note.ByProgram(c.Message) {
			n++
		}
	}
	return n, onChain, err
}

// BuildsOnADrop reports whether moving the branch from `from` to `to`
// would build on what a person's reset left, while the program's commits
// it dropped are neither brought back nor kept (bringBackDropped): a write
// built there would be checked against the version the reset dropped, and
// given that number again. The reset's move is in the reflog once the
// branch it left is read, so the mover asks at the commit point, and the
// move waits for the repairs. A move of fresh commits (branchMove.fresh)
// never brings the dropped ones back: made on from, they reach the
// program's last commit only by being it again, a write that read the
// reset's version and was acknowledged at that number once already.
func (h *History) BuildsOnADrop(from, to gitver.Hash, fresh bool) (bool, error) {
	d, err := h.DroppedByAReset(from)
	if err != nil || d == nil {
		return false, err
	}
	if !fresh {
		if d.Ours == to {
			return false, nil // the repairs' own move
		}
		if back, err := h.Reaches(to, d.Ours); err != nil || back {
			return false, err // the move brings them back
		}
	}
	kept, err := h.git.Refs(RescuePrefix)
	if err != nil {
		return false, err
	}
	_, isKept := kept[RescuePrefix+d.Ours.String()]
	return !isKept, nil
}

// VersionsOf returns, for each changed path, every blob it had in the
// commits of chain (zero: no file). The work tree can hold any of them: the
// last write before a checkout moved HEAD put its files in place, and later
// ones only moved the branch.
func (h *History) VersionsOf(chain []*gitver.CommitInfo, changes []gitver.PathChange) (map[string][]gitver.Hash, error) {
	versions := make(map[string][]gitver.Hash, len(changes))
	for _, ch := range changes {
		versions[ch.Path] = nil
	}
	for _, c := range chain {
		diff, err := h.git.Changes(c)
		if err != nil {
			return nil, err
		}
		for _, d := range diff {
			if vs, ok := versions[d.Path]; ok && !slices.Contains(vs, d.New) {
				versions[d.Path] = append(vs, d.New)
			}
		}
	}
	return versions, nil
}

// A person's `git checkout main` (or `git switch main`, even when main is
// already checked out) reads the branch when it starts and writes that
// commit's files once it holds git's index lock; it logs the checkout in
// HEAD's reflog after. A write that lands in between is on the branch with
// its file in place, and the checkout then writes the older file over it.
// Taken for a person's edit, that file would revert the write; carried onto
// a new branch by `git checkout -b`, it makes git refuse to check the board's
// branch out again.
//
// Such a file holds a version the branch had while the checkout ran, and
// was written before the checkout's line in HEAD's reflog. A person's
// commands run one after another, so the checkout began after the line of
// the command before it: the versions the branch had between those two
// lines are what it may have written, and a file holding one of them,
// written in that time, is put right instead of committed. A person who
// brings an older version back on purpose does so after their checkout, and
// their file stays theirs.

const (
	// maxCheckoutsLooked bounds how many of the person's recent checkouts
	// of the branch are looked at: a file a checkout wrote stays through
	// the person's further trips to other branches and back.
	maxCheckoutsLooked = 16
	// maxCheckoutSpan bounds the branch's commits one checkout may have
	// read: those made while it ran.
	maxCheckoutSpan = 64
)

// checkoutRun is one checkout of the board's branch, from HEAD's reflog.
type checkoutRun struct {
	// from and until bound when the checkout wrote files: the line of the
	// person's command before it, and its own line plus a second (a reflog
	// keeps whole seconds).
	from, until time.Time
	// commits are those the branch had while it ran, newest first.
	commits []gitver.Hash
}

// checkoutRuns finds the person's recent checkouts of the board's branch,
// newest first, back to their last command that was not a checkout (a
// commit, a reset: from then on the files were theirs to commit).
func (h *History) checkoutRuns() ([]checkoutRun, error) {
	moves, err := h.git.RecentHeadMoves()
	if err != nil {
		return nil, err
	}
	onto := " to " + strings.TrimPrefix(h.git.Branch(), "refs/heads/")
	person := func(m gitver.ReflogEntry) bool { return !strings.HasPrefix(m.Message, OwnMove) }
	var runs []checkoutRun
	for i := len(moves) - 1; i >= 0 && len(runs) < maxCheckoutsLooked; i-- {
		m := moves[i]
		switch {
		case !person(m):
			continue
		case !strings.HasPrefix(m.Message, "checkout: moving from "):
			return runs, nil
		case !strings.HasSuffix(m.Message, onto):
			continue // to another branch: its files are the other branch's
		}
		run := checkoutRun{until: m.Who.When.Add(time.Second)}
		var before gitver.Hash
		for j := i - 1; j >= 0; j-- {
			if person(moves[j]) {
				run.from, before = moves[j].Who.When, moves[j].New
				break
			}
		}
		chain, found, err := h.CommitsUntil(m.New, before, maxCheckoutSpan)
		if err != nil {
			return nil, err
		}
		for _, c := range chain {
			run.commits = append(run.commits, c.Hash)
		}
		if found && !before.IsZero() {
			run.commits = append(run.commits, before)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// Leftovers answers, for files that differ from the branch, whether
// a checkout of the branch wrote them with an older version (see above).
// HEAD's reflog is read once, at the first question.
type Leftovers struct {
	h      *History
	runs   []checkoutRun
	loaded bool
}

// Holds reports whether the file at p, holding blob and last written at
// mtime, is a version of the branch's that a checkout wrote over a newer
// one.
func (l *Leftovers) Holds(p string, blob gitver.Hash, mtime time.Time) (bool, error) {
	if !l.loaded {
		runs, err := l.h.checkoutRuns()
		if err != nil {
			return false, err
		}
		l.runs, l.loaded = runs, true
	}
	for _, run := range l.runs {
		if mtime.Before(run.from) || !mtime.Before(run.until) {
			continue
		}
		for _, c := range run.commits {
			had, err := l.h.git.PathBlob(c, p)
			if err != nil {
				return false, err
			}
			if had == blob {
				return true, nil
			}
		}
	}
	return false, nil
}

// Leftovers answers, for files that differ from the branch, whether a
// checkout of the branch wrote them with an older version.
func (h *History) Leftovers() *Leftovers { return &Leftovers{h: h} }
