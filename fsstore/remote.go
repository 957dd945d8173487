package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A board whose branch follows a remote (branch.<board>.remote in git's
// config, as `git clone` and `blackboard-mcp remote set` leave it) counts a
// write where every clone sees it: on the remote. A commit is built on the
// local branch, pushed, never by force, and the local branch moves to it
// only once the remote took it: the push is the compare-and-swap, against
// every clone's writes. A push the remote refuses because it moved on
// fetches, brings the local branch to what the remote holds, and the write
// starts over, its expect_version checked against the new history. Reads
// are served from the local branch, which holds nothing the remote does
// not (besides a person's own commits not yet pushed), and moves forward
// only.

// ErrUnavailable: the board cannot take the call now: its remote cannot
// take writes (unreachable, or its history was rewritten; nothing was
// written, reads still work), or the derived index is being built (the
// message says how far; retry). It is catchup.ErrUnavailable.
var ErrUnavailable = catchup.ErrUnavailable

// relContradicts links a local version that lost to the remote's.
const relContradicts = "contradicts"

// maxRemoteRace bounds how long a write keeps starting over because other
// clones' pushes came first. A write that lost must fetch before it pushes
// again, while a writer that keeps winning need not: one clone writing in a
// loop can hold another off for as long as it writes (until pushes are
// batched), so the bound is generous.
const maxRemoteRace = 30 * time.Second

// gitRemote is the part that talks to the board's remote: it pushes,
// fetches, follows the remote's branch, and rebuilds the local commits on
// it, moving the branch through the mover.
type gitRemote struct {
	*board
	remote string // its name in git's config
	lock   *writeLock
	mover  *mover
	// turns is this process's part in taking turns with other clones
	// (turns.go); kept by the leader of the write queue (pushBatch).
	turns turns
}

func (r *gitRemote) onBranch() bool { return false }

func (r *gitRemote) offer(commit *gitver.PendingCommit) (took bool, err error) {
	if err := commit.Write(); err != nil {
		return false, err
	}
	if err := r.publish(commit.Hash); err != nil {
		return false, err
	}
	return true, nil
}

func (r *gitRemote) push(tip gitver.Hash) error {
	holds, err := r.holdsTracking(tip)
	if err != nil {
		return err
	}
	if !holds {
		return gitver.ErrRemoteMoved
	}
	if err := r.turns.push(r.repo, r.remote, tip); err != nil {
		return err
	}
	reach("pushed")
	return nil
}

func (r *gitRemote) awaitTurn(first bool) (yielded bool) {
	if first {
		r.pacePush()
	}
	return r.turns.yield(r.repo, r.remote)
}

func (r *gitRemote) pushed(err error, othersWait bool) (announce func()) {
	switch {
	case err == nil:
		r.turns.won()
	case !othersWait:
		if r.turns.lost(); !r.turns.starved() {
			return nil
		}
		return func() { r.turns.announce(r.repo, r.remote, r.logf) }
	}
	return nil
}

func (r *gitRemote) tracking() (gitver.Hash, error) { return r.repo.Tracking(r.remote) }

func (r *gitRemote) fetch(ctx context.Context) error { return r.repo.Fetch(ctx, r.remote) }

// Remote is the remote the board's branch follows, "" for none.
func (w *Workspace) Remote() string {
	if r := w.gitRemote(); r != nil {
		return r.remote
	}
	return ""
}

// gitRemote is the board's remote, nil for none.
func (w *Workspace) gitRemote() *gitRemote {
	r, _ := w.up.(*gitRemote)
	return r
}

// publish offers commit, built on the local branch, to the remote. When
// the remote moved on (another clone pushed first), it brings the local
// branch to the remote's and returns errRemoteMoved, so that the write
// starts over against the new history. The caller holds the write lock.
func (r *gitRemote) publish(commit gitver.Hash) error {
	holds, err := r.holdsTracking(commit)
	if err != nil {
		return err
	}
	if holds {
		err := r.repo.Push(context.Background(), r.remote, commit)
		if !errors.Is(err, gitver.ErrRemoteMoved) {
			return r.failure(err)
		}
	}
	if err := r.repo.Fetch(context.Background(), r.remote); err != nil {
		return r.failure(err)
	}
	if err := r.follow(); err != nil {
		return err
	}
	return errRemoteMoved
}

// holdsTracking reports whether commit holds what this clone last knew of
// the remote's branch: then pushing it only moves the remote forward.
func (r *gitRemote) holdsTracking(commit gitver.Hash) (bool, error) {
	theirs, err := r.repo.Tracking(r.remote)
	if err != nil || theirs.IsZero() || theirs == commit {
		return err == nil, err
	}
	return r.repo.IsAncestor(theirs, commit)
}

// failure words a failed network operation for the writer.
func (r *gitRemote) failure(err error) error {
	var re *gitver.RemoteError
	if !errors.As(err, &re) {
		return err
	}
	url := gitver.Redact(r.repo.RemoteURL(r.remote))
	switch {
	case errors.Is(err, gitver.ErrRemoteRewritten):
		return errorf("write", "", ErrUnavailable, "the history of the board's remote %s (%s) was rewritten (a force-push?): it no longer holds "+
			"what this clone fetched from it; nothing was written; reads still work; run `blackboard-mcp remote repair` to push "+
			"a merge that keeps both", r.remote, url).because(err)
	default:
		return errorf("write", "", ErrUnavailable, "the board's remote %s (%s) cannot take the write (%s): nothing was written; reads "+
			"still work from this clone; write again once it is back", r.remote, url, re.Stderr).because(err)
	}
}

// FetchRemote fetches the remote's branch and brings the local branch to
// it: a server calls it every few seconds, so that reads follow the other
// clones. It takes the write lock only when there is something to do.
func (w *Workspace) FetchRemote(ctx context.Context) error {
	r := w.gitRemote()
	if r == nil {
		return nil
	}
	if err := w.b.repo.Fetch(ctx, r.remote); err != nil {
		return err
	}
	theirs, err := w.b.repo.Tracking(r.remote)
	if err != nil {
		return err
	}
	if head, err := w.b.repo.Head(); err != nil || head == theirs || theirs.IsZero() {
		return err
	}
	return w.lock.with(r.follow)
}

// heardFromRemoteWithin reports whether a process of this clone fetched
// the remote, or pushed to it, within d.
func (r *gitRemote) heardFromRemoteWithin(d time.Duration) bool {
	last := r.repo.LastSync()
	return !last.IsZero() && time.Since(last) < d
}

// refresh fetches and brings the local branch to the
// remote's; moved says whether the local branch moved. The caller holds the
// write lock.
func (r *gitRemote) refresh() (moved bool, err error) {
	before, err := r.repo.Head()
	if err != nil {
		return false, err
	}
	if err := r.repo.Fetch(context.Background(), r.remote); err != nil {
		return false, err
	}
	if err := r.follow(); err != nil {
		return false, err
	}
	after, err := r.repo.Head()
	return after != before, err
}

// follow brings the local branch to the remote's, as last
// fetched: forward, files and all, when the remote holds the local branch;
// when the local branch holds commits the remote has not (a person's
// commits, or the whole board when the remote was just attached), they are
// rebuilt on the remote's and pushed. The caller holds the write lock.
func (r *gitRemote) follow() error {
	theirs, err := r.repo.Tracking(r.remote)
	if err != nil {
		return err
	}
	ours, err := r.repo.Head()
	if err != nil || ours == theirs {
		return err
	}
	if !theirs.IsZero() {
		if behind, err := r.repo.IsAncestor(ours, theirs); err != nil || behind {
			if err != nil {
				return err
			}
			_, err := r.mover.moveBranchWithFiles(ours, theirs, ownMove+"fast-forward to "+r.remote, nil)
			return err
		}
	}
	// The local branch has commits the remote has not.
	tip := ours
	if !theirs.IsZero() {
		if ahead, err := r.repo.IsAncestor(theirs, ours); err != nil {
			return err
		} else if !ahead {
			if tip, err = r.rebuildOn(theirs, ours); err != nil {
				return err
			}
		}
	}
	if err := r.repo.Push(context.Background(), r.remote, tip); err != nil {
		if errors.Is(err, gitver.ErrRemoteMoved) {
			return nil // the next fetch brings what came first
		}
		return r.failure(err)
	}
	if tip != ours {
		_, err := r.mover.moveBranchWithFiles(ours, tip, ownMove+"rebuild the local commits on "+r.remote, nil)
		return err
	}
	return nil
}

// rebuildOn places the commits ours has and theirs has not on top of theirs,
// oldest first, each with its author and message. A note both sides changed
// keeps the remote's content; the local side's is kept as a sibling note
// linked `contradicts` to it, and the local commits as they were under a
// rescue ref. It returns the new tip, written but on no branch.
func (r *gitRemote) rebuildOn(theirs, ours gitver.Hash) (gitver.Hash, error) {
	base, err := r.repo.MergeBase(theirs, ours)
	if err != nil {
		return gitver.ZeroHash, err
	}
	mine, found, err := r.commitsUntil(ours, base, maxDropped) // newest first
	if err != nil {
		return gitver.ZeroHash, err
	}
	for _, c := range mine {
		if len(c.Parents) > 1 {
			// A person's merge not pushed yet (a `git pull` while the
			// agents wrote), and the remote moved since: their commits go
			// to the remote as they are, joined with the remote's.
			return r.mergeOnto(theirs, ours, base)
		}
	}
	if !found {
		return gitver.ZeroHash, fmt.Errorf("the local branch has more than %d commits the remote has not", maxDropped)
	}
	changedThere, err := r.changedSince(base, theirs)
	if err != nil {
		return gitver.ZeroHash, err
	}
	theirNotes := notesOf(changedThere)
	tip, kept := theirs, false
	for i := len(mine) - 1; i >= 0; i-- {
		c := mine[i]
		var parentTree gitver.Hash
		if p := c.FirstParent(); !p.IsZero() {
			pc, err := r.repo.ReadCommit(p)
			if err != nil {
				return gitver.ZeroHash, err
			}
			parentTree = pc.Tree
		}
		changes, err := r.repo.DiffTrees(parentTree, c.Tree)
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
			sibling, content, err := r.contradicting(key, ch.New, c.Hash)
			if err != nil {
				return gitver.ZeroHash, err
			}
			edit[sibling] = gitver.BlobHash(content)
			blobs = append(blobs, content)
		}
		pending, err := r.repo.BuildCommit(gitver.CommitRequest{Parent: tip, Changes: edit, Blobs: blobs, Author: c.Author, Message: c.Message})
		if err != nil {
			return gitver.ZeroHash, err
		}
		if err := pending.Write(); err != nil {
			return gitver.ZeroHash, err
		}
		tip = pending.Hash
	}
	if kept {
		who := r.agentSignature(note.InitAgent)
		if err := r.repo.UpdateRef(RescuePrefix+ours.String(), gitver.ZeroHash, ours, who, ownMove+"keep local commits a remote write contradicted"); err != nil &&
			!errors.Is(err, gitver.ErrBranchMoved) {
			return gitver.ZeroHash, err
		}
		r.logf("local commits changed notes the remote changed too: the remote's content stays, this clone's is kept as sibling notes "+
			"linked `contradicts`, and the local commits as they were under %s%s", RescuePrefix, ours.Short())
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
func (r *gitRemote) mergeOnto(theirs, ours, base gitver.Hash) (gitver.Hash, error) {
	changedHere, err := r.changedSince(base, ours)
	if err != nil {
		return gitver.ZeroHash, err
	}
	changedThere, err := r.changedSince(base, theirs)
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
			sibling, content, err := r.contradicting(key, ch.New, ours)
			if err != nil {
				return gitver.ZeroHash, err
			}
			edit[sibling] = gitver.BlobHash(content)
			blobs = append(blobs, content)
			kept++
		}
	}
	who := r.agentSignature(note.InitAgent)
	branch := strings.TrimPrefix(r.repo.Branch(), "refs/heads/")
	msg := note.Message{Subject: fmt.Sprintf("merge %s/%s into %s", r.remote, branch, branch),
		Lines: []string{fmt.Sprintf("The local %s held a merge the remote had not when the remote moved on;", branch),
			"this joins both, so the person's commits reach the remote as they were."},
		Agent: note.InitAgent}
	if kept > 0 {
		msg.Lines = append(msg.Lines, fmt.Sprintf("%d notes both sides changed keep the remote's content; this clone's are sibling notes linked contradicts.", kept))
	}
	merge, err := r.repo.BuildCommit(gitver.CommitRequest{Parent: theirs, MergeParents: []gitver.Hash{ours}, Changes: edit, Blobs: blobs,
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
func (b *board) contradicting(key string, blob, commit gitver.Hash) (string, []byte, error) {
	raw, err := b.repo.ReadBlob(blob)
	if err != nil {
		return "", nil, err
	}
	return contradictingText(key, raw, commit)
}

// contradictingText is contradicting of a note file's text raw, which git
// may not hold yet (a person's save).
func contradictingText(key string, raw []byte, commit gitver.Hash) (string, []byte, error) {
	sibling := key + "-" + commit.Short()
	f, err := note.Parse(raw)
	if err != nil {
		return sibling + ".md", raw, nil // unreadable front matter: kept as it is
	}
	rels, targets := f.Links()
	if !slices.Contains(targets[relContradicts], key) {
		if targets[relContradicts] == nil {
			rels = append(rels, relContradicts)
		}
		targets[relContradicts] = append(targets[relContradicts], key)
	}
	if err := f.SetLinks(rels, targets); err != nil {
		return "", nil, err
	}
	out, err := f.Render()
	return sibling + ".md", out, err
}

// Clone makes dir a workspace from the board at url: a git clone whose
// branch follows it. A repository that holds no board is refused (and the
// clone removed).
func Clone(ctx context.Context, url, dir string) error {
	branch, err := gitver.DefaultBranch(ctx, url)
	if err != nil {
		return err
	}
	if branch == "" {
		return fmt.Errorf("%s is empty: attach a board to it with `blackboard-mcp remote set %s` in the board", gitver.Redact(url), gitver.Redact(url))
	}
	if err := gitver.Clone(ctx, url, dir, branch); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, note.ConfigFile)); err != nil {
		return errors.Join(fmt.Errorf("%s holds no board (no %s)", gitver.Redact(url), note.ConfigFile), os.RemoveAll(dir))
	}
	return nil
}

// RemoteName is the name a board gives the remote it is attached to.
const RemoteName = "origin"

// SetRemote attaches the board to the remote at url: an empty remote gets
// the board's history; one that holds this board's history, or a later one,
// is followed (the local branch moves to it, and local commits the remote
// has not are rebuilt on it and pushed); a remote that holds an unrelated
// history is refused, and the board stays as it was.
func (w *Workspace) SetRemote(ctx context.Context, url string) error {
	previous := w.b.repo.RemoteURL(RemoteName)
	if err := w.b.repo.SetUpstream(RemoteName, url); err != nil {
		return err
	}
	undo := func(cause error) error {
		if previous != "" {
			return errors.Join(cause, w.b.repo.SetUpstream(RemoteName, previous))
		}
		return errors.Join(cause, w.b.repo.RemoveRemote(RemoteName))
	}
	if err := w.b.repo.Fetch(ctx, RemoteName); err != nil {
		return undo(err)
	}
	theirs, err := w.b.repo.Tracking(RemoteName)
	if err != nil {
		return undo(err)
	}
	ours, err := w.b.repo.Head()
	if err != nil {
		return undo(err)
	}
	if !theirs.IsZero() {
		base, err := w.b.repo.MergeBase(theirs, ours)
		if err != nil {
			return undo(err)
		}
		if base.IsZero() {
			return undo(fmt.Errorf("%s holds another history than this board's (no commit in common with %s): "+
				"attach an empty repository, or clone that board with `blackboard-mcp clone`", gitver.Redact(url), ours.Short()))
		}
	}
	r := &gitRemote{board: w.b, remote: RemoteName, lock: w.lock, mover: w.mover}
	w.up, w.people.up, w.pipe.up = r, r, r
	return w.lock.with(r.follow)
}

// RemoteStatus is what `blackboard-mcp remote` shows.
type RemoteStatus struct {
	Name, URL string
	Local     gitver.Hash // the local branch
	Remote    gitver.Hash // the remote's branch, as last fetched or pushed
	LastSync  time.Time   // when that was last learned
	// Waiting lists the local commits the remote has not (a person's
	// commits, to be pushed with the next write or fetch), newest first,
	// at most 20 of WaitingCount.
	Waiting      []string
	WaitingCount int
	// Behind counts the remote's commits the local branch has not yet.
	Behind int
	// Problem says why the remote cannot take writes now, "" when it can.
	Problem string
}

// RemoteStatus fetches and reports where the board stands against its
// remote.
func (w *Workspace) RemoteStatus(ctx context.Context) (*RemoteStatus, error) {
	r := w.gitRemote()
	if r == nil {
		return nil, nil
	}
	st := &RemoteStatus{Name: r.remote, URL: w.b.repo.RemoteURL(r.remote)}
	if err := w.b.repo.Fetch(ctx, r.remote); err != nil {
		st.Problem = err.Error()
	}
	var err error
	if st.Local, err = w.b.repo.Head(); err != nil {
		return nil, err
	}
	if st.Remote, err = w.b.repo.Tracking(r.remote); err != nil {
		return nil, err
	}
	st.LastSync = w.b.repo.LastSync()
	if st.Waiting, err = w.b.repo.Subjects(st.Remote, st.Local, 20); err != nil {
		return nil, err
	}
	if st.WaitingCount, err = w.b.repo.Count(st.Remote, st.Local); err != nil {
		return nil, err
	}
	st.Behind, err = w.b.repo.Count(st.Local, st.Remote)
	return st, err
}

// RepairRemote joins a remote whose history was rewritten (a force-push)
// with this clone's, never by force: it pushes a merge of the two whose
// content is this clone's board, so every commit either side had stays in
// the history and no note's version goes down. It returns the merge.
func (w *Workspace) RepairRemote(ctx context.Context) (gitver.Hash, error) {
	r := w.gitRemote()
	if r == nil {
		return gitver.ZeroHash, errors.New("the board has no remote")
	}
	var merge gitver.Hash
	err := w.lock.with(func() error {
		if err := w.b.repo.Fetch(ctx, r.remote); !errors.Is(err, gitver.ErrRemoteRewritten) {
			if err == nil {
				return fmt.Errorf("the history of %s was not rewritten: nothing to repair", r.remote)
			}
			return err
		}
		ref := "refs/blackboard/rewritten/" + r.remote
		theirs, err := w.b.repo.FetchRewritten(ctx, r.remote, ref)
		if err != nil {
			return err
		}
		ours, err := w.b.repo.Head()
		if err != nil {
			return err
		}
		head, err := w.b.repo.ReadCommit(ours)
		if err != nil {
			return err
		}
		branch := strings.TrimPrefix(w.b.repo.Branch(), "refs/heads/")
		who := w.b.agentSignature(note.InitAgent)
		merge, err = w.b.repo.MergeCommit(head.Tree, []gitver.Hash{theirs, ours}, who, fmt.Sprintf(
			"keep the board's history after %s/%s was rewritten\n\nThe remote's %s was replaced by a history that does not hold what this clone\n"+
				"had fetched (a force-push). This merge joins both: the board's content is this\nclone's, and every commit of either history stays, so no version goes down.\n",
			r.remote, branch, branch))
		if err != nil {
			return err
		}
		if err := w.b.repo.PushOver(ctx, r.remote, merge, theirs); err != nil {
			return w.up.failure(err)
		}
		if _, err := w.mover.moveBranchWithFiles(ours, merge, ownMove+"join the rewritten history of "+r.remote, nil); err != nil {
			return err
		}
		return w.b.repo.DeleteRef(ref)
	})
	return merge, err
}

// RemoteCheck protects the remote's branch where it can, and says how to
// where it cannot: a bare repository on this machine (a path or file://)
// gets receive.denyNonFastForwards and receive.denyDeletes, so no push can
// rewrite or delete the board's history there; for a hosted remote, the
// advice names the host's own setting.
func (w *Workspace) RemoteCheck(ctx context.Context) (done, advice string, err error) {
	r := w.gitRemote()
	if r == nil {
		return "", "", errors.New("the board has no remote")
	}
	url := w.b.repo.RemoteURL(r.remote)
	branch := strings.TrimPrefix(w.b.repo.Branch(), "refs/heads/")
	if path, local := strings.CutPrefix(url, "file://"); local || filepath.IsAbs(url) {
		if !local {
			path = url
		}
		if err := gitver.ProtectBare(ctx, path); err != nil {
			return "", "", err
		}
		return fmt.Sprintf("%s refuses pushes that rewrite or delete history (receive.denyNonFastForwards, receive.denyDeletes)", path), "", nil
	}
	switch {
	case strings.Contains(url, "github.com"):
		advice = fmt.Sprintf("on GitHub: Settings > Branches (or Rules) > protect %s: block force pushes and deletions", branch)
	case strings.Contains(url, "gitlab"):
		advice = fmt.Sprintf("on GitLab: Settings > Repository > Protected branches: protect %s, with force push off", branch)
	case strings.Contains(url, "gitea") || strings.Contains(url, "forgejo") || strings.Contains(url, "codeberg"):
		advice = fmt.Sprintf("on Gitea/Forgejo: Settings > Branches > add a protection rule for %s (force pushes are then refused)", branch)
	default:
		advice = "on the server: git config receive.denyNonFastForwards true and receive.denyDeletes true in the bare repository, " +
			"or the host's protected-branch setting for " + branch
	}
	return "", advice, nil
}

// pushPacing is the least time between two pushes to the board's remote:
// git config blackboard.pushInterval (a duration, "10s"), else 10 seconds
// for a host that asks for at most 6 pushes a minute to one repository,
// else none.
func (r *gitRemote) pushPacing() time.Duration {
	if r.remote == "" {
		return 0
	}
	if d, ok := r.repo.ConfigDuration("blackboard", "pushInterval"); ok {
		return d
	}
	if gitver.HostPacesPushes(r.repo.RemoteURL(r.remote)) {
		return 10 * time.Second
	}
	return 0
}

// pacePush waits until the pacing allows the next push; writes that come
// meanwhile join it.
func (r *gitRemote) pacePush() {
	pace := r.pushPacing()
	if pace <= 0 {
		return
	}
	if wait := time.Until(r.repo.LastPush().Add(pace)); wait > 0 {
		time.Sleep(wait)
	}
}
