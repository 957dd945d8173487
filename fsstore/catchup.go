package fsstore

import (
	"errors"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// readAsFar is readAtHead for a listing or a search: while the index is
// being built, they answer from it as far as it has come, at its cursor,
// and v.Indexing says how far that is.
func (v *View) readAsFar(fn func(s *index.Snapshot) error) (cursor int, err error) {
	w := v.w
	cursor, err = w.reader.readAtHead(fn)
	if !v.answersPartly(err) {
		return cursor, err
	}
	err = w.idx.Read(func(s *index.Snapshot) error {
		if _, cursor, err = s.Head(); err != nil {
			return err
		}
		return fn(s)
	})
	return cursor, err
}

// answersPartly reports whether err says the index is being built, and
// then records how far it has come, for Indexing.
func (v *View) answersPartly(err error) bool {
	var b *catchup.Building
	if !errors.As(err, &b) {
		return false
	}
	v.partial = &b.Status
	return true
}

// Indexing says how far the build of the derived index had come when a
// read of this view answered while it ran: a listing or a search from the
// index as far as it had come, a named note from git.
// It is "" when every read of the view answered from the whole index.
func (v *View) Indexing() string {
	if v.partial == nil {
		return ""
	}
	return v.partial.String()
}

// versionsFromGitFor bounds the time one read spends counting versions
// from git while the index is being built: each note costs a look at every
// commit the index does not hold yet (0.3 s for ten thousand on a 2-core
// machine), and a read answers within a second however many it names.
const versionsFromGitFor = 400 * time.Millisecond

// noteFromGit is the note at key as the branch holds it in git, for a read
// while the index is being built: with its version counted from git
// (catchup.NoteFromGit) while the view's time for that lasts and the index
// is near enough the branch, else without it (0).
func (v *View) noteFromGit(key string) (index.Note, error) {
	head, err := v.w.repo.Head()
	if err != nil {
		return index.Note{}, err
	}
	if v.fromGitUntil.IsZero() {
		v.fromGitUntil = time.Now().Add(versionsFromGitFor)
	}
	if time.Now().Before(v.fromGitUntil) {
		n, err := v.w.catch.NoteFromGit(head, key, catchup.FromGitCommits)
		var building *catchup.Building
		if !errors.As(err, &building) {
			return n, err
		}
	}
	return v.w.catch.NoteAt(head, key)
}

// ErrBranchGone means the board's branch does not exist any more, although
// the board has history (a person deleted it): nothing is read or written
// until it is restored, so that no write starts a new history beside the
// old. It comes as the cause of an ErrConflict: the caller may try again
// once a person has restored the branch.
var ErrBranchGone = errors.New("the board's branch is gone")

func (w *Workspace) branchGone(last gitver.Hash) error {
	branch := strings.TrimPrefix(w.repo.Branch(), "refs/heads/")
	return errorf("read", "", ErrConflict, "the board's branch %s does not exist (deleted?); its last commit the board knows is %s; "+
		"nothing is read or written until a person restores it: git branch %s %s", branch, last.Short(), branch, last).Because(ErrBranchGone)
}

// Progress reports a long rebuild: stage is "history", "commits", "notes"
// or "vectors" (total 0: unknown).
type Progress = catchup.Progress
