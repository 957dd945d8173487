package gitver_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

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

// gitEnv is the environment of every git command the tests run: a fixed
// identity, no global or system config, and none of the caller's GIT_*
// variables (a GIT_DIR inherited from a hook would point git elsewhere). So
// no result depends on the machine's git config.
func gitEnv(extra ...string) []string {
	env := make([]string, 0, len(os.Environ())+8)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"GIT_AUTHOR_NAME=Ada Lovelace", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Lovelace", "GIT_COMMITTER_EMAIL=ada@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	)
	return append(env, extra...)
}

// requireGit skips a test that needs the C git CLI on a machine without it.
func requireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not on PATH")
	}
}

// gitCmd is a git command run in dir with gitEnv.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	return cmd
}

// runGit runs git in dir and returns its standard output, failing the test on
// a non-zero exit.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return runGitIn(t, dir, nil, nil, args...)
}

// runGitIn is runGit with extra environment variables and standard input.
func runGitIn(t testing.TB, dir string, env []string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := gitCmd(dir, args...)
	cmd.Env = append(cmd.Env, env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// gitOK reports whether git exits with status 0 (for commands such as
// `merge-base --is-ancestor` and `cat-file -e` that answer by exit status).
func gitOK(dir string, args ...string) bool {
	return gitCmd(dir, args...).Run() == nil
}

// fsck fails the test unless `git fsck --strict` finds nothing to report
// about the objects and refs reachable in dir (notices, such as an unborn
// HEAD, are not findings).
func fsck(t testing.TB, dir string) {
	t.Helper()
	cmd := gitCmd(dir, "fsck", "--strict", "--no-dangling", "--no-progress")
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
	runGit(t, dir, "init", "--quiet", "--initial-branch=main")
}

// revParse is `git rev-parse` of rev as a Hash.
func revParse(t testing.TB, dir, rev string) gitver.Hash {
	t.Helper()
	h, err := gitver.ParseHash(runGit(t, dir, "rev-parse", "--verify", "--quiet", rev))
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
	out := runGit(t, dir, "ls-tree", "-r", "-z", "--full-tree", rev)
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
