package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// A workspace directory removed and put back at the same path (restored
// from a backup, cloned again) while a server has it open: the server's
// files, opened through the old directory, are gone, while git, named by
// path, is the new one's. Compared, every note looked deleted by hand, and
// a server committed that into the new repository. Now nothing is compared
// or written, and the error says to restart the server; a server opened on
// the new directory works.
func TestWorkspaceReplacedUnderTheServer(t *testing.T) {
	fixtures.RequireGit(t)
	dir, w, v := openBoard(t)
	for _, key := range []string{"t/a", "t/b", "u/c"} {
		body := "kept"
		if _, err := v.Update(fsstore.UpdateRequest{URI: key, Digest: key, Body: &body, ExpectVersion: ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	before := fixtures.Git(t, dir, "rev-parse", "HEAD")
	backup := dir + ".backup"
	if out, err := fixtures.GitCmd(filepath.Dir(dir), "clone", "-q", "--no-local", dir, backup).CombinedOutput(); err != nil {
		t.Fatalf("back up the board: %v\n%s", err, out)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(backup, dir); err != nil {
		t.Fatal(err)
	}

	w.FilesChanged(nil, true)
	if _, err := w.CommitEdits(); !errors.Is(err, fsstore.ErrWorkspaceReplaced) {
		t.Fatalf("the look at the work tree of a replaced directory: %v", err)
	}
	body := "lost?"
	_, err := v.Update(fsstore.UpdateRequest{URI: "t/a", Digest: "after", Body: &body, ExpectVersion: ptr(1)})
	if !errors.Is(err, fsstore.ErrWorkspaceReplaced) || !strings.Contains(err.Error(), "restart the server") {
		t.Fatalf("a write to a replaced directory: %v", err)
	}
	if now := fixtures.Git(t, dir, "rev-parse", "HEAD"); now != before {
		t.Fatalf("the new directory's branch moved: %s, then %s:\n%s", before, now, fixtures.Git(t, dir, "log", "--stat", "-1"))
	}
	w.Close()

	// A server opened on the new directory has every note.
	w2, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if _, err := w2.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	n, err := w2.As(fsstore.OpenCaller("tester")).Get("t/a", true)
	if err != nil || n.Version != 1 {
		t.Fatalf("t/a on the new directory: %+v, %v", n, err)
	}
}
