package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// boardWithRemote makes a bare repository, the remote all of a test's
// clones share, reached over file://, and a first board attached to it. It
// returns the remote's URL, its path, and the first board's directory.
func boardWithRemote(t *testing.T) (url, bare, first string) {
	t.Helper()
	return boardWithRemoteOver(t, "file")
}

// boardWithRemoteOver is boardWithRemote over a transport: "file", or
// "http", git's own smart HTTP server (git http-backend) behind a test
// HTTP server.
func boardWithRemoteOver(t *testing.T, transport string) (url, bare, first string) {
	t.Helper()
	root := t.TempDir()
	bare = filepath.Join(root, "board.git")
	fixtures.Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	url = "file://" + bare
	if transport == "http" {
		fixtures.Git(t, bare, "config", "http.receivepack", "true")
		url = smartHTTP(t, root) + "/board.git"
	}
	first = filepath.Join(root, "acme")
	runCLI(t, first, "init")
	if out := runCLI(t, first, "remote", "set", url); !strings.Contains(out, "follows") {
		t.Fatalf("remote set: %s", out)
	}
	return url, bare, first
}

// smartHTTP serves the repositories under root over git's smart HTTP
// protocol, through git's own CGI program, and returns the server's URL.
func smartHTTP(t *testing.T, root string) string {
	t.Helper()
	execPath := strings.TrimSpace(fixtures.GitOutput(t, root, "--exec-path"))
	backend := &cgi.Handler{
		Path: filepath.Join(execPath, "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"},
	}
	srv := httptest.NewServer(backend)
	t.Cleanup(srv.Close)
	return srv.URL
}

// cloneBoard makes dir a clone of the board at url, through the CLI.
func cloneBoard(t *testing.T, url, dir string) {
	t.Helper()
	cmd := exec.Command(testBinary, "clone", url, dir)
	cmd.Env = mcpEnv("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clone %s: %v\n%s", url, err, out)
	}
}

// withClones is first and n clones more of the board at url, each a
// directory of its own, as machines.
func withClones(t *testing.T, url, first string, n int) []string {
	t.Helper()
	dirs := []string{first}
	for i := range n {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("c%d", i+1))
		cloneBoard(t, url, dir)
		dirs = append(dirs, dir)
	}
	return dirs
}

// holdingHook installs a hook of the bare remote (pre-receive or
// post-receive) that, for a push whose "old new ref" line makes the shell
// condition cond true, holds it for a second and then ends with exit
// ("exit 0", "exit 1"). held waits until a push is being held; released
// waits until the hook let it go and the remote is done with it, and
// removes the hook.
func holdingHook(t *testing.T, bare, hook, cond, exit string) (held, released func()) {
	t.Helper()
	marker, done := filepath.Join(t.TempDir(), "hook-ran"), filepath.Join(t.TempDir(), "hook-done")
	script := fmt.Sprintf("#!/bin/sh\nread old new ref\nif %s; then\ntouch %q\nsleep 1\ntouch %q\n%s\nfi\n", cond, marker, done, exit)
	path := filepath.Join(bare, "hooks", hook)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) func() bool { return func() bool { _, err := os.Stat(p); return err == nil } }
	held = func() { t.Helper(); eventually(t, "the hook holds a push", exists(marker)) }
	released = func() {
		t.Helper()
		eventually(t, "the hook ends", exists(done))
		// The remote moves its branch (or not) right after the hook.
		time.Sleep(500 * time.Millisecond)
		os.Remove(path)
	}
	return held, released
}

// pushMoments are the moments a push is in the remote's hands when its
// writer is killed: held by a hook before the remote takes it (which then
// takes it or refuses it), and after.
var pushMoments = []struct{ name, hook, exit string }{
	{"while the remote checks it", "pre-receive", "exit 0"},
	{"and the remote refuses it", "pre-receive", "exit 1"},
	{"once the remote took it", "post-receive", "exit 0"},
}

// putCmd is a CLI write of one note.
func putCmd(dir, key, digest, body string, expect int) *exec.Cmd {
	return cliCommand(dir, "put", key, "--digest", digest, "--body", body, "--expect", strconv.Itoa(expect))
}

// remoteLog is the remote branch's history, oldest first: "subject" lines.
func remoteLog(t *testing.T, bare string) []string {
	t.Helper()
	branch := strings.TrimSpace(fixtures.GitOutput(t, bare, "symbolic-ref", "--short", "HEAD"))
	if fixtures.GitOutput(t, bare, "for-each-ref", "refs/heads/"+branch) == "" {
		branch = "main"
	}
	return strings.Split(strings.TrimSpace(fixtures.GitOutput(t, bare, "log", "--reverse", "--format=%s", branch)), "\n")
}

// Three clones write at once, each its own notes, through separate CLI
// processes: every write is acknowledged and on the remote, the history is
// linear, and every clone (and a fresh one, after reindex) gives every note
// the same version.
func TestRemoteClonesShareOneBoard(t *testing.T) {
	for _, transport := range []string{"file", "http"} {
		t.Run(transport, func(t *testing.T) { clonesShareOneBoard(t, transport) })
	}
}

