package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
)

func ptr[T any](v T) *T { return &v }

// openBoard makes a new board, opened without fsync, and the view of an
// open caller on it.
func openBoard(t *testing.T) (dir string, w *fsstore.Workspace, v *fsstore.View) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return dir, w, w.As(fsstore.OpenCaller("tester"))
}

// A write that leaves a note as it was makes no commit, and answers the
// version git holds: no reader counts a version that git does not.
func TestUnchangedWriteKeepsItsVersion(t *testing.T) {
	dir, w, v := openBoard(t)
	var acks fsstoretest.Acks
	write := func(req fsstore.UpdateRequest) *fsstore.UpdateResult {
		t.Helper()
		res, err := v.Update(req)
		if err != nil {
			t.Fatalf("update %s: %v", req.URI, err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
		return res
	}
	cursor := func() int {
		t.Helper()
		c, err := w.Cursor()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	body := "the same body\n"
	first := write(fsstore.UpdateRequest{URI: "t/same", Digest: "same", Body: &body})
	before := cursor()
	for range 3 {
		res := write(fsstore.UpdateRequest{URI: "t/same", Digest: "same", Body: &body})
		if res.Version != first.Version || !res.Unchanged {
			t.Errorf("identical rewrite: got v%d unchanged=%t, want v%d unchanged", res.Version, res.Unchanged, first.Version)
		}
	}
	cols := []string{"a", "b"}
	rows := [][]string{{"1", "2"}}
	write(fsstore.UpdateRequest{URI: "t/table", Digest: "table", Columns: cols, Rows: rows})
	write(fsstore.UpdateRequest{URI: "t/table", Digest: "table", Columns: cols, Rows: rows, ExpectVersion: ptr(1)})
	empty := ""
	write(fsstore.UpdateRequest{URI: "t/same", Digest: "same", AppendText: &empty})
	for range 2 {
		res, err := v.Link("bb://acme/t/same", "cites", []string{"t/table"})
		if err != nil {
			t.Fatal(err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
	}
	if got, want := cursor(), before+2; got != want {
		t.Errorf("cursor after identical writes and a table: got %d, want %d (a table and one link)", got, want)
	}
	fsstoretest.CheckVersionsAgree(t, dir, acks.List())
}

// A git command that has held git's index for more than a moment (a pull,
// a checkout of a large tree) makes a write answer a conflict that names
// the lock, without waiting for the command; once git is done, the write
// goes through, at the next version.
func TestWriteBesideALongGitCommand(t *testing.T) {
	fixtures.RequireGit(t)
	dir, _, v := openBoard(t)
	var acks fsstoretest.Acks
	body := "1\n"
	res, err := v.Update(fsstore.UpdateRequest{URI: "t/a", Digest: "a", Body: &body, ExpectVersion: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	acks.Add(res.URI, res.Version, res.Digest)

	lock := filepath.Join(dir, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now().Add(-5 * time.Second) // the command took git's index 5 s ago
	if err := os.Chtimes(lock, began, began); err != nil {
		t.Fatal(err)
	}
	body = "2\n"
	req := fsstore.UpdateRequest{URI: "t/a", Digest: "a", Body: &body, ExpectVersion: ptr(res.Version)}
	if _, err := v.Update(req); !errors.Is(err, fsstore.ErrConflict) || !strings.Contains(err.Error(), ".git/index.lock") {
		t.Errorf("a write while git holds its index: %v, want a conflict naming .git/index.lock", err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	res, err = v.Update(req)
	if err != nil {
		t.Fatalf("the write once git is done: %v", err)
	}
	if res.Version != 2 {
		t.Errorf("the write once git is done: v%d, want v2", res.Version)
	}
	acks.Add(res.URI, res.Version, res.Digest)
	fsstoretest.CheckVersionsAgree(t, dir, acks.List())
}
