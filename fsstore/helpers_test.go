package fsstore

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv makes the C git CLI independent of the machine's configuration, as
// a person with a configured identity would run it.
func gitEnv() []string {
	return append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada Person", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Person", "GIT_COMMITTER_EMAIL=ada@example.com")
}

// git runs the C git CLI in dir and returns its trimmed output.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the C git CLI is not installed")
	}
}

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
	res, err := w.Update(UpdateRequest{URI: uri, Digest: digest, Body: &body, ExpectVersion: &expect})
	if err != nil {
		t.Fatalf("update %s (expect %d): %v", uri, expect, err)
	}
	return res
}

func get(t testing.TB, w *Workspace, uri string) *NoteView {
	t.Helper()
	n, err := w.Get(uri, true)
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
	if st := git(t, w.Dir(), "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("git status is not clean:\n%s", st)
	}
}
