// Package follow brings the local branch to where writes count, the
// upstream (fsstore/internal/gitremote, fsstore/internal/localboard): the
// other clones' writes followed, files and all, the local commits the
// remote has not rebuilt on its and published, people's commits offered
// to it before the branch moves. It also runs the one loop that starts a
// write over while a person's git or another clone moves the branch
// (WhileBranchMoves, Race).
package follow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Git is what the follower needs of the board's repository: the branch,
// the commits it rebuilds on the remote's, and the rescue refs.
type Git interface {
	Branch() string
	Head() (gitver.Hash, error)
	ReadCommit(h gitver.Hash) (*gitver.CommitInfo, error)
	ReadBlob(h gitver.Hash) ([]byte, error)
	DiffTrees(a, b gitver.Hash) ([]gitver.PathChange, error)
	IsAncestor(a, b gitver.Hash) (bool, error)
	MergeBase(a, b gitver.Hash) (gitver.Hash, error)
	BuildCommit(req gitver.CommitRequest) (*gitver.PendingCommit, error)
	UpdateRef(name string, old, new gitver.Hash, who gitver.Signature, reason string) error
	RemoteURL(remote string) string
}

// Follower brings the local branch to what the upstream holds, the other
// clones' writes: forward, files and all, or, when the local branch holds
// commits the remote has not, with those rebuilt on the remote's and
// published. The pipeline follows after another clone published first,
// people when their commit lost that race, the server every few seconds.
type Follower struct {
	repo  Git
	hist  *history.History
	mover *mover.Mover
	up    Upstream
	// program signs the commits it builds (a merge, a rescue ref).
	program func() gitver.Signature
	logf    func(format string, args ...any)
}

// New is the follower of up on git's branch: hist answers questions about
// its history, mv moves it, program signs the commits it builds.
func New(git Git, hist *history.History, mv *mover.Mover, up Upstream,
	program func() gitver.Signature, logf func(format string, args ...any)) *Follower {
	return &Follower{repo: git, hist: hist, mover: mv, up: up, program: program, logf: logf}
}

// Up is where writes count.
func (f *Follower) Up() Upstream { return f.up }

// SetUp makes up where writes count (a remote attached). The caller holds
// the write lock, and no write is in flight.
func (f *Follower) SetUp(up Upstream) { f.up = up }

// Offer publishes commit, built on the local branch, before the branch
// moves to it (people's commits, commit.go). took says the upstream took
// it: it stands from now on, whatever happens here, and its objects are
// written. Another clone's publish that came first is fail.ErrRemoteMoved,
// with the local branch brought to it. The caller holds the write lock.
func (f *Follower) Offer(commit *gitver.PendingCommit) (took bool, err error) {
	if f.up.OnBranch() {
		return false, nil
	}
	if err := commit.Write(); err != nil {
		return false, err
	}
	err = f.up.Publish(commit.Hash)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, gitver.ErrRemoteMoved) {
		return false, f.Failure(err)
	}
	if err := f.up.Learn(context.Background()); err != nil {
		return false, f.Failure(err)
	}
	if err := f.Follow(); err != nil {
		return false, err
	}
	return false, fail.ErrRemoteMoved
}

// failure words a failed network operation for the writer.
func (f *Follower) Failure(err error) error {
	var re *gitver.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	url := gitver.Redact(f.repo.RemoteURL(f.up.Name()))
	switch {
	case errors.Is(err, gitver.ErrRemoteRewritten):
		return fail.Errorf("write", "", fail.ErrUnavailable, "the history of the board's remote %s (%s) was rewritten (a force-push?): it no longer holds "+
			"what this clone fetched from it; nothing was written; reads still work; run `blackboard-mcp remote repair` to push "+
			"a merge that keeps both", f.up.Name(), url).Because(err)
	default:
		return fail.Errorf("write", "", fail.ErrUnavailable, "the board's remote %s (%s) cannot take the write (%s): nothing was written; reads "+
			"still work from this clone; write again once it is back", f.up.Name(), url, re.Stderr).Because(err)
	}
}

// refresh learns what the upstream holds and brings the local branch to
// it; moved says whether the local branch moved. The caller holds the
// write lock.
func (f *Follower) Refresh() (moved bool, err error) {
	if err := f.up.Learn(context.Background()); err != nil {
		return false, err
	}
	return f.FollowMoved()
}

// followMoved is follow, saying whether the local branch moved. The
// caller holds the write lock.
func (f *Follower) FollowMoved() (moved bool, err error) {
	before, err := f.repo.Head()
	if err != nil {
		return false, err
	}
	if err := f.Follow(); err != nil {
		return false, err
	}
	after, err := f.repo.Head()
	return after != before, err
}

