package fsstore

import (
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

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
func (b *board) checkoutRuns() ([]checkoutRun, error) {
	moves, err := b.repo.RecentHeadMoves()
	if err != nil {
		return nil, err
	}
	onto := " to " + strings.TrimPrefix(b.repo.Branch(), "refs/heads/")
	person := func(m gitver.ReflogEntry) bool { return !strings.HasPrefix(m.Message, ownMove) }
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
		chain, found, err := b.commitsUntil(m.New, before, maxCheckoutSpan)
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

// checkoutLeftovers answers, for files that differ from the branch, whether
// a checkout of the branch wrote them with an older version (see above).
// HEAD's reflog is read once, at the first question.
type checkoutLeftovers struct {
	b      *board
	runs   []checkoutRun
	loaded bool
}

// holds reports whether the file at p, holding blob and last written at
// mtime, is a version of the branch's that a checkout wrote over a newer
// one.
func (l *checkoutLeftovers) holds(p string, blob gitver.Hash, mtime time.Time) (bool, error) {
	if !l.loaded {
		runs, err := l.b.checkoutRuns()
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
			had, err := l.b.repo.PathBlob(c, p)
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
