package gitver_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Two clones of a bare remote that refuses non-fast-forward updates and
// deletions: a clone's announced turn makes the other's next push refused
// (ErrOthersWaiting, the branch unmoved), a fetch shows the turn, the push
// then goes through; the waiting clone's push says it took its turn; a
// push over a moved branch is ErrRemoteMoved, not a turn; and the turns
// never touch the branch.
func TestTurnsOnARemote(t *testing.T) {
	fixtures.RequireGit(t)
	ctx := context.Background()
	root := t.TempDir()
	bare := filepath.Join(root, "board.git")
	fixtures.Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	if err := gitver.ProtectBare(ctx, bare); err != nil {
		t.Fatal(err)
	}
	a, aDir := newRepo(t)
	fixtures.Git(t, aDir, "remote", "add", "origin", "file://"+bare)
	n := 0
	commitOn := func(r *gitver.Repo) gitver.Hash {
		t.Helper()
		head, err := r.Head()
		if err != nil {
			t.Fatal(err)
		}
		n++
		h, err := r.Commit(gitver.CommitRequest{Parent: head, Author: agent, Message: fmt.Sprintf("commit %d", n),
			Changes: map[string]gitver.Hash{fmt.Sprintf("f%d", n): writeBlob(t, r, "x")}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	push := func(r *gitver.Repo, c gitver.Hash) error {
		t.Helper()
		err := r.Push(ctx, "origin", c)
		if err == nil {
			if err := r.UpdateRef("refs/heads/main", gitver.ZeroHash, c, agent, "pushed"); err != nil && !errors.Is(err, gitver.ErrBranchMoved) {
				t.Fatal(err)
			}
		}
		return err
	}
	first := commitOn(a)
	if err := push(a, first); err != nil {
		t.Fatalf("the first push: %v", err)
	}
	bDir := filepath.Join(root, "b")
	fixtures.Git(t, root, "clone", "--quiet", "file://"+bare, bDir)
	b := openRepo(t, bDir)
	if err := b.Fetch(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	if turns, err := b.RecentTurns("origin", 10); err != nil || len(turns) != 0 {
		t.Fatalf("a remote no clone waited on holds turns %v (%v)", turns, err)
	}

	want := gitver.Turn{Clone: "b-clone", Lost: 2, Needs: 150 * time.Millisecond}
	if err := b.AnnounceTurn(ctx, "origin", want); err != nil {
		t.Fatalf("AnnounceTurn: %v", err)
	}
	branch := revParse(t, bare, "main")
	second := commitOn(a)
	err := push(a, second)
	if !errors.Is(err, gitver.ErrOthersWaiting) || !errors.Is(err, gitver.ErrRemoteMoved) {
		t.Fatalf("a push after another clone announced its turn: %v, want ErrOthersWaiting", err)
	}
	if got := revParse(t, bare, "main"); got != branch {
		t.Errorf("the refused push moved the remote's branch to %s", got.Short())
	}
	if err := a.Fetch(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	turns, err := a.RecentTurns("origin", 10)
	if err != nil || len(turns) != 1 || turns[0].Turn != want {
		t.Fatalf("after a fetch the turns read %+v (%v), want %+v", turns, err, want)
	}
	if err := push(a, second); err != nil {
		t.Fatalf("a push once the turn is known: %v", err)
	}

	// b, behind by a push, is refused for the branch, not for a turn.
	bHead, err := b.Tracking("origin")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateRef("refs/heads/main", gitver.ZeroHash, bHead, agent, "follow"); err != nil && !errors.Is(err, gitver.ErrBranchMoved) {
		t.Fatal(err)
	}
	stale := commitOn(b)
	if err := b.Push(ctx, "origin", stale); !errors.Is(err, gitver.ErrRemoteMoved) || errors.Is(err, gitver.ErrOthersWaiting) {
		t.Fatalf("a push over a moved branch: %v, want ErrRemoteMoved only", err)
	}
	if err := b.Fetch(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	theirs, err := b.Tracking("origin")
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := b.Commit(gitver.CommitRequest{Parent: theirs, Author: agent, Message: "rebuilt",
		Changes: map[string]gitver.Hash{"g": writeBlob(t, b, "y")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.PushTaking(ctx, "origin", rebuilt, want); err != nil {
		t.Fatalf("the waiting clone's push: %v", err)
	}
	if err := a.Fetch(ctx, "origin"); err != nil {
		t.Fatal(err)
	}
	turns, err = a.RecentTurns("origin", 10)
	if err != nil || len(turns) != 2 || !turns[0].Taken || turns[0].Clone != want.Clone || turns[1].Taken {
		t.Fatalf("after the waiting clone pushed, the turns read %+v (%v), want its turn taken, newest first", turns, err)
	}
	if got := revParse(t, bare, "main"); got != rebuilt {
		t.Errorf("the remote's branch is at %s, want the waiting clone's push %s", got.Short(), rebuilt.Short())
	}
	fsck(t, bare)
}