// follow brings the local branch to the remote's, as last learned:
// forward, files and all, when the remote holds the local branch; when the
// local branch holds commits the remote has not (a person's commits, or
// the whole board when the remote was just attached), they are rebuilt on
// the remote's and published. The caller holds the write lock.
func (f *Follower) Follow() error {
	if f.up.OnBranch() {
		return nil
	}
	theirs, err := f.up.Published()
	if err != nil {
		return err
	}
	ours, err := f.repo.Head()
	if err != nil || ours == theirs {
		return err
	}
	if !theirs.IsZero() {
		if behind, err := f.repo.IsAncestor(ours, theirs); err != nil || behind {
			if err != nil {
				return err
			}
			_, err := f.mover.MoveWithFiles(ours, theirs, history.OwnMove+"fast-forward to "+f.up.Name(), nil)
			return err
		}
	}
	// The local branch has commits the remote has not.
	tip := ours
	if !theirs.IsZero() {
		if ahead, err := f.repo.IsAncestor(theirs, ours); err != nil {
			return err
		} else if !ahead {
			if tip, err = f.rebuildOn(theirs, ours); err != nil {
				return err
			}
		}
	}
	if err := f.up.Publish(tip); err != nil {
		if errors.Is(err, gitver.ErrRemoteMoved) {
			return nil // the next fetch brings what came first
		}
		return f.Failure(err)
	}
	if tip != ours {
		_, err := f.mover.MoveWithFiles(ours, tip, history.OwnMove+"rebuild the local commits on "+f.up.Name(), nil)
		return err
	}
	return nil
}

// rebuildOn places the commits ours has and theirs has not on top of theirs,
// oldest first, each with its author and message. A note both sides changed
// keeps the remote's content; the local side's is kept as a sibling note
// linked `contradicts` to it, and the local commits as they were under a
// rescue ref. It returns the new tip, written but on no branch.
func (f *Follower) rebuildOn(theirs, ours gitver.Hash) (gitver.Hash, error) {
	base, err := f.repo.MergeBase(theirs, ours)
	if err != nil {
		return gitver.ZeroHash, err
	}
	mine, found, err := f.hist.CommitsUntil(ours, base, history.MaxDropped) // newest first
	if err != nil {
		return gitver.ZeroHash, err
	}
	for _, c := range mine {
		if len(c.Parents) > 1 {
			// A person's merge not pushed yet (a `git pull` while the
			// agents wrote), and the remote moved since: their commits go
			// to the remote as they are, joined with the remote's.
			return f.mergeOnto(theirs, ours, base)
		}
	}
	if !found {
		return gitver.ZeroHash, fmt.Errorf("the local branch has more than %d commits the remote has not", history.MaxDropped)
	}
	changedThere, err := f.hist.ChangedSince(base, theirs)
	if err != nil {
		return gitver.ZeroHash, err
	}
	theirNotes := notesOf(changedThere)
	tip, kept := theirs, false
	for i := len(mine) - 1; i >= 0; i-- {
		c := mine[i]
		var parentTree gitver.Hash
		if p := c.FirstParent(); !p.IsZero() {
			pc, err := f.repo.ReadCommit(p)
			if err != nil {
				return gitver.ZeroHash, err
			}
			parentTree = pc.Tree
		}
		changes, err := f.repo.DiffTrees(parentTree, c.Tree)
		if err != nil {
			return gitver.ZeroHash, err
		}
		edit := map[string]gitver.Hash{}
		var blobs [][]byte
		for _, ch := range changes {
			key, isNote := note.KeyOf(ch.Path)
			if !isNote || !theirNotes[key] {
				edit[ch.Path] = ch.New
				continue
			}
			// Both sides changed the note: the remote's stays; this
			// side's becomes a sibling that contradicts it.
			kept = true
			if !note.IsNoteFile(ch.Path) || ch.New.IsZero() {
				continue
			}
			sibling, content, err := f.contradicting(key, ch.New, c.Hash)
			if err != nil {
				return gitver.ZeroHash, err
			}
			edit[sibling] = gitver.BlobHash(content)
			blobs = append(blobs, content)
		}
		pending, err := f.repo.BuildCommit(gitver.CommitRequest{Parent: tip, Changes: edit, Blobs: blobs, Author: c.Author, Message: c.Message})
		if err != nil {
			return gitver.ZeroHash, err
		}
		if err := pending.Write(); err != nil {
			return gitver.ZeroHash, err
		}
		tip = pending.Hash
	}
	if kept {
		who := f.program()
		if err := f.repo.UpdateRef(history.RescuePrefix+ours.String(), gitver.ZeroHash, ours, who, history.OwnMove+"keep local commits a remote write contradicted"); err != nil &&
			!errors.Is(err, gitver.ErrBranchMoved) {
			return gitver.ZeroHash, err
		}
		f.logf("local commits changed notes the remote changed too: the remote's content stays, this clone's is kept as sibling notes "+
			"linked `contradicts`, and the local commits as they were under %s%s", history.RescuePrefix, ours.Short())
	}
	return tip, nil
}

