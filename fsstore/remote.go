package fsstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/gitremote"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
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

// RescuePrefix names the refs that keep commits the board's branch no
// longer holds: a person's rewind dropped them, or a remote's writes
// contradicted them.
const RescuePrefix = history.RescuePrefix

// Remote is the remote the board's branch follows, "" for none.
func (w *Workspace) Remote() string { return w.follower.Up().Name() }

// FetchRemote fetches the remote's branch and brings the local branch to
// it: a server calls it every few seconds, so that reads follow the other
// clones. It takes the write lock only when there is something to do.
func (w *Workspace) FetchRemote(ctx context.Context) error {
	up := w.follower.Up()
	if up.OnBranch() {
		return nil
	}
	if err := up.Learn(ctx); err != nil {
		return err
	}
	theirs, err := up.Published()
	if err != nil {
		return err
	}
	if head, err := w.repo.Head(); err != nil || head == theirs || theirs.IsZero() {
		return err
	}
	return w.lock.with(w.follower.Follow)
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
	previous := w.repo.RemoteURL(RemoteName)
	if err := w.repo.SetUpstream(RemoteName, url); err != nil {
		return err
	}
	undo := func(cause error) error {
		if previous != "" {
			return errors.Join(cause, w.repo.SetUpstream(RemoteName, previous))
		}
		return errors.Join(cause, w.repo.RemoveRemote(RemoteName))
	}
	if err := w.repo.Fetch(ctx, RemoteName); err != nil {
		return undo(err)
	}
	theirs, err := w.repo.Tracking(RemoteName)
	if err != nil {
		return undo(err)
	}
	ours, err := w.repo.Head()
	if err != nil {
		return undo(err)
	}
	if !theirs.IsZero() {
		base, err := w.repo.MergeBase(theirs, ours)
		if err != nil {
			return undo(err)
		}
		if base.IsZero() {
			return undo(fmt.Errorf("%s holds another history than this board's (no commit in common with %s): "+
				"attach an empty repository, or clone that board with `blackboard-mcp clone`", gitver.Redact(url), ours.Short()))
		}
	}
	w.follower.SetUp(gitremote.New(w.repo, RemoteName, w.logf, reach))
	return w.lock.with(w.follower.Follow)
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
	up := w.follower.Up()
	if up.OnBranch() {
		return nil, nil
	}
	st := &RemoteStatus{Name: up.Name(), URL: w.repo.RemoteURL(up.Name())}
	if err := up.Learn(ctx); err != nil {
		st.Problem = err.Error()
	}
	var err error
	if st.Local, err = w.repo.Head(); err != nil {
		return nil, err
	}
	if st.Remote, err = up.Published(); err != nil {
		return nil, err
	}
	st.LastSync = w.repo.LastSync()
	if st.Waiting, err = w.repo.Subjects(st.Remote, st.Local, 20); err != nil {
		return nil, err
	}
	if st.WaitingCount, err = w.repo.Count(st.Remote, st.Local); err != nil {
		return nil, err
	}
	st.Behind, err = w.repo.Count(st.Local, st.Remote)
	return st, err
}

// RepairRemote joins a remote whose history was rewritten (a force-push)
// with this clone's, never by force: it pushes a merge of the two whose
// content is this clone's board, so every commit either side had stays in
// the history and no note's version goes down. It returns the merge.
func (w *Workspace) RepairRemote(ctx context.Context) (gitver.Hash, error) {
	remote := w.follower.Up().Name()
	if remote == "" {
		return gitver.ZeroHash, errors.New("the board has no remote")
	}
	var merge gitver.Hash
	err := w.lock.with(func() error {
		if err := w.repo.Fetch(ctx, remote); !errors.Is(err, gitver.ErrRemoteRewritten) {
			if err == nil {
				return fmt.Errorf("the history of %s was not rewritten: nothing to repair", remote)
			}
			return err
		}
		ref := "refs/blackboard/rewritten/" + remote
		theirs, err := w.repo.FetchRewritten(ctx, remote, ref)
		if err != nil {
			return err
		}
		ours, err := w.repo.Head()
		if err != nil {
			return err
		}
		head, err := w.repo.ReadCommit(ours)
		if err != nil {
			return err
		}
		branch := strings.TrimPrefix(w.repo.Branch(), "refs/heads/")
		who := w.agentSignature(note.InitAgent)
		merge, err = w.repo.MergeCommit(head.Tree, []gitver.Hash{theirs, ours}, who, fmt.Sprintf(
			"keep the board's history after %s/%s was rewritten\n\nThe remote's %s was replaced by a history that does not hold what this clone\n"+
				"had fetched (a force-push). This merge joins both: the board's content is this\nclone's, and every commit of either history stays, so no version goes down.\n",
			remote, branch, branch))
		if err != nil {
			return err
		}
		if err := w.repo.PushOver(ctx, remote, merge, theirs); err != nil {
			return w.follower.Failure(err)
		}
		if _, err := w.mover.MoveWithFiles(ours, merge, ownMove+"join the rewritten history of "+remote, nil); err != nil {
			return err
		}
		return w.repo.DeleteRef(ref)
	})
	return merge, err
}

// RemoteCheck protects the remote's branch where it can, and says how to
// where it cannot: a bare repository on this machine (a path or file://)
// gets receive.denyNonFastForwards and receive.denyDeletes, so no push can
// rewrite or delete the board's history there; for a hosted remote, the
// advice names the host's own setting.
func (w *Workspace) RemoteCheck(ctx context.Context) (done, advice string, err error) {
	remote := w.follower.Up().Name()
	if remote == "" {
		return "", "", errors.New("the board has no remote")
	}
	url := w.repo.RemoteURL(remote)
	branch := strings.TrimPrefix(w.repo.Branch(), "refs/heads/")
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
