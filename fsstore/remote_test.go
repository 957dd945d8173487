package fsstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
)

// remoteBoard is a board on a bare remote and n clones of it, opened.
func remoteBoard(t *testing.T, n int) (bare string, clones []string, boards []*fsstore.Workspace) {
	t.Helper()
	fixtures.RequireGit(t)
	root := t.TempDir()
	bare = filepath.Join(root, "board.git")
	fixtures.Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	first := filepath.Join(root, "acme")
	if err := fsstore.Init(first, ""); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		dir := first
		if i > 0 {
			dir = filepath.Join(root, "clone"+string(rune('a'+i)), "acme")
			if err := fsstore.Clone(ctx, "file://"+bare, dir); err != nil {
				t.Fatal(err)
			}
		}
		w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "agent" + string(rune('a'+i))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		if i == 0 {
			if err := w.SetRemote(ctx, "file://"+bare); err != nil {
				t.Fatal(err)
			}
		}
		clones, boards = append(clones, dir), append(boards, w)
	}
	return bare, clones, boards
}

// A person on one clone commits a note of their own and merges the
// remote's writes with a plain `git pull`, while the agents of both clones
// keep writing: the clone's agents are not refused while the person's
// merge has not reached the remote (the board carries it there, as it
// is), and every write is acknowledged at the version git then gives it.
func TestPersonsMergeIsCarriedToTheRemote(t *testing.T) {
	_, dirs, boards := remoteBoard(t, 2)
	a, b := boards[0], boards[1]
	var acks fsstoretest.Acks
	write := func(w *fsstore.Workspace, key, digest string, expect *int) *fsstore.UpdateResult {
		t.Helper()
		body := digest + "\n"
		res, err := w.As(fsstore.OpenCaller(w.Agent())).Update(fsstore.UpdateRequest{URI: key, Digest: digest, Body: &body, ExpectVersion: expect})
		if err != nil {
			t.Fatalf("%s writes %s: %v", w.Agent(), key, err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
		return res
	}
	write(a, "team/x", "x one", nil)
	if err := b.FetchRemote(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The person commits on b's clone, by hand.
	if err := os.WriteFile(filepath.Join(dirs[1], "team", "mine.md"), []byte("---\ndigest: the person's own\n---\nmine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dirs[1], "add", "team/mine.md")
	fixtures.Git(t, dirs[1], "commit", "-q", "-m", "my own note")
	write(a, "team/x", "x two", nil)
	fixtures.Git(t, dirs[1], "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
	if parents := fixtures.Git(t, dirs[1], "log", "-1", "--format=%p"); len(strings.Fields(parents)) != 2 {
		t.Fatalf("the person's pull made no merge: parents %q", parents)
	}
	// The remote moves on before the person pushes.
	write(a, "team/x", "x three", nil)
	write(a, "team/y", "y one", nil)
	// b's agents write: the merge goes to the remote with their writes.
	write(b, "team/z", "z one", ptr(0))
	got, err := b.As(fsstore.OpenCaller("b")).Get("team/x", false)
	if err != nil {
		t.Fatal(err)
	}
	write(b, "team/x", "x from b", ptr(got.Version))
	write(a, "team/y", "y two", nil)
	for _, w := range boards {
		if err := w.FetchRemote(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	log := fixtures.Git(t, dirs[0], "log", "--format=%s", "main")
	for _, want := range []string{"my own note", "x from b", "z one", "y two"} {
		if !strings.Contains(log, want) {
			t.Errorf("the remote's history lacks %q:\n%s", want, log)
		}
	}
	for _, dir := range dirs {
		fsstoretest.CheckVersionsAgree(t, dir, acks.List())
	}
}

// A person's merge that reached the remote counts a version of every note
// the other side changed (SPEC section 4): an agent's write built before
// its clone fetched that merge is built again on it, and acknowledged at
// the version git gives it after the merge, not the one it was built at.
func TestWriteAfterAPersonsMergeCountsIt(t *testing.T) {
	bare, dirs, boards := remoteBoard(t, 1)
	a := boards[0]
	var acks fsstoretest.Acks
	write := func(key, digest string, expect *int) *fsstore.UpdateResult {
		t.Helper()
		body := digest + "\n"
		res, err := a.As(fsstore.OpenCaller(a.Agent())).Update(fsstore.UpdateRequest{URI: key, Digest: digest, Body: &body, ExpectVersion: expect})
		if err != nil {
			t.Fatalf("write %s: %v", key, err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
		return res
	}
	write("team/x", "x one", nil)
	plain := filepath.Join(t.TempDir(), "plain")
	fixtures.Git(t, filepath.Dir(plain), "clone", "--quiet", "file://"+bare, plain)
	if err := os.WriteFile(filepath.Join(plain, "team", "mine.md"), []byte("---\ndigest: the person's own\n---\nmine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, plain, "add", "team/mine.md")
	fixtures.Git(t, plain, "commit", "-q", "-m", "my own note")
	two := write("team/x", "x two", nil)
	fixtures.Git(t, plain, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
	fixtures.Git(t, plain, "push", "--quiet", "origin", "HEAD:main")
	// The merge counts x (its first parent, the person's, had x one).
	three := write("team/x", "x three", nil)
	if three.Version != two.Version+2 {
		t.Errorf("the write after the person's merge: v%d, want v%d (the merge is a version of x)", three.Version, two.Version+2)
	}
	if _, err := a.As(fsstore.OpenCaller(a.Agent())).Update(fsstore.UpdateRequest{URI: "team/x", Digest: "stale", Body: ptr("stale\n"),
		ExpectVersion: ptr(two.Version)}); err == nil {
		t.Errorf("a write that expected v%d went through after the merge", two.Version)
	}
	fsstoretest.CheckVersionsAgree(t, dirs[0], acks.List())
}