func clonesShareOneBoard(t *testing.T, transport string) {
	url, bare, first := boardWithRemoteOver(t, transport)
	clones := withClones(t, url, first, 2)
	const perClone = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	var took []time.Duration
	for i, dir := range clones {
		wg.Go(func() {
			for n := range perClone {
				key := fmt.Sprintf("c%d/n%d", i, n)
				start := time.Now()
				out, err := putCmd(dir, key, fmt.Sprintf("clone %d note %d", i, n), "x", 0).CombinedOutput()
				if err != nil {
					t.Errorf("put %s on clone %d: %v\n%s", key, i, err, out)
					return
				}
				mu.Lock()
				took = append(took, time.Since(start))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	history := remoteLog(t, bare)
	if got, want := len(history), 1+len(clones)*perClone; got != want {
		t.Fatalf("the remote has %d commits, want %d:\n%s", got, want, strings.Join(history, "\n"))
	}
	if merges := fixtures.GitOutput(t, bare, "rev-list", "--merges", "--all"); merges != "" {
		t.Errorf("the remote's history has merges:\n%s", merges)
	}
	listsAsAFreshClone(t, url, clones...)
	t.Logf("over %s: %d writes from %d clones at once, each a CLI process: %s each on average", transport, len(took), len(clones), average(took))
}

func average(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	if len(ds) == 0 {
		return 0
	}
	return (sum / time.Duration(len(ds))).Round(time.Millisecond)
}

// Clones race one expect_version: exactly one write wins, the others are
// told of the conflict with the winner's version, whatever clone they are
// on.
func TestRemoteOneExpectVersionWins(t *testing.T) {
	url, _, first := boardWithRemote(t)
	runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	clones := withClones(t, url, first, 3)
	for round := 1; round <= 4; round++ {
		var wg sync.WaitGroup
		results := make([]error, len(clones))
		outs := make([]string, len(clones))
		for i, dir := range clones {
			wg.Go(func() {
				out, err := putCmd(dir, "team/plan", fmt.Sprintf("plan %d by clone %d", round+1, i), "x", round).CombinedOutput()
				results[i], outs[i] = err, string(out)
			})
		}
		wg.Wait()
		won := 0
		for i, err := range results {
			switch {
			case err == nil:
				won++
			case !strings.Contains(outs[i], "you expected version "+strconv.Itoa(round)+"; the note is at version "+strconv.Itoa(round+1)):
				t.Errorf("round %d, clone %d: %v\n%s", round, i, err, outs[i])
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d writes won, want exactly 1:\n%s", round, won, strings.Join(outs, "\n"))
		}
	}
}

// A server on one clone follows what the others write (it fetches in the
// background), and what its agent writes reaches them.
func TestRemoteServerFollowsOtherClones(t *testing.T) {
	url, _, first := boardWithRemote(t)
	second := filepath.Join(t.TempDir(), "b")
	cloneBoard(t, url, second)
	s := startMCPGo(t, second, "agent-b")
	runCLI(t, first, "put", "team/plan", "--digest", "from the first clone", "--body", "1", "--expect", "0")
	start := time.Now()
	it := s.waitVersion("team/plan", 1)
	t.Logf("the server on the other clone read the write %s after it was acknowledged", time.Since(start).Round(time.Millisecond))
	if it.Digest != "from the first clone" {
		t.Errorf("the server reads %q", it.Digest)
	}
	s.write(map[string]any{"uri": "team/plan", "digest": "from the server", "body": "2", "expect_version": 1})
	if out := runCLI(t, first, "get", "team/plan"); !strings.Contains(out, "v2\ndigest: from the server") {
		t.Errorf("the first clone reads:\n%s", out)
	}
	s.closeClean()
	checkWorkspace(t, second)
	checkWorkspace(t, first)
}

// With the remote out of reach, writes are refused at once with the reason
// (nothing written, nothing left to go later), reads work, and writes go
// through again once it is back.
func TestRemoteUnreachable(t *testing.T) {
	_, bare, first := boardWithRemote(t)
	runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	if err := os.Rename(bare, bare+".away"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, err := putCmd(first, "team/plan", "plan 2", "2", 1).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "cannot take the write") || !strings.Contains(string(out), "nothing was written") {
		t.Fatalf("a write with the remote away: %v\n%s", err, out)
	}
	t.Logf("refused in %s: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
	if got := runCLI(t, first, "get", "team/plan"); !strings.Contains(got, "v1\ndigest: plan 1") {
		t.Errorf("a read with the remote away:\n%s", got)
	}
	checkWorkspace(t, first)
	if err := os.Rename(bare+".away", bare); err != nil {
		t.Fatal(err)
	}
	runCLI(t, first, "put", "team/plan", "--digest", "plan 2", "--body", "2", "--expect", "1")
	if history := remoteLog(t, bare); !strings.HasSuffix(history[len(history)-1], "plan 2") {
		t.Errorf("the remote after it came back:\n%s", strings.Join(history, "\n"))
	}
}

// A person commits a note on one clone without pushing while an agent on
// another clone writes the same note: the remote's content stays the note,
// the person's is kept as a sibling note linked `contradicts` to it (and
// their commit under a rescue ref), and their other changes go through.
func TestRemotePersonsCommitContradicted(t *testing.T) {
	url, bare, first := boardWithRemote(t)
	runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	second := filepath.Join(t.TempDir(), "b")
	cloneBoard(t, url, second)

	writeTree(t, first, "team/plan.md", handNote("the person's plan", "mine\n"))
	writeTree(t, first, "team/other.md", handNote("another note of theirs", "other\n"))
	fixtures.Git(t, first, "add", "team")
	fixtures.Git(t, first, "commit", "-q", "-m", "my plan")
	person := strings.TrimSpace(fixtures.GitOutput(t, first, "rev-parse", "--short=7", "HEAD"))

	runCLI(t, second, "put", "team/plan", "--digest", "the agent's plan", "--body", "2", "--expect", "1")
	runCLI(t, first, "put", "team/third", "--digest", "third", "--body", "3", "--expect", "0")

	if got := runCLI(t, first, "get", "team/plan"); !strings.Contains(got, "digest: the agent's plan") {
		t.Errorf("the note after the person's commit met the remote's:\n%s", got)
	}
	sibling := runCLI(t, first, "get", "team/plan-"+person, "--full")
	if !strings.Contains(sibling, "the person's plan") || !strings.Contains(sibling, "contradicts") || !strings.Contains(sibling, "team/plan") {
		t.Errorf("the person's version as a sibling note:\n%s", sibling)
	}
	if got := runCLI(t, second, "get", "team/other"); !strings.Contains(got, "another note of theirs") {
		t.Errorf("the person's other note on the other clone:\n%s", got)
	}
	if refs := fixtures.GitOutput(t, first, "for-each-ref", "--format=%(refname)", "refs/blackboard/rescued/"); refs == "" {
		t.Error("no rescue ref keeps the person's commit as it was")
	}
	if merges := fixtures.GitOutput(t, bare, "rev-list", "--merges", "--all"); merges != "" {
		t.Errorf("the remote's history has merges:\n%s", merges)
	}
	checkWorkspace(t, first)
}

// Someone force-pushes a rewritten history to the remote (here: the last
// two writes taken out). Writes are refused with what happened and what to
// do; `remote repair` pushes a merge, never by force; afterwards no note's
// version is lower than before, and writes go through again.
func TestRemoteForcePushRepaired(t *testing.T) {
	url, bare, first := boardWithRemote(t)
	for v := range 3 {
		runCLI(t, first, "put", "team/plan", "--digest", fmt.Sprintf("plan %d", v+1), "--body", strconv.Itoa(v+1), "--expect", strconv.Itoa(v))
	}
	// A person's plain git clone, rewound and force-pushed.
	plain := filepath.Join(t.TempDir(), "plain")
	fixtures.Git(t, filepath.Dir(plain), "clone", "--quiet", url, plain)
	fixtures.Git(t, plain, "reset", "--quiet", "--hard", "HEAD~2")
	fixtures.Git(t, plain, "push", "--quiet", "--force", "origin", "HEAD")

	out, err := putCmd(first, "team/plan", "plan 4", "4", 3).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "was rewritten") || !strings.Contains(string(out), "remote repair") {
		t.Fatalf("a write after the force-push: %v\n%s", err, out)
	}
	if got := runCLI(t, first, "get", "team/plan"); !strings.Contains(got, "v3\n") {
		t.Errorf("a read after the force-push:\n%s", got)
	}
	if out := runCLI(t, first, "remote", "repair"); !strings.Contains(out, "a merge") {
		t.Errorf("remote repair: %s", out)
	}
	if got := fixtures.GitOutput(t, bare, "rev-list", "--count", "--merges", "main"); strings.TrimSpace(got) != "1" {
		t.Errorf("the remote has %s merges after the repair, want 1", got)
	}
	// The merge differs from the rewritten side's content: it counts, so
	// the note's version goes up, never down.
	if got := runCLI(t, first, "get", "team/plan"); !strings.Contains(got, "v4\ndigest: plan 3") {
		t.Errorf("after the repair the note reads:\n%s", got)
	}
	runCLI(t, first, "put", "team/plan", "--digest", "plan 4", "--body", "4", "--expect", "4")
	fresh := filepath.Join(t.TempDir(), "fresh")
	cloneBoard(t, url, fresh)
	if got := runCLI(t, fresh, "get", "team/plan"); !strings.Contains(got, "v5\ndigest: plan 4") {
		t.Errorf("a fresh clone reads:\n%s", got)
	}
	checkWorkspace(t, first)
}

// A writer killed (kill -9) while its push is in the remote's hands: while
// the remote checks it (a pre-receive hook that sleeps, then takes it or
// refuses it), and once the remote took it (a post-receive hook that
// sleeps). The write was never acknowledged; whether it counts is the
// remote's to say, and the clone comes to exactly what the remote holds,
// files and all, at its next use; another clone reads the same.
func TestRemoteWriterKilledDuringPush(t *testing.T) {
	for _, tt := range pushMoments {
		t.Run(tt.name, func(t *testing.T) {
			url, bare, first := boardWithRemote(t)
			runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
			held, released := holdingHook(t, bare, tt.hook, "true", tt.exit)
			cmd := putCmd(first, "team/plan", "plan 2", "2", 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			held()
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			released() // the push goes on without the writer, and ends

			remoteHead := strings.TrimSpace(fixtures.GitOutput(t, bare, "rev-parse", "main"))
			counted := strings.HasSuffix(remoteLog(t, bare)[len(remoteLog(t, bare))-1], "plan 2")
			want := "v1\ndigest: plan 1"
			if counted {
				want = "v2\ndigest: plan 2"
			}
			if got := runCLI(t, first, "get", "team/plan"); !strings.Contains(got, want) {
				t.Errorf("the killed writer's clone reads (the remote counted the write: %v):\n%s", counted, got)
			}
			if local := strings.TrimSpace(fixtures.GitOutput(t, first, "rev-parse", "main")); local != remoteHead {
				t.Errorf("the clone is at %s, the remote at %s", local, remoteHead)
			}
			checkWorkspace(t, first)
			other := filepath.Join(t.TempDir(), "b")
			cloneBoard(t, url, other)
			if got := runCLI(t, other, "get", "team/plan"); !strings.Contains(got, want) {
				t.Errorf("another clone reads:\n%s", got)
			}
			if want := tt.exit == "exit 0"; counted != want {
				t.Errorf("the remote counted the write: %v, want %v", counted, want)
			}
		})
	}
}

// A person works with plain git on one clone (commits, `git pull` that
// merges, `git push`) while an agent writes from another: every note's
// versions map to one content each, never go down, and every acknowledged
// write is in the history.
func TestRemotePersonPullsAndPushes(t *testing.T) {
	url, _, first := boardWithRemote(t)
	runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	plain := filepath.Join(t.TempDir(), "plain")
	fixtures.Git(t, filepath.Dir(plain), "clone", "--quiet", url, plain)

	seen := map[string]map[int]string{} // note -> version -> digest
	look := func(dir string) {
		t.Helper()
		for _, key := range []string{"team/plan", "team/mine"} {
			out, err := cliCommand(dir, "get", key).CombinedOutput()
			if err != nil {
				continue
			}
			head, digest, _ := strings.Cut(string(out), "\n")
			v, _ := strconv.Atoi(head[strings.LastIndex(head, " v")+2:])
			digest = strings.TrimPrefix(strings.SplitN(digest, "\n", 2)[0], "digest: ")
			if seen[key] == nil {
				seen[key] = map[int]string{}
			}
			if d, ok := seen[key][v]; ok && d != digest {
				t.Errorf("%s v%d stands for %q and %q", key, v, d, digest)
			}
			seen[key][v] = digest
			for older := range seen[key] {
				if older > v && dir == first {
					t.Errorf("%s went from v%d down to v%d", key, older, v)
				}
			}
		}
	}
	for round := range 4 {
		out := runCLI(t, first, "get", "team/plan")
		v, _ := strconv.Atoi(strings.TrimSpace(out[strings.Index(out, " v")+2 : strings.Index(out, "\n")]))
		runCLI(t, first, "put", "team/plan", "--digest", fmt.Sprintf("agent round %d", round), "--body", "x", "--expect", strconv.Itoa(v))
		writeTree(t, plain, "team/mine.md", handNote(fmt.Sprintf("person round %d", round), "y\n"))
		fixtures.Git(t, plain, "add", "team/mine.md")
		fixtures.Git(t, plain, "commit", "-q", "-m", fmt.Sprintf("person round %d", round))
		fixtures.Git(t, plain, "pull", "--quiet", "--no-rebase", "--no-edit", "origin", "main")
		fixtures.Git(t, plain, "push", "--quiet", "origin", "HEAD:main")
		look(first)
	}
	for round := range 4 {
		if !strings.Contains(strings.Join(remoteLogAll(t, plain), "\n"), fmt.Sprintf("agent round %d", round)) {
			t.Errorf("agent round %d is not in the history", round)
		}
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	cloneBoard(t, url, fresh)
	look(fresh)
	if a, b := runCLI(t, first, "ls", "--name"), runCLI(t, fresh, "ls", "--name"); a != b {
		t.Errorf("the agent's clone lists\n%s\na fresh clone lists\n%s", a, b)
	}
	checkWorkspace(t, first)
}

// remoteLogAll is every subject of a repository's history.
func remoteLogAll(t *testing.T, dir string) []string {
	t.Helper()
	fixtures.Git(t, dir, "fetch", "--quiet", "origin")
	return strings.Split(fixtures.GitOutput(t, dir, "log", "--format=%s", "origin/main"), "\n")
}

// `remote check` protects a bare repository it can reach: a force-push is
// refused there from then on.
func TestRemoteCheckProtectsABareRepository(t *testing.T) {
	url, bare, first := boardWithRemote(t)
	runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	if out := runCLI(t, first, "remote", "check"); !strings.Contains(out, "refuses pushes that rewrite") {
		t.Fatalf("remote check: %s", out)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	fixtures.Git(t, filepath.Dir(plain), "clone", "--quiet", url, plain)
	fixtures.Git(t, plain, "reset", "--quiet", "--hard", "HEAD~1")
	cmd := fixtures.GitCmd(plain, "push", "--quiet", "--force", "origin", "HEAD:main")
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("a force-push went through after remote check:\n%s", out)
	}
	if got := remoteLog(t, bare); !strings.HasSuffix(got[len(got)-1], "plan 1") {
		t.Errorf("the remote's history: %q", got)
	}
}

// Attaching a board to a remote that holds another board's history is
// refused with the reason, and the board is left as it was; `remote` then
// says the board has none. A remote that holds nothing but is not a board
// cannot be cloned.
func TestRemoteSetRefusesAnotherHistory(t *testing.T) {
	url, _, _ := boardWithRemote(t)
	other := filepath.Join(t.TempDir(), "other")
	runCLI(t, other, "init")
	out, err := cliCommand(other, "remote", "set", url).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "another history") {
		t.Fatalf("remote set to another board's remote: %v\n%s", err, out)
	}
	if remotes := fixtures.GitOutput(t, other, "remote"); remotes != "" {
		t.Errorf("the refused remote stayed: %q", remotes)
	}
	if got := runCLI(t, other, "remote"); !strings.Contains(got, "no remote") {
		t.Errorf("remote after the refusal: %s", got)
	}
	empty := filepath.Join(t.TempDir(), "empty.git")
	fixtures.Git(t, filepath.Dir(empty), "init", "--quiet", "--bare", empty)
	cmd := exec.Command(testBinary, "clone", "file://"+empty, filepath.Join(t.TempDir(), "c"))
	cmd.Env = mcpEnv("")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "is empty") {
		t.Errorf("clone of an empty remote: %v\n%s", err, out)
	}
}

// casInput and casOutput are one compare-and-swap write of the note the
// linearizability test races for.
type casInput struct {
	expect int
	value  string
}

type casOutput struct {
	ok      bool
	version int // the new version when ok
}

// casModel is the note as one register: its version and its value. A
// write with expect_version equal to the version moves it on by one;
// otherwise it is a conflict.
var casModel = porcupine.Model{
	Init: func() any { return casState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(casState), input.(casInput), output.(casOutput)
		if !out.ok {
			return s.version != in.expect, s
		}
		if s.version != in.expect || out.version != in.expect+1 {
			return false, s
		}
		return true, casState{version: in.expect + 1, value: in.value}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(casInput), output.(casOutput)
		return fmt.Sprintf("write(expect %d, %s) -> ok %v v%d", in.expect, in.value, out.ok, out.version)
	},
}

type casState struct {
	version int
	value   string
}

// The compare-and-swap of four clones' servers, each an MCP server process
// on its own clone of one remote, racing for one note, is linearizable
// (porcupine checks the history of every write, with when it was sent and
// when it was answered): every acknowledged version follows the one its
// writer expected, and every conflict was true at some moment of the call.
func TestRemoteCompareAndSwapIsLinearizable(t *testing.T) {
	url, _, first := boardWithRemote(t)
	dirs := withClones(t, url, first, 3)
	var servers []*session
	for i, dir := range dirs {
		servers = append(servers, startMCPGo(t, dir, fmt.Sprintf("agent-%d", i)))
	}
	const perClient = 15
	var mu sync.Mutex
	var history []porcupine.Operation
	start := time.Now()
	var wg sync.WaitGroup
	for c, s := range servers {
		wg.Go(func() {
			expect := 0
			for i := range perClient {
				in := casInput{expect: expect, value: fmt.Sprintf("c%d-%d", c, i)}
				call := time.Since(start).Nanoseconds()
				res := s.call("update_state", map[string]any{"uri": "team/race", "digest": in.value, "body": "x", "expect_version": in.expect})
				ret := time.Since(start).Nanoseconds()
				var out casOutput
				switch {
				case !res.isError:
					out = casOutput{ok: true, version: decodeWrite(t, res.text).Version}
					expect = out.version
				case strings.Contains(res.text, "the note is at version "):
					rest := res.text[strings.Index(res.text, "the note is at version ")+len("the note is at version "):]
					n, _ := strconv.Atoi(strings.TrimRight(strings.Fields(rest)[0], ",;."))
					expect = n
				case strings.Contains(res.text, "does not exist"):
					expect = 0
				default:
					t.Errorf("client %d: %s", c, res.text)
					return
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	won := 0
	for _, op := range history {
		if op.Output.(casOutput).ok {
			won++
		}
	}
	if won == 0 {
		t.Fatal("no write went through: nothing was raced")
	}
	if !porcupine.CheckOperations(casModel, history) {
		t.Fatalf("the history of %d writes across %d clones is not linearizable", len(history), len(servers))
	}
	t.Logf("%d writes from %d clones, %d acknowledged, %d conflicts: linearizable", len(history), len(servers), won, len(history)-won)
	for _, s := range servers {
		s.closeClean()
	}
}

// With another branch checked out on a clone, a write still goes to the
// remote and to the board's branch only; checking the board's branch out
// again brings its file, and nothing is left staged.
func TestRemoteWriteWhileAnotherBranchIsCheckedOut(t *testing.T) {
	url, _, first := boardWithRemote(t)
	runCLI(t, first, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	fixtures.Git(t, first, "checkout", "-q", "-b", "side")
	runCLI(t, first, "put", "team/plan", "--digest", "plan 2", "--body", "2", "--expect", "1")
	if got := readTree(t, first, "team/plan.md"); strings.Contains(got, "plan 2") {
		t.Errorf("the write reached the other branch's checkout: %q", got)
	}
	other := filepath.Join(t.TempDir(), "b")
	cloneBoard(t, url, other)
	if got := runCLI(t, other, "get", "team/plan"); !strings.Contains(got, "v2\ndigest: plan 2") {
		t.Errorf("another clone reads:\n%s", got)
	}
	fixtures.Git(t, first, "checkout", "-q", "main")
	if got := readTree(t, first, "team/plan.md"); !strings.Contains(got, "plan 2") {
		t.Errorf("the board's branch checked out again holds: %q", got)
	}
	checkWorkspace(t, first)
}

// Two clones, each with its server, write 200 notes each at once, over git's
// smart HTTP: every write is acknowledged and on the remote, the history is
// linear, and both clones and a fresh one (after reindex) give every note the
// same version.
func TestRemoteTwoServersTwoHundredWritesEach(t *testing.T) {
	url, bare, first := boardWithRemoteOver(t, "http")
	slowPushes(t, bare)
	second := filepath.Join(t.TempDir(), "b")
	cloneBoard(t, url, second)
	servers := []*session{startMCPGo(t, first, "agent-a"), startMCPGo(t, second, "agent-b")}
	const perClone = 200
	start := time.Now()
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			for n := range perClone {
				s.write(map[string]any{"uri": fmt.Sprintf("c%d/n%d", i, n), "digest": fmt.Sprintf("note %d of clone %d", n, i), "body": "x", "expect_version": 0})
			}
		})
	}
	wg.Wait()
	t.Logf("%d writes from 2 servers on 2 clones over smart HTTP in %s", 2*perClone, time.Since(start).Round(time.Millisecond))
	if got, want := len(remoteLog(t, bare)), 1+2*perClone; got != want {
		t.Errorf("the remote has %d commits, want %d", got, want)
	}
	if merges := fixtures.GitOutput(t, bare, "rev-list", "--merges", "--all"); merges != "" {
		t.Errorf("the remote's history has merges:\n%s", merges)
	}
	for _, s := range servers {
		s.closeClean()
	}
	listsAsAFreshClone(t, url, first, second)
	checkWorkspace(t, first)
	checkWorkspace(t, second)
}

// `remote` says where a clone stands: the remote, when it last heard from
// it, what waits to go (a person's commit) and how far behind it is.
func TestRemoteStatus(t *testing.T) {
	url, _, first := boardWithRemote(t)
	second := filepath.Join(t.TempDir(), "b")
	cloneBoard(t, url, second)
	runCLI(t, second, "put", "team/plan", "--digest", "plan 1", "--body", "1", "--expect", "0")
	writeTree(t, first, "team/mine.md", handNote("mine", "m\n"))
	fixtures.Git(t, first, "add", "team/mine.md")
	fixtures.Git(t, first, "commit", "-q", "-m", "my note")
	out := runCLI(t, first, "remote")
	for _, want := range []string{"remote origin " + url, "last sync 0s ago", "behind by 1 commit:", "waiting to go: 1 commit", "my note"} {
		if !strings.Contains(out, want) {
			t.Errorf("remote does not say %q:\n%s", want, out)
		}
	}
	if out, _ := cliCommand(first, "health").CombinedOutput(); !strings.Contains(string(out), "1 local commit is not on origin yet") {
		t.Errorf("health does not tell of the commit waiting to go:\n%s", out)
	}
	runCLI(t, first, "get", "team/plan") // a read brings the clone to the remote, and its commit goes
	if out := runCLI(t, first, "remote"); strings.Contains(out, "behind") || strings.Contains(out, "waiting") {
		t.Errorf("after a read, remote still says:\n%s", out)
	}
}

// Writes that come to one server while a push is in flight go out together
// in the next push: many writes at once make few pushes, each write still its
// own commit, all acknowledged, each note's versions in order on the remote.
// Then the same while another clone pushes too, so that batches are refused
// and built again on what it pushed.
func TestRemoteBatchesWrites(t *testing.T) {
	url, bare, first := boardWithRemote(t)
	pushes := recordPushes(t, bare)
	countPushes := func() int { return len(pushes()) }
	second := filepath.Join(t.TempDir(), "b")
	cloneBoard(t, url, second)
	a, b := startMCPGo(t, first, "agent-a"), startMCPGo(t, second, "agent-b")
	const writers, perWriter = 8, 10
	// Each writer writes its own note perWriter times, with compare-and-swap.
	run := func(s *session, prefix string, n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				key := fmt.Sprintf("%s/n%d", prefix, i)
				for v := 1; v <= perWriter; v++ {
					got := s.write(map[string]any{"uri": key, "digest": fmt.Sprintf("%s v%d", key, v), "body": strconv.Itoa(v),
						"expect_version": v - 1})
					if got.Version != v {
						t.Errorf("%s: acknowledged as version %d, want %d", key, got.Version, v)
					}
				}
			})
		}
		wg.Wait()
	}

	before := countPushes()
	start := time.Now()
	run(a, "alone", writers)
	alone := countPushes() - before
	t.Logf("%d writes from %d writers on one server in %s: %d pushes", writers*perWriter, writers,
		time.Since(start).Round(time.Millisecond), alone)
	if alone > writers*perWriter/2 {
		t.Errorf("%d writes made %d pushes, want at most %d", writers*perWriter, alone, writers*perWriter/2)
	}

	before = countPushes()
	start = time.Now()
	var wg sync.WaitGroup
	wg.Go(func() { run(a, "racing-a", writers) })
	wg.Go(func() { run(b, "racing-b", 2) })
	wg.Wait()
	t.Logf("%d writes from two clones at once in %s: %d pushes", (writers+2)*perWriter,
		time.Since(start).Round(time.Millisecond), countPushes()-before)

	// Every write is its own commit on the remote, each note's versions in
	// order, in a linear history.
	log := remoteLog(t, bare)
	if got, want := len(log), 1+(2*writers+2)*perWriter; got != want {
		t.Errorf("the remote has %d commits, want %d", got, want)
	}
	last := map[string]int{}
	for _, subject := range log {
		var key string
		var v int
		if _, err := fmt.Sscanf(subject, "update %s v%d:", &key, &v); err != nil {
			continue
		}
		if v != last[key]+1 {
			t.Errorf("on the remote, %s goes from version %d to %d", key, last[key], v)
		}
		last[key] = v
	}
	if merges := fixtures.GitOutput(t, bare, "rev-list", "--merges", "--all"); merges != "" {
		t.Errorf("the remote's history has merges:\n%s", merges)
	}
	a.closeClean()
	b.closeClean()
	listsAsAFreshClone(t, url, first, second)
	checkWorkspace(t, first)
	checkWorkspace(t, second)
}

// Pushes to a remote are paced when git config blackboard.pushInterval says
// so (as they are by default to a host that asks for few pushes): writes
// that come meanwhile wait and go out together in the next push, and no two
// pushes come closer than the interval.
func TestRemotePushesArePaced(t *testing.T) {
	_, bare, first := boardWithRemote(t)
	fixtures.Git(t, first, "config", "blackboard.pushInterval", "1s")
	pushes := recordPushes(t, bare)
	s := startMCPGo(t, first, "agent-a")
	const writers, perWriter = 4, 5
	start := time.Now()
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for v := 1; v <= perWriter; v++ {
				s.write(map[string]any{"uri": fmt.Sprintf("paced/n%d", i), "digest": fmt.Sprintf("v%d", v), "body": "x", "expect_version": v - 1})
			}
		})
	}
	wg.Wait()
	times := pushes()
	t.Logf("%d writes in %s made %d pushes", writers*perWriter, time.Since(start).Round(time.Millisecond), len(times))
	pushedApart(t, times, time.Second)
	// Each writer's next write waits for its last: unpaced, every write
	// would be a push of its own. How many rounds the four writers make
	// depends on the machine's load, so the bound is half the writes.
	if len(times) > writers*perWriter/2 {
		t.Errorf("%d writes made %d pushes; paced, writes that wait go out together", writers*perWriter, len(times))
	}
	s.closeClean()
	checkWorkspace(t, first)
}

// Writes that come while a batch waits for the pacing join that batch:
// they go out in its push, not in a push of their own an interval later.
func TestRemoteWritesThatComeWhileABatchWaitsJoinIt(t *testing.T) {
	_, bare, first := boardWithRemote(t)
	// An interval that a slow machine's write and answer cannot use up:
	// the three writes must come while the first still waits.
	fixtures.Git(t, first, "config", "blackboard.pushInterval", "3s")
	pushes := recordPushes(t, bare)
	s := startMCPGo(t, first, "agent-a")
	s.write(map[string]any{"uri": "join/first", "digest": "pushed at once", "body": "x", "expect_version": 0})
	before := len(pushes())
	start := time.Now()
	var wg sync.WaitGroup
	// The first write waits for the pacing; the others come while it does.
	wg.Go(func() { s.write(map[string]any{"uri": "join/waits", "digest": "d", "body": "x", "expect_version": 0}) })
	time.Sleep(300 * time.Millisecond)
	for i := range 3 {
		wg.Go(func() {
			s.write(map[string]any{"uri": fmt.Sprintf("join/came%d", i), "digest": "d", "body": "x", "expect_version": 0})
		})
	}
	wg.Wait()
	took := time.Since(start)
	if got := len(pushes()) - before; got != 1 {
		t.Errorf("four writes, three of them made while the first waited for the pacing, made %d pushes in %s; want one", got,
			took.Round(time.Millisecond))
	}
	if got, want := len(remoteLog(t, bare)), 1+5; got != want {
		t.Errorf("the remote has %d commits, want %d: every write its own", got, want)
	}
	s.closeClean()
	checkWorkspace(t, first)
}

// A server killed (kill -9) while a batch of writes is in the remote's
// hands, before the remote took the push or after, leaves a state the next
// process finishes: the batch is on the remote whole or not at all, the
// clone ends where the remote is, and a fresh clone reads the same.
func TestRemoteServerKilledDuringABatch(t *testing.T) {
	for _, tt := range pushMoments {
		t.Run(tt.name, func(t *testing.T) {
			url, bare, first := boardWithRemote(t)
			r := startRaw(t, serverOpts{dir: first, agent: "agent-a"})
			r.initialize()
			// The hook holds a push of several commits (a batch) for a
			// second; pushes of one commit go through.
			held, released := holdingHook(t, bare, tt.hook, `[ "$(git rev-list --count $old..$new)" -gt 1 ]`, tt.exit)
			const writes = 8
			var calls []any
			for i := range writes {
				calls = append(calls, request(fmt.Sprintf("w%d", i), "tools/call", map[string]any{"name": "update_state",
					"arguments": map[string]any{"uri": fmt.Sprintf("batch/n%d", i), "digest": fmt.Sprintf("note %d", i), "body": "x",
						"expect_version": 0}}))
			}
			r.send(calls...)
			held()
			if err := r.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			released()

			onRemote := 0
			for _, subject := range remoteLog(t, bare) {
				if strings.HasPrefix(subject, "update batch/") {
					onRemote++
				}
			}
			t.Logf("%d of %d writes are on the remote", onRemote, writes)
			if tt.exit == "exit 1" && onRemote == writes {
				t.Errorf("the remote refused the batch, yet holds all %d writes", writes)
			}
			listed := runCLI(t, first, "ls", "--name", "-n", "100") // fetches, and finishes what the server left
			if got := strings.Count(listed, "batch/"); got != onRemote {
				t.Errorf("the killed server's clone lists %d of the writes, the remote holds %d:\n%s", got, onRemote, listed)
			}
			if local, remote := strings.TrimSpace(fixtures.GitOutput(t, first, "rev-parse", "main")), strings.TrimSpace(fixtures.GitOutput(t, bare, "rev-parse", "main")); local != remote {
				t.Errorf("the clone is at %s, the remote at %s", local, remote)
			}
			checkWorkspace(t, first)
			other := filepath.Join(t.TempDir(), "b")
			cloneBoard(t, url, other)
			if got := runCLI(t, other, "ls", "--name", "-n", "100"); got != listed {
				t.Errorf("a fresh clone lists:\n%s\nthe killed server's clone:\n%s", got, listed)
			}
		})
	}
}

// Writes from several server processes of one clone (one per agent, as
// MCP clients start them) go out together too: with pushes paced, each
// push carries what every process built meanwhile, and no two pushes come
// closer than the interval.
func TestRemoteProcessesOfOneCloneSharePushes(t *testing.T) {
	_, bare, first := boardWithRemote(t)
	fixtures.Git(t, first, "config", "blackboard.pushInterval", "500ms")
	pushes := recordPushes(t, bare)
	const processes, perProcess = 4, 5
	var servers []*session
	for i := range processes {
		servers = append(servers, startMCPGo(t, first, fmt.Sprintf("agent-%d", i)))
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			for v := 1; v <= perProcess; v++ {
				got := s.write(map[string]any{"uri": fmt.Sprintf("shared/p%d", i), "digest": fmt.Sprintf("v%d", v), "body": "x",
					"expect_version": v - 1})
				if got.Version != v {
					t.Errorf("process %d: acknowledged as version %d, want %d", i, got.Version, v)
				}
			}
		})
	}
	wg.Wait()
	times := pushes()
	t.Logf("%d writes from %d processes in %s made %d pushes", processes*perProcess, processes,
		time.Since(start).Round(time.Millisecond), len(times))
	pushedApart(t, times, 500*time.Millisecond)
	if len(times) > processes*perProcess/2 {
		t.Errorf("%d writes from %d processes made %d pushes; paced, each push carries every process's writes", processes*perProcess,
			processes, len(times))
	}
	if got, want := len(remoteLog(t, bare)), 1+processes*perProcess; got != want {
		t.Errorf("the remote has %d commits, want %d", got, want)
	}
	for _, s := range servers {
		s.closeClean()
	}
	checkWorkspace(t, first)
}

