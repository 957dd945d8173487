package gitver_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

func TestMain(m *testing.M) {
	// The mixed-writers test starts this test binary again as a second
	// program process that commits through gitver (see runWriterProcess).
	if dir := os.Getenv(writerEnv); dir != "" {
		os.Exit(runWriterProcess(dir))
	}
	os.Exit(m.Run())
}

// fsck fails the test unless `git fsck --strict` finds nothing to report
// about the objects and refs reachable in dir (notices, such as an unborn
// HEAD, are not findings).
func fsck(t testing.TB, dir string) {
	t.Helper()
	cmd := fixtures.GitCmd(dir, "fsck", "--strict", "--no-dangling", "--no-progress")
	out, err := cmd.CombinedOutput()
	var findings []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && !strings.HasPrefix(line, "notice: ") {
			findings = append(findings, line)
		}
	}
	if err != nil || len(findings) > 0 {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
}

// gitInit makes dir a repository with the C git CLI, branch main.
func gitInit(t testing.TB, dir string) {
	t.Helper()
	fixtures.Git(t, dir, "init", "--quiet", "--initial-branch=main")
}

// revParse is `git rev-parse` of rev as a Hash.
func revParse(t testing.TB, dir, rev string) gitver.Hash {
	t.Helper()
	h, err := gitver.ParseHash(fixtures.GitOutput(t, dir, "rev-parse", "--verify", "--quiet", rev))
	if err != nil {
		t.Fatalf("git rev-parse %s: %v", rev, err)
	}
	return h
}

// newRepo is a repository made by gitver.Init in a fresh directory, opened
// without fsync (durability is not what these tests prove).
func newRepo(t testing.TB) (*gitver.Repo, string) {
	t.Helper()
	dir := t.TempDir()
	if err := gitver.Init(dir, "main"); err != nil {
		t.Fatalf("Init: %v", err)
	}
	return openRepo(t, dir), dir
}

func openRepo(t testing.TB, dir string) *gitver.Repo {
	t.Helper()
	r, err := gitver.Open(dir, gitver.Options{NoSync: true})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return r
}

// agent is the signature of plumbing commits: a zone with a half-hour offset
// and a fixed second, so the commit bytes git prints are known exactly.
var agent = gitver.Signature{
	Name:  "Agent Smith",
	Email: "smith@blackboard.local",
	When:  time.Unix(1700000000, 0).In(time.FixedZone("", -(3*3600 + 30*60))),
}

// writeBlob stores content through gitver and fails the test on error.
func writeBlob(t testing.TB, r *gitver.Repo, content string) gitver.Hash {
	t.Helper()
	h, err := r.WriteBlob([]byte(content))
	if err != nil {
		t.Fatalf("WriteBlob: %v", err)
	}
	return h
}

// commitFiles commits content changes (path -> content; "" deletes the path)
// on parent through gitver plumbing and returns the commit.
func commitFiles(t testing.TB, r *gitver.Repo, parent gitver.Hash, msg string, files map[string]string) gitver.Hash {
	t.Helper()
	changes := make(map[string]gitver.Hash, len(files))
	for p, content := range files {
		if content == "" {
			changes[p] = gitver.ZeroHash
			continue
		}
		changes[p] = writeBlob(t, r, content)
	}
	c, err := r.Commit(gitver.CommitRequest{Parent: parent, Changes: changes, Author: agent, Message: msg})
	if err != nil {
		t.Fatalf("Commit(%s): %v", msg, err)
	}
	return c
}

// commitAndMove commits on the branch head and moves the branch there.
func commitAndMove(t testing.TB, r *gitver.Repo, msg string, files map[string]string) gitver.Hash {
	t.Helper()
	head, err := r.Head()
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	c := commitFiles(t, r, head, msg, files)
	if err := r.UpdateBranch(head, c, agent, "commit: "+msg); err != nil {
		t.Fatalf("UpdateBranch: %v", err)
	}
	return c
}

// lsTree is `git ls-tree -r` of rev: path -> "mode type hash".
func lsTree(t testing.TB, dir, rev string) map[string]string {
	t.Helper()
	out := fixtures.GitOutput(t, dir, "ls-tree", "-r", "-z", "--full-tree", rev)
	m := map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		if rec == "" {
			continue
		}
		meta, path, ok := strings.Cut(rec, "\t")
		if !ok {
			t.Fatalf("git ls-tree: odd record %q", rec)
		}
		m[path] = meta
	}
	return m
}

// writeFile writes content at the slash-separated path under dir, making
// directories as needed.
func writeFile(t testing.TB, dir, path, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// diffMaps describes how got differs from want, "" when they are equal.
func diffMaps(got, want map[string]string) string {
	var b strings.Builder
	for _, k := range sortedKeys(want) {
		if g, ok := got[k]; !ok {
			b.WriteString("  missing " + k + ": want " + want[k] + "\n")
		} else if g != want[k] {
			b.WriteString("  " + k + ": got " + g + ", want " + want[k] + "\n")
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			b.WriteString("  extra " + k + ": " + got[k] + "\n")
		}
	}
	return b.String()
}
