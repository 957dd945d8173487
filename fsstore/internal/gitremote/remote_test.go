package gitremote

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

// clone is one clone of the test's bare remote, as the engine sees it.
type clone struct {
	t      *testing.T
	repo   *gitver.Repo
	remote *Remote
	n      int
}

// commit builds a commit on what the clone last learned the remote holds.
func (c *clone) commit() gitver.Hash {
	c.t.Helper()
	parent, err := c.remote.Published()
	if err != nil {
		c.t.Fatal(err)
	}
	c.n++
	blob, err := c.repo.WriteBlob(fmt.Appendf(nil, "%p %d", c, c.n))
	if err != nil {
		c.t.Fatal(err)
	}
	h, err := c.repo.Commit(gitver.CommitRequest{Parent: parent, Message: fmt.Sprintf("write %d", c.n),
		Author:  gitver.Signature{Name: "agent", Email: "agent@blackboard.local", When: time.Now()},
		Changes: map[string]gitver.Hash{fmt.Sprintf("f%p-%d", c, c.n): blob}})
	if err != nil {
		c.t.Fatal(err)
	}
	return h
}

func (c *clone) learn() {
	c.t.Helper()
	if err := c.remote.Learn(context.Background()); err != nil {
		c.t.Fatal(err)
	}
}

func (c *clone) losses() int {
	c.remote.mu.Lock()
	defer c.remote.mu.Unlock()
	return c.remote.turns.losses
}

// Two clones of one bare remote, through the upstream's own methods: a
// clone that keeps losing races counts them, announces its turn once
// starved (after the fetch that follows its last loss), and its next
// publish takes the turn; the other clone's publish is refused while that
// turn is unseen, which is no race lost for it; once the turn is taken,
// nobody holds back.
func TestRemoteTakesTurns(t *testing.T) {
	fixtures.RequireGit(t)
	root := t.TempDir()
	bare := filepath.Join(root, "board.git")
	fixtures.Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	if err := gitver.ProtectBare(context.Background(), bare); err != nil {
		t.Fatal(err)
	}
	open := func(name string) *clone {
		dir := filepath.Join(root, name)
		if err := gitver.Init(dir, "main"); err != nil {
			t.Fatal(err)
		}
		fixtures.Git(t, dir, "remote", "add", "origin", "file://"+bare)
		repo, err := gitver.Open(dir, gitver.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { repo.Close() })
		logf := func(format string, args ...any) { t.Logf(name+": "+format, args...) }
		return &clone{t: t, repo: repo, remote: New(repo, "origin", logf, func(string) {})}
	}
	a, b := open("a"), open("b")
	if err := a.remote.Publish(a.commit()); err != nil {
		t.Fatalf("the first publish: %v", err)
	}
	b.learn()

	// a builds on what it learned and loses to b every time.
	for i := 1; i <= announceAfter; i++ {
		a.learn()
		mine := a.commit()
		if err := b.remote.Publish(b.commit()); err != nil {
			t.Fatalf("b's publish %d: %v", i, err)
		}
		b.learn()
		if err := a.remote.Publish(mine); !errors.Is(err, gitver.ErrRemoteMoved) {
			t.Fatalf("a's publish over b's: %v, want ErrRemoteMoved", err)
		}
		if got := a.losses(); got != i {
			t.Fatalf("after %d races lost a counts %d", i, got)
		}
	}
	// Starved: the fetch after the last loss announces a's turn.
	a.learn()
	if held := a.remote.Await(false); held {
		t.Fatal("a held back for its own turn")
	}
	turns, err := a.repo.RecentTurns("origin", 5)
	if err != nil || len(turns) == 0 || turns[0].Taken || turns[0].Lost != announceAfter {
		t.Fatalf("after the fetch that followed the last loss, the turns read %+v (%v), want a's, lost %d", turns, err, announceAfter)
	}

	// b has not seen the turn: refused, and no race lost.
	if err := b.remote.Publish(b.commit()); !errors.Is(err, gitver.ErrOthersWaiting) {
		t.Fatalf("b's publish while a's turn is unseen: %v, want ErrOthersWaiting", err)
	}
	if got := b.losses(); got != 0 {
		t.Fatalf("a refusal for a turn b had not seen counts %d races lost, want 0", got)
	}

	// a takes its turn; once b learned that, it holds back for nobody.
	a.learn()
	if err := a.remote.Publish(a.commit()); err != nil {
		t.Fatalf("a's publish in its turn: %v", err)
	}
	if got := a.losses(); got != 0 {
		t.Fatalf("a counts %d races lost after its publish went through", got)
	}
	turns, err = a.repo.RecentTurns("origin", 5)
	if err != nil || len(turns) == 0 || !turns[0].Taken {
		t.Fatalf("after a's publish the turns read %+v (%v), want a's turn taken", turns, err)
	}
	b.learn()
	start := time.Now()
	if held := b.remote.Await(true); held {
		t.Fatalf("b held back for a turn already taken (%s)", time.Since(start))
	}
	if err := b.remote.Publish(b.commit()); err != nil {
		t.Fatalf("b's publish once the turn was taken: %v", err)
	}
}