// recordPushes has the remote at bare record the time of each push it
// takes (a post-receive hook), and returns them, in Unix seconds.
func recordPushes(t *testing.T, bare string) func() []float64 {
	t.Helper()
	log := filepath.Join(t.TempDir(), "pushes")
	hook := fmt.Sprintf("#!/bin/sh\ncat >/dev/null\ndate +%%s.%%N >> %q\n", log)
	if err := os.WriteFile(filepath.Join(bare, "hooks", "post-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	return func() []float64 {
		b, err := os.ReadFile(log)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		var times []float64
		for _, line := range strings.Fields(string(b)) {
			f, err := strconv.ParseFloat(line, 64)
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, f)
		}
		return times
	}
}

// pushedApart checks that pushes were paced: unpaced, they come tens of
// milliseconds apart. Pushes are paced from their start, and the hook
// records their end, which a loaded machine delays by the push's own time:
// one push that took long comes close to the next (a clean CI run saw
// 0.75 s between the hooks of pushes paced 1 s apart; a run with one core
// busy, 0.254 s between pushes paced 0.5 s apart). So no two may come
// closer than a fifth of pace, and together they must span their number of
// paces, less one for the first push's own time.
func pushedApart(t *testing.T, times []float64, pace time.Duration) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		if gap := times[i] - times[i-1]; gap < 0.2*pace.Seconds() {
			t.Errorf("pushes %d and %d came %.3fs apart, want about %s", i, i+1, gap, pace)
		}
	}
	if n := len(times); n > 1 {
		if span, least := times[n-1]-times[0], float64(n-2)*pace.Seconds(); span < least {
			t.Errorf("%d pushes paced %s apart came within %.3fs, want at least %.3fs", n, pace, span, least)
		}
	}
}

