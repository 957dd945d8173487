package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// People edit notes in their editors while servers run (SPEC section 9):
// every save style an editor uses becomes the person's version, found by
// the server's watcher, readable and searchable by agents, and a write with
// the version from before the edit is a conflict.

// settleTimeout bounds how long a person's save may take to be committed: a
// debounce of 150 ms and a commit, on a loaded machine.
const settleTimeout = 15 * time.Second

// eventually polls cond until it holds or the timeout passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventuallyOr(t, what, cond, func() string { return "" })
}

// eventuallyOr is eventually that says, when time runs out, what is still
// missing.
func eventuallyOr(t testing.TB, what string, cond func() bool, missing func() string) {
	t.Helper()
	deadline := time.Now().Add(settleTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s %s", what, missing())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// handNote is a note file as a person types it.
func handNote(digest, body string) string {
	return "---\ndigest: " + digest + "\n---\n" + body
}

func writeTree(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sh(t testing.TB, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir, cmd.Env = dir, mcpEnv("")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// itemOf reads one note in full.
func (s *session) itemOf(short string) item {
	s.t.Helper()
	e := s.get([]string{uri(short)}, "full", 4000)
	if len(e.Items) != 1 {
		s.t.Fatalf("get %s: %+v", short, e)
	}
	return e.Items[0]
}

// waitVersion waits until agents read short at version v.
func (s *session) waitVersion(short string, v int) item {
	s.t.Helper()
	var it item
	eventually(s.t, fmt.Sprintf("%s is at version %d", short, v), func() bool {
		it = s.itemOf(short)
		return it.Version == v
	})
	return it
}

// waitGone waits until agents no longer find short.
func (s *session) waitGone(short string) {
	s.t.Helper()
	eventually(s.t, short+" is gone", func() bool {
		return s.itemOf(short).Error != ""
	})
}

// found reports whether search_keys finds short for q.
func (s *session) found(q, short string) bool {
	s.t.Helper()
	e := parseEnvelope(s.t, s.ok("search_keys", map[string]any{"q": q}), 2000)
	for _, u := range e.uris() {
		if u == uri(short) {
			return true
		}
	}
	return false
}

// staleWriteConflicts checks that a write naming a version from before the
// person's edit is refused.
func (s *session) staleWriteConflicts(short string, stale int) {
	s.t.Helper()
	s.fail("update_state", map[string]any{"uri": short, "digest": "stale", "body": "x", "expect_version": stale}, "conflict")
}

func TestMCPEditorSaveStyles(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	create := func(t *testing.T, short, word string) {
		t.Helper()
		s.on(t).write(map[string]any{"uri": short, "digest": "by the agent", "body": "agent text " + word + "\n", "expect_version": 0})
	}
	// edited checks what every save style must end with: the person's text
	// at version want, found by search, authored by the person, and the
	// version before it refused.
	edited := func(t *testing.T, short, digest, word string, want int) {
		t.Helper()
		s := s.on(t)
		it := s.waitVersion(short, want)
		if it.Digest != digest || !strings.Contains(it.Body, word) {
			t.Errorf("after the save: %+v; want digest %q and %q in the body", it, digest, word)
		}
		if !s.found(word, short) {
			t.Errorf("search_keys %q does not find %s", word, short)
		}
		if got := gitLog(t, dir, short+".md")[0]; !strings.HasPrefix(got, "Ada Person\t") || !strings.Contains(got, "by hand") {
			t.Errorf("last commit of %s = %q; want the person's, by hand", short, got)
		}
		s.staleWriteConflicts(short, want-1)
	}

	t.Run("in place", func(t *testing.T) {
		create(t, "ed/inplace", "alpha")
		writeTree(t, dir, "ed/inplace.md", handNote("fixed in place", "kiwifruit in place\n"))
		edited(t, "ed/inplace", "fixed in place", "kiwifruit", 2)
	})
	t.Run("temp file then rename", func(t *testing.T) {
		create(t, "ed/renamed", "beta")
		writeTree(t, dir, "ed/.renamed.md.tmp-8f3a", handNote("saved atomically", "pomegranate\n"))
		sh(t, dir, "mv ed/.renamed.md.tmp-8f3a ed/renamed.md")
		edited(t, "ed/renamed", "saved atomically", "pomegranate", 2)
	})
	t.Run("vim backup and rename", func(t *testing.T) {
		create(t, "ed/vim", "gamma")
		// vim's writebackup sequence: probe, backup by rename, new file,
		// mode, backup removed.
		sh(t, dir, `cd ed && : > 4913 && rm 4913 && mv vim.md vim.md~ &&
			printf -- '---\ndigest: saved by vim\n---\nrambutan\n' > vim.md && chmod 644 vim.md && rm vim.md~`)
		edited(t, "ed/vim", "saved by vim", "rambutan", 2)
	})
	t.Run("sed -i", func(t *testing.T) {
		create(t, "ed/sed", "delta")
		sh(t, dir, `sed -i -e 's/by the agent/fixed by sed/' -e 's/agent text delta/durian by sed/' ed/sed.md`)
		edited(t, "ed/sed", "fixed by sed", "durian", 2)
	})
	t.Run("mkdir -p and a new note", func(t *testing.T) {
		sh(t, dir, `mkdir -p ed/fresh/deep && printf -- '---\ndigest: born by hand\n---\ntamarillo\n' > ed/fresh/deep/note.md`)
		s := s.on(t)
		it := s.waitVersion("ed/fresh/deep/note", 1)
		if it.Digest != "born by hand" || !s.found("tamarillo", "ed/fresh/deep/note") {
			t.Errorf("new note = %+v", it)
		}
		s.fail("update_state", map[string]any{"uri": "ed/fresh/deep/note", "digest": "d", "body": "x", "expect_version": 0}, "conflict")
		// The new directory is watched: a later save inside it is seen.
		writeTree(t, dir, "ed/fresh/deep/other.md", handNote("second in the new folder", "feijoa\n"))
		s.waitVersion("ed/fresh/deep/other", 1)
	})
	t.Run("mv a note", func(t *testing.T) {
		create(t, "ed/before", "epsilon")
		s := s.on(t)
		s.write(map[string]any{"uri": "ed/before", "digest": "second version", "body": "agent text loquat\n", "expect_version": 1})
		sh(t, dir, "mv ed/before.md ed/after.md")
		it := s.waitVersion("ed/after", 1)
		s.waitGone("ed/before")
		if it.Digest != "second version" || !s.found("loquat", "ed/after") || s.found("loquat", "ed/before") {
			t.Errorf("moved note = %+v", it)
		}
		// One commit: a delete and a create.
		if got := gitLog(t, dir, "ed/after.md", "ed/before.md")[0]; got != "Ada Person\tmove ed/before to ed/after v1 by hand: second version" {
			t.Errorf("the move's commit = %q", got)
		}
		s.fail("update_state", map[string]any{"uri": "ed/before", "digest": "d", "body": "x", "expect_version": 2}, "conflict")
		s.staleWriteConflicts("ed/after", 0)
	})
	t.Run("mv a folder", func(t *testing.T) {
		create(t, "ed/box/one", "zeta")
		create(t, "ed/box/two", "eta")
		sh(t, dir, "mv ed/box ed/crate")
		s := s.on(t)
		s.waitVersion("ed/crate/one", 1)
		s.waitVersion("ed/crate/two", 1)
		s.waitGone("ed/box/one")
		s.waitGone("ed/box/two")
		if !s.found("zeta", "ed/crate/one") {
			t.Error("search does not find the moved folder's note")
		}
		// The moved folder is watched under its new name.
		writeTree(t, dir, "ed/crate/two.md", handNote("edited after the move", "jackfruit\n"))
		edited(t, "ed/crate/two", "edited after the move", "jackfruit", 2)
	})
	t.Run("rm", func(t *testing.T) {
		create(t, "ed/doomed", "theta")
		sh(t, dir, "rm ed/doomed.md")
		s := s.on(t)
		s.waitGone("ed/doomed")
		if s.found("theta", "ed/doomed") {
			t.Error("search still finds a deleted note")
		}
		msg := s.fail("update_state", map[string]any{"uri": "ed/doomed", "digest": "d", "body": "x", "expect_version": 1}, "conflict")
		if !strings.Contains(msg, "deleted") {
			t.Errorf("write to a deleted note: %q", msg)
		}
	})
	t.Run("git checkout of an older version", func(t *testing.T) {
		create(t, "ed/history", "iota")
		s := s.on(t)
		s.write(map[string]any{"uri": "ed/history", "digest": "second thoughts", "body": "agent text kappa\n", "expect_version": 1})
		written := time.Now()
		first := strings.Fields(fixtures.GitOutput(t, dir, "log", "--format=%H", "--", "ed/history.md"))[1]
		// Right after the agent's write, the older file cannot be told
		// from one a reset that read the branch before the write left
		// behind: the agent's version stays, and the file's text is kept
		// as a sibling note that contradicts it.
		fixtures.Git(t, dir, "checkout", first, "--", "ed/history.md")
		eventually(t, "the older file is kept as a sibling note", func() bool {
			siblings, _ := filepath.Glob(filepath.Join(dir, "ed", "history-*.md"))
			return len(siblings) == 1 && strings.Contains(readTree(t, dir, "ed/history.md"), "agent text kappa") &&
				strings.Contains(readTree(t, dir, "ed/"+filepath.Base(siblings[0])), "contradicts: [ed/history]")
		})
		if it := s.itemOf("ed/history"); it.Version != 2 {
			t.Errorf("a restore right after the write made ed/history v%d, want the agent's v2 to stay", it.Version)
		}
		// Later (fsstore's staleWindow, and a second for commit times), the
		// person's restore is theirs.
		time.Sleep(time.Until(written.Add(6500 * time.Millisecond)))
		fixtures.Git(t, dir, "checkout", first, "--", "ed/history.md")
		edited(t, "ed/history", "by the agent", "iota", 3)
		out := runCLI(t, dir, "log", "ed/history")
		if !strings.Contains(out, "from v2, content of v1: by the agent") {
			t.Errorf("log does not say v3 brings back v1:\n%s", out)
		}
	})
	// git blame works on the files as usual: the person's lines are theirs.
	if blame := fixtures.GitOutput(t, dir, "blame", "--line-porcelain", "ed/inplace.md"); !strings.Contains(blame, "author Ada Person") {
		t.Errorf("git blame does not credit the person:\n%s", blame)
	}
	s.closeClean()
	checkWorkspace(t, dir)
}

// runCLI runs a CLI verb of the real binary on dir; a failure ends the
// test.
func runCLI(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := cliCommand(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("blackboard-mcp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// cliCommand is a CLI verb of the real binary on dir, to run.
func cliCommand(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(testBinary, append([]string{args[0], "--dir", dir}, args[1:]...)...)
	cmd.Env = mcpEnv("")
	return cmd
}

// A person saves a note again and again while two agents, in two server
// processes, write it with compare-and-swap. Afterwards git holds every
// acknowledged agent write and the person's last text, the file is the last
// committed version, and git status is clean.
func TestMCPPersonRacesAgents(t *testing.T) {
	dir := newWorkspaceDir(t)
	const key = "race/contended"
	a := startMCPGo(t, dir, "agent-a")
	a.write(map[string]any{"uri": key, "digest": "start", "body": "start\n", "expect_version": 0})
	b := startMCPGo(t, dir, "agent-b")

	var mu sync.Mutex
	var acked []string // subjects of acknowledged writes
	stop := make(chan struct{})
	var agents sync.WaitGroup
	for i, s := range []*session{a, b} {
		agents.Go(func() {
			n := 0
			for n < 12 {
				select {
				case <-stop:
					return
				default:
				}
				v := s.itemOf(key).Version
				digest := fmt.Sprintf("agent %d write %d", i, n)
				res := s.call("update_state", map[string]any{"uri": key, "digest": digest,
					"body": digest + "\n", "expect_version": v})
				if res.isError {
					if !strings.HasPrefix(res.text, "conflict: ") {
						t.Errorf("write: %s", res.text)
						return
					}
					continue
				}
				w := decodeWrite(t, res.text)
				mu.Lock()
				acked = append(acked, fmt.Sprintf("update %s v%d: %s", key, w.Version, digest))
				mu.Unlock()
				n++
			}
		})
	}
	// The person saves every 20-40 ms, alternating in-place writes and
	// temp-file renames, until the agents are done.
	var final string
	saves := 0
	person := make(chan struct{})
	go func() {
		defer close(person)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			final = handNote(fmt.Sprintf("person save %d", i), fmt.Sprintf("the person's text, save %d\n", i))
			if i%2 == 0 {
				writeTree(t, dir, key+".md", final)
			} else {
				writeTree(t, dir, "race/.contended.md.swp-tmp", final)
				if err := os.Rename(filepath.Join(dir, "race/.contended.md.swp-tmp"), filepath.Join(dir, key+".md")); err != nil {
					t.Error(err)
				}
			}
			saves++
			time.Sleep(time.Duration(20+i%3*10) * time.Millisecond)
		}
	}()
	agents.Wait()
	close(stop)
	<-person

	// Settled: the person's last save is a version (an agent's write may
	// follow it), and the file is the last committed version.
	var status string
	deadline := time.Now().Add(settleTimeout)
	for status = "unknown"; status != "" || !inHistory(t, dir, key+".md", final); {
		if time.Now().After(deadline) {
			disk, _ := os.ReadFile(filepath.Join(dir, key+".md"))
			t.Fatalf("the person's last save is not committed:\nstatus: %s\ndisk: %s\nwant: %s\nlog:\n%s\nserver a:\n%s\nserver b:\n%s",
				status, disk, final, strings.Join(gitLog(t, dir)[:10], "\n"), a.stderr.String(), b.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
		status = fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all")
	}
	if disk, head := readTree(t, dir, key+".md"), fixtures.GitOutput(t, dir, "show", "HEAD:"+key+".md"); disk != head {
		t.Errorf("the file on disk is not the last committed version:\n%s\nHEAD:\n%s", disk, head)
	}
	a.closeClean()
	b.closeClean()
	checkWorkspace(t, dir)

	history := strings.Join(gitLog(t, dir, key+".md"), "\n")
	for _, s := range acked {
		if !strings.Contains(history, s) {
			t.Errorf("acknowledged write %q is not in git log", s)
		}
	}
	byHand := strings.Count(history, "by hand")
	t.Logf("%d acknowledged agent writes, %d person saves, %d of them committed as versions (saves within one debounce window are one version)",
		len(acked), saves, byHand)
	if len(acked) != 24 || byHand == 0 {
		t.Errorf("acknowledged %d writes, %d person versions", len(acked), byHand)
	}
}

// inHistory reports whether some commit of the branch holds content at rel.
func inHistory(t testing.TB, dir, rel, content string) bool {
	t.Helper()
	for _, c := range strings.Fields(fixtures.GitOutput(t, dir, "log", "--format=%H", "--", rel)) {
		if fixtures.GitOutput(t, dir, "show", c+":"+rel) == content {
			return true
		}
	}
	return false
}

func readTree(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Two servers watch one workspace: each edit is committed exactly once.
func TestMCPTwoWatchersCommitOnce(t *testing.T) {
	dir := newWorkspaceDir(t)
	a := startMCPGo(t, dir, "agent-a")
	b := startMCPGo(t, dir, "agent-b")
	const key = "shared/doc"
	a.write(map[string]any{"uri": key, "digest": "v1", "body": "one\n", "expect_version": 0})
	const edits = 8
	for i := range edits {
		writeTree(t, dir, key+".md", handNote(fmt.Sprintf("person edit %d", i), fmt.Sprintf("edit %d\n", i)))
		// Both servers see the edit; either may commit it.
		reader := []*session{a, b}[i%2]
		reader.waitVersion(key, i+2)
	}
	writeTree(t, dir, "shared/new.md", handNote("created by hand", "new\n"))
	a.waitVersion("shared/new", 1)
	// Give the slower watcher time to have tried too.
	time.Sleep(time.Second)
	a.closeClean()
	b.closeClean()
	if got := gitLog(t, dir, key+".md"); len(got) != edits+1 {
		t.Errorf("%d commits of %s, want %d:\n%s", len(got), key, edits+1, strings.Join(got, "\n"))
	}
	if got := gitLog(t, dir, "shared/new.md"); len(got) != 1 {
		t.Errorf("the new note was committed %d times", len(got))
	}
	if got := fixtures.GitOutput(t, dir, "log", "--format=%h %an: %s", "--author=Ada"); strings.Count(got, "\n") != edits+1 {
		t.Errorf("person commits:\n%s\nserver a:\n%s\nserver b:\n%s", got, a.stderr.String(), b.stderr.String())
	}
	checkWorkspace(t, dir)
}

// Edits made while no server ran are committed when one starts. A CLI
// write (a process that does not watch) commits a pending edit of its own
// note first, and leaves those of other notes to the next server.
func TestMCPEditsWhileNoServerRan(t *testing.T) {
	dir := newWorkspaceDir(t)
	runCLI(t, dir, "init", dir)
	runCLI(t, dir, "put", "off/a", "--digest", "a", "--body", "a", "--expect", "0")
	runCLI(t, dir, "put", "off/b", "--digest", "b", "--body", "b", "--expect", "0")

	writeTree(t, dir, "off/b.md", handNote("b by hand", "b edited\n"))
	runCLI(t, dir, "put", "off/a", "--digest", "a2", "--body", "a2", "--expect", "1")
	if log := gitLog(t, dir); log[0] != "agent\tupdate off/a v2: a2" || log[1] != "agent\tupdate off/b v1: b" {
		t.Errorf("history:\n%s", strings.Join(log, "\n"))
	}
	if st := fixtures.GitOutput(t, dir, "status", "--porcelain"); st != " M off/b.md\n" {
		t.Errorf("git status after a CLI write of another note: %q; want the edit of off/b waiting", st)
	}
	writeTree(t, dir, "off/a.md", handNote("a by hand", "a edited\n"))
	out, err := cliCommand(dir, "put", "off/a", "--digest", "a3", "--body", "a3", "--expect", "2").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "edit off/a by Ada Person (v3)") {
		t.Errorf("a CLI write over a person's edit of its note: %v\n%s; want the edit committed first and a conflict", err, out)
	}
	s := startMCPGo(t, dir, "agent")
	if it := s.waitVersion("off/b", 2); it.Digest != "b by hand" {
		t.Errorf("off/b = %+v", it)
	}
	s.closeClean()

	// Edits while nothing runs: found by the next server before it answers.
	writeTree(t, dir, "off/a.md", handNote("a while offline", "offline\n"))
	writeTree(t, dir, "off/new/c.md", handNote("c while offline", "created offline\n"))
	sh(t, dir, "rm off/b.md")
	s = startMCPGo(t, dir, "agent")
	if it := s.waitVersion("off/a", 4); it.Digest != "a while offline" {
		t.Errorf("off/a = %+v", it)
	}
	s.waitVersion("off/new/c", 1)
	s.waitGone("off/b")
	s.closeClean()
	checkWorkspace(t, dir)
}

// What a person may leave in the work tree that cannot be a note: the
// server says so in its log, commits nothing of it, and keeps serving.
func TestMCPHostileEdits(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	s.write(map[string]any{"uri": "bad/big", "digest": "large", "body": strings.Repeat("a line of the big note\n", 1000), "expect_version": 0})
	outside := filepath.Join(t.TempDir(), "secret.md")
	writeTree(t, filepath.Dir(outside), "secret.md", handNote("secret", "outside the board\n"))

	if err := os.Symlink(outside, filepath.Join(dir, "bad", "link.md")); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "mkfifo bad/fifo.md")
	writeTree(t, dir, "bad/broken.md", "---\ndigest: [unclosed\n---\nbody\n")
	sh(t, dir, "rm bad/big.blob.md")
	writeTree(t, dir, "bad/fine.md", handNote("still committed", "fine\n"))

	s.waitVersion("bad/fine", 1)
	broken := s.waitVersion("bad/broken", 1)
	if !strings.Contains(broken.Problem, "front matter") {
		t.Errorf("broken note = %+v", broken)
	}
	big := s.waitVersion("bad/big", 2)
	if !strings.Contains(big.Problem, "bad/big.blob.md") {
		t.Errorf("note whose blob was deleted = %+v", big)
	}
	eventually(t, "the server logs the files it cannot commit", func() bool {
		log := s.stderr.String()
		return strings.Contains(log, "bad/link.md is a symbolic link") && strings.Contains(log, "bad/fifo.md is not a regular file") &&
			strings.Contains(log, "its blob file bad/big.blob.md was deleted")
	})
	if got := fixtures.GitOutput(t, dir, "ls-files", "bad"); strings.Contains(got, "link.md") || strings.Contains(got, "fifo.md") {
		t.Errorf("committed a link or a FIFO:\n%s", got)
	}
	if it := s.itemOf("bad/link"); it.Error == "" {
		t.Errorf("a symbolic link became readable: %+v", it)
	}
	s.closeClean()
}