// mergeOnto joins ours, which holds a person's merge the remote has not,
// with theirs, the remote's branch that moved since, in a merge commit:
// rebuilding a merge would rewrite the person's commits, which are theirs
// to keep. The remote's branch is the merge's first parent. The derived
// index numbers the commits in the order a walk that follows first parents
// first finishes them (syncIndex), so every commit on the first-parent
// history of the remote keeps its place, and every write acknowledged there
// its version; the person's commits come after them. Every file ours
// changed since base comes along; a note both sides changed keeps the
// remote's content, and ours becomes a sibling note linked `contradicts`
// to it, as rebuildOn does. It returns the merge, written but on no
// branch.
func (f *Follower) mergeOnto(theirs, ours, base gitver.Hash) (gitver.Hash, error) {
	changedHere, err := f.hist.ChangedSince(base, ours)
	if err != nil {
		return gitver.ZeroHash, err
	}
	changedThere, err := f.hist.ChangedSince(base, theirs)
	if err != nil {
		return gitver.ZeroHash, err
	}
	theirNotes := notesOf(changedThere)
	theirBlobs := make(map[string]gitver.Hash, len(changedThere))
	for _, ch := range changedThere {
		theirBlobs[ch.Path] = ch.New
	}
	edit := map[string]gitver.Hash{}
	var blobs [][]byte
	kept := 0
	for _, ch := range changedHere {
		key, isNote := note.KeyOf(ch.Path)
		switch {
		case !isNote || !theirNotes[key]:
			edit[ch.Path] = ch.New
		case theirBlobs[ch.Path] == ch.New:
			// Both sides made the same change.
		case note.IsNoteFile(ch.Path) && !ch.New.IsZero():
			sibling, content, err := f.contradicting(key, ch.New, ours)
			if err != nil {
				return gitver.ZeroHash, err
			}
			edit[sibling] = gitver.BlobHash(content)
			blobs = append(blobs, content)
			kept++
		}
	}
	who := f.program()
	branch := strings.TrimPrefix(f.repo.Branch(), "refs/heads/")
	msg := note.Message{Subject: fmt.Sprintf("merge %s/%s into %s", f.up.Name(), branch, branch),
		Lines: []string{fmt.Sprintf("The local %s held a merge the remote had not when the remote moved on;", branch),
			"this joins both, so the person's commits reach the remote as they were."},
		Agent: note.InitAgent}
	if kept > 0 {
		msg.Lines = append(msg.Lines, fmt.Sprintf("%d notes both sides changed keep the remote's content; this clone's are sibling notes linked contradicts.", kept))
	}
	merge, err := f.repo.BuildCommit(gitver.CommitRequest{Parent: theirs, MergeParents: []gitver.Hash{ours}, Changes: edit, Blobs: blobs,
		Author: who, Message: msg.String()})
	if err != nil {
		return gitver.ZeroHash, err
	}
	return merge.Hash, merge.Write()
}

// notesOf is the set of notes whose files changes touch.
func notesOf(changes []gitver.PathChange) map[string]bool {
	out := map[string]bool{}
	for _, ch := range changes {
		if key, ok := note.KeyOf(ch.Path); ok {
			out[key] = true
		}
	}
	return out
}

// contradicting returns the path and content of a sibling note holding a
// local version of key (blob) that lost to the remote's: key-<commit>,
// linked `contradicts` to key.
func (f *Follower) contradicting(key string, blob, commit gitver.Hash) (string, []byte, error) {
	raw, err := f.repo.ReadBlob(blob)
	if err != nil {
		return "", nil, err
	}
	return note.Contradicting(key, raw, commit.Short())
}

// WhileBranchMoves runs attempt again while it fails with fail.ErrBranchMoved, at
// most MaxMoves times, running repair (people's) before each new attempt
// (what moved may need one: a checkout that ended meanwhile); past that,
// the write is a conflict the caller may try again. A conflict is answered
// only once f refreshed the branch from where writes count. An attempt that lost the
// remote to another clone's push (fail.ErrRemoteMoved) runs again after a
// random pause that grows with each loss, for at most MaxRemoteRace.
// The caller holds the write lock.
func (f *Follower) WhileBranchMoves(op, uri string, repair func() error, attempt func() error) error {
	fetched := false
	race := NewRace(op, uri)
	for moves := 0; moves < MaxMoves; {
		if moves+race.lost > 0 {
			if err := repair(); errors.Is(err, fail.ErrBranchMoved) {
				moves++ // what a reset dropped is not back yet
				continue
			} else if err != nil {
				return err
			}
		}
		err := attempt()
		if errors.Is(err, fail.ErrConflict) && !fetched {
			// This clone may be behind the remote, where the write would
			// count: a conflict is answered against what it holds now.
			fetched = true
			if moved, ferr := f.Refresh(); ferr == nil && moved {
				moves++
				continue
			}
		}
		switch {
		case errors.Is(err, fail.ErrRemoteMoved):
			race.Lose()
			if err := race.Over(); err != nil {
				return err
			}
			race.Pause()
		case errors.Is(err, fail.ErrBranchMoved):
			moves++
		default:
			return err
		}
	}
	return fail.Errorf(op, uri, fail.ErrConflict, "the branch kept moving under the write (someone is committing in a loop); try again")
}