// listsAsAFreshClone checks that each of dirs lists every note at the
// version a fresh clone of the board at url gives it after reindex.
func listsAsAFreshClone(t *testing.T, url string, dirs ...string) {
	t.Helper()
	fresh := filepath.Join(t.TempDir(), "fresh")
	cloneBoard(t, url, fresh)
	runCLI(t, fresh, "reindex")
	want := runCLI(t, fresh, "ls", "--name", "-n", "1000")
	for _, dir := range dirs {
		if got := runCLI(t, dir, "ls", "--name", "-n", "1000"); got != want {
			t.Errorf("%s lists what a fresh clone does not:\n%s\nfresh:\n%s", dir, got, want)
		}
	}
}

// slowPushes makes the bare remote take 20-80 ms, at random, over every
// push before it answers (a pre-receive hook), as a busy host or a remote
// on a slow disk does: a clone that lost a race then needs longer to fetch,
// rebuild and push again than the winner needs to push its next writes.
func slowPushes(t *testing.T, bare string) {
	t.Helper()
	hook := "#!/bin/sh\ncat >/dev/null\nn=$(od -An -N1 -tu1 /dev/urandom)\nsleep \"0.$(printf %03d $((20 + n % 61)))\"\n"
	if err := os.WriteFile(filepath.Join(bare, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
}
