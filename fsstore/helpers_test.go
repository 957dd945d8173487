package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// newWorkspace initializes a workspace named "acme" in a temporary directory
// and opens it. Durability is off unless durable: fsync proves nothing a
// crash of the process would not, and costs time.
func newWorkspace(t testing.TB, durable bool) *Workspace {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme")
	if err := Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	return openWorkspace(t, dir, durable)
}

func openWorkspace(t testing.TB, dir string, durable bool) *Workspace {
	t.Helper()
	w, err := Open(dir, Options{NoSync: !durable, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func ptr[T any](v T) *T { return &v }

// put writes a body with compare-and-swap and fails the test on error.
func put(t testing.TB, w *Workspace, uri string, expect int, digest, body string) *UpdateResult {
	t.Helper()
	res, err := agentView(w).Update(UpdateRequest{URI: uri, Digest: digest, Body: &body, ExpectVersion: &expect})
	if err != nil {
		t.Fatalf("update %s (expect %d): %v", uri, expect, err)
	}
	return res
}

func get(t testing.TB, w *Workspace, uri string) *NoteView {
	t.Helper()
	n, err := agentView(w).Get(uri, true)
	if err != nil {
		t.Fatalf("get %s: %v", uri, err)
	}
	return n
}

func readFile(t testing.TB, w *Workspace, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.Dir(), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, w *Workspace, rel, content string) {
	t.Helper()
	p := filepath.Join(w.Dir(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func assertKind(t testing.TB, err, kind error) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error = %v, want %v", err, kind)
	}
}

// assertClean fails unless git sees no difference between HEAD, its index
// and the files.
func assertClean(t testing.TB, w *Workspace) {
	t.Helper()
	if st := fixtures.Git(t, w.Dir(), "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("git status is not clean:\n%s", st)
	}
}

// agentView is the board as the workspace's agent sees it in open mode: what
// the CLI and a server without an access file use.
func agentView(w *Workspace) *View { return w.As(OpenCaller(w.Agent())) }
