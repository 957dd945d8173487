package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// A person uses git beside the agents, in ways an editor never does:
// branches, resets, stashes. Nothing they do may lose an agent's
// acknowledged write, and nothing the program does may leave them a
// repository they did not ask for.

// The board's branch is a fact of the workspace, recorded in its config
// when it is made: a server started while a person has another branch
// checked out, and the CLI run from there, write to the board's branch,
// every server reads what the others wrote, and deleting the person's
// branch loses nothing.
func TestMCPBoardBranchWhateverIsCheckedOut(t *testing.T) {
	dir := newWorkspaceDir(t)
	runCLI(t, dir, "init")
	if cfg := readTree(t, dir, ".blackboard/config.yaml"); !strings.Contains(cfg, "\nbranch: main\n") {
		t.Fatalf("init did not record the board's branch:\n%s", cfg)
	}
	fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
	a := startMCPGo(t, dir, "agent-a") // started while side is checked out
	fixtures.Git(t, dir, "checkout", "-q", "main")

	const key = "team/plan"
	a.write(map[string]any{"uri": key, "digest": "plan one", "body": "one\n", "expect_version": 0})
	b := startMCPGo(t, dir, "agent-b")
	if it := b.itemOf(key); it.Version != 1 || it.Digest != "plan one" {
		t.Fatalf("a server started on the board's branch reads %+v, want version 1", it)
	}

	// The person is on side again: the CLI and both servers still write to
	// main, and read each other's writes.
	fixtures.Git(t, dir, "checkout", "-q", "side")
	runCLI(t, dir, "put", key, "--digest", "plan two", "--body", "two", "--expect", "1")
	a.write(map[string]any{"uri": key, "digest": "plan three", "body": "three\n", "expect_version": 2})
	if it := b.itemOf(key); it.Version != 3 || it.Digest != "plan three" {
		t.Fatalf("server b reads %+v, want version 3 by server a", it)
	}
	if _, err := os.Stat(filepath.Join(dir, key+".md")); err == nil {
		t.Errorf("a write put its file into side's work tree")
	}
	if out := fixtures.GitOutput(t, dir, "log", "--format=%s", "side", "--", key+".md"); out != "" {
		t.Errorf("writes landed on side:\n%s", out)
	}

	fixtures.Git(t, dir, "checkout", "-q", "main")
	fixtures.Git(t, dir, "branch", "-q", "-D", "side")
	a.write(map[string]any{"uri": key, "digest": "plan four", "body": "four\n", "expect_version": 3})
	if it := b.itemOf(key); it.Version != 4 || it.Body != "four\n" {
		t.Fatalf("server b reads %+v, want version 4", it)
	}
	history := gitLog(t, dir, key+".md")
	want := []string{"plan four", "plan three", "plan two", "plan one"}
	if len(history) != len(want) {
		t.Fatalf("history of %s on main:\n%s", key, strings.Join(history, "\n"))
	}
	for i, w := range want {
		if !strings.HasSuffix(history[i], w) {
			t.Errorf("version %d: %q, want %q", len(want)-i, history[i], w)
		}
	}
	if roots := strings.Fields(fixtures.GitOutput(t, dir, "rev-list", "--max-parents=0", "main")); len(roots) != 1 {
		t.Errorf("main has %d root commits, want 1", len(roots))
	}
	a.closeClean()
	b.closeClean()
	checkWorkspace(t, dir)
}

// A person who deletes the board's branch stops the board, rather than
// seeing the next write start a new history beside the old: reads and
// writes say how to restore it, health says the same, and after the
// restore everything is where it was.
func TestMCPBoardBranchDeleted(t *testing.T) {
	dir := newWorkspaceDir(t)
	a := startMCPGo(t, dir, "agent-a")
	const key = "team/plan"
	a.write(map[string]any{"uri": key, "digest": "plan one", "body": "one\n", "expect_version": 0})
	last := strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-parse", "main"))
	fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
	fixtures.Git(t, dir, "branch", "-q", "-D", "main")

	msg := a.fail("update_state", map[string]any{"uri": key, "digest": "plan two", "body": "two\n", "expect_version": 1}, "conflict")
	if !strings.Contains(msg, "git branch main "+last) {
		t.Errorf("the refused write does not say how to restore main: %s", msg)
	}
	if msg := a.fail("get_state", map[string]any{"uris": []string{key}}, "conflict"); !strings.Contains(msg, "does not exist") {
		t.Errorf("a read with main deleted: %s", msg)
	}
	cmd := cliCommand(dir, "health")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "git branch main "+last) {
		t.Errorf("health with main deleted (%v):\n%s", err, out)
	}
	if refs := fixtures.GitOutput(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/"); strings.TrimSpace(refs) != "refs/heads/side" {
		t.Errorf("branches after the refused write:\n%s", refs)
	}

	fixtures.Git(t, dir, "branch", "main", last)
	fixtures.Git(t, dir, "checkout", "-q", "main")
	a.write(map[string]any{"uri": key, "digest": "plan two", "body": "two\n", "expect_version": 1})
	if roots := strings.Fields(fixtures.GitOutput(t, dir, "rev-list", "--max-parents=0", "main")); len(roots) != 1 {
		t.Errorf("main has %d root commits, want 1", len(roots))
	}
	a.closeClean()
	checkWorkspace(t, dir)
}

// The program's temporary files never reach git: a person's `git add -A &&
// git commit`, run again and again while two servers write (small notes
// and notes stored out of line), commits none of them, and one a killed
// writer left behind is invisible to `git status`.
func TestMCPTemporaryFilesNeverInGit(t *testing.T) {
	dir := newWorkspaceDir(t)
	servers := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b")}
	big := strings.Repeat("a line of a long report\n", 600)
	var writers sync.WaitGroup
	for i, s := range servers {
		writers.Go(func() {
			for n := range 30 {
				body := fmt.Sprintf("write %d\n", n)
				if n%3 == 0 {
					body += big
				}
				s.write(map[string]any{"uri": fmt.Sprintf("team/agent-%d-%d", i, n%5), "digest": fmt.Sprintf("write %d", n), "body": body})
			}
		})
	}
	done := make(chan struct{})
	go func() { writers.Wait(); close(done) }()
	commits := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		// The person's own file changes every time, so there is always
		// something to commit besides whatever the agents have in flight.
		cmd := exec.Command("sh", "-c", "date +%N >> scratch.txt && git add -A && git commit -q -m 'everything, by hand'")
		cmd.Dir, cmd.Env = dir, mcpEnv("")
		if cmd.Run() == nil {
			commits++
		}
	}
	t.Logf("the person committed %d times while the agents wrote", commits)
	if commits == 0 {
		t.Fatal("the person never committed: the race did not happen")
	}
	if files := fixtures.GitOutput(t, dir, "log", "--all", "--format=", "--name-only"); strings.Contains(files, tempMarkerOnDisk) {
		t.Errorf("a commit holds the program's temporary files:\n%s", grepLines(files, tempMarkerOnDisk))
	}

	// A killed writer's leftover, as recovery would find it.
	writeTree(t, dir, "team/.agent-0-1.md"+tempMarkerOnDisk+"0123456789ab", "half a note")
	fixtures.Git(t, dir, "add", "-A")
	if staged := fixtures.GitOutput(t, dir, "diff", "--cached", "--name-only"); strings.Contains(staged, tempMarkerOnDisk) {
		t.Errorf("git add -A staged a temporary file:\n%s", staged)
	}
	eventually(t, "git status is clean", func() bool {
		return fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all") == ""
	})
	for _, s := range servers {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}

// tempMarkerOnDisk is what every temporary file of the program has in its
// name (fsstore's tempMarker).
const tempMarkerOnDisk = ".bb-tmp-"

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// A note over 10 KB keeps its content in a blob file beside it, and its own
// file holds only front matter. Text a person types into that file's body
// is part of the note: reads return it after the blob's content, search
// finds it, an agent's append keeps it (moving it into the blob file), and
// health has nothing to say.
func TestMCPTextTypedIntoAnOutOfLineNote(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	const key = "research/report"
	big := strings.Repeat("a line of a long report\n", 600)
	s.write(map[string]any{"uri": key, "digest": "a long report", "body": big, "expect_version": 0})
	if _, err := os.Stat(filepath.Join(dir, key+".blob.md")); err != nil {
		t.Fatalf("the report is not stored out of line: %v", err)
	}

	typed := "A person's afterthought: check the quokka-7 numbers.\n"
	f, err := os.OpenFile(filepath.Join(dir, key+".md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(typed); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s.waitVersion(key, 2)
	it := s.fullItem(key)
	if it.Body != big+typed {
		t.Fatalf("a read of the note after the person's edit ends with %q, want the blob's content and then %q",
			it.Body[max(0, len(it.Body)-80):], typed)
	}
	if !s.found("quokka-7", key) {
		t.Errorf("search does not find the text the person typed")
	}

	s.write(map[string]any{"uri": key, "digest": "a long report", "append": "An agent's addendum.\n"})
	it = s.fullItem(key)
	if want := big + typed + "An agent's addendum.\n"; it.Version != 3 || it.Body != want {
		t.Errorf("after an agent's append: v%d ending %q", it.Version, it.Body[max(0, len(it.Body)-120):])
	}
	if blob := readTree(t, dir, key+".blob.md"); !strings.Contains(blob, typed) {
		t.Errorf("the person's text is not in the blob file after the append")
	}
	if _, body := readNote(t, dir, key); body != "" {
		t.Errorf("the note file keeps a body after the write moved it into the blob file: %q", body)
	}
	s.closeClean()
	checkWorkspace(t, dir)
	if out, err := cliCommand(dir, "health").CombinedOutput(); err != nil {
		t.Errorf("health: %v\n%s", err, out)
	}
}

// fullItem reads one note in full, with the largest budget a read allows.
func (s *session) fullItem(short string) item {
	s.t.Helper()
	e := s.get([]string{uri(short)}, "full", 20000)
	if len(e.Items) != 1 || e.Items[0].KeptChars != 0 {
		s.t.Fatalf("get %s in full: %+v", short, e)
	}
	return e.Items[0]
}

// What a person's files look like is respected and explained: a note saved
// with a byte-order mark is a note, an agent's append to a CRLF note adds
// CRLF lines, Markdown files no address can name are explained by the
// start-up scan and by health (not only by the watcher), and a digest over
// its limit names the limit.
func TestMCPPeoplesFilesExplained(t *testing.T) {
	dir := newWorkspaceDir(t)
	runCLI(t, dir, "init")
	writeTree(t, dir, "t/Upper.md", handNote("upper case", "x\n"))
	writeTree(t, dir, "t/x.md/inner.md", handNote("inside x.md", "x\n"))
	writeTree(t, dir, "notes/bom.md", "\ufeff"+handNote("saved with a mark", "body\n"))
	writeTree(t, dir, "notes/crlf.md", "---\r\ndigest: kept with CRLF\r\n---\r\nline one\r\n")

	s := startMCPGo(t, dir, "agent")
	if it := s.waitVersion("notes/bom", 1); it.Digest != "saved with a mark" || it.Problem != "" {
		t.Errorf("a note with a byte-order mark reads %+v", it)
	}
	s.waitVersion("notes/crlf", 1)
	s.write(map[string]any{"uri": "notes/crlf", "digest": "kept with CRLF", "append": "line two\n"})
	if got := readTree(t, dir, "notes/crlf.md"); !strings.HasSuffix(got, "\r\nline one\r\nline two\r\n") ||
		strings.Count(got, "\n") != strings.Count(got, "\r\n") {
		t.Errorf("an append to a CRLF note: %q", got)
	}
	eventually(t, "the start-up scan explains the misnamed files", func() bool {
		log := s.stderr.String()
		return strings.Contains(log, "t/Upper.md is not a note") && strings.Contains(log, "t/x.md/inner.md is not a note")
	})
	out, err := cliCommand(dir, "health").CombinedOutput()
	for _, want := range []string{"files t/Upper.md: not a note", "rename it t/upper.md", "files t/x.md/inner.md: not a note"} {
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("health (%v) does not say %q:\n%s", err, want, out)
		}
	}
	msg := s.fail("update_state", map[string]any{"uri": "notes/long", "digest": strings.Repeat("d", 2001), "body": "x"}, "too_large")
	if !strings.Contains(msg, "over the limit of 2000") {
		t.Errorf("an over-long digest: %s", msg)
	}
	s.closeClean()
}

// A write that fails past its commit point (here git's index cannot be
// written: a person replaced .git/index with a directory; a full disk does
// the same) happened: it is acknowledged at its version with a warning not
// to write it again, the server's log says why, and once the person has
// repaired git the next write finishes it.
func TestMCPWritePastItsCommitPointIsAcknowledged(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	const key = "team/log"
	s.write(map[string]any{"uri": key, "digest": "the team's log", "body": "one\n", "expect_version": 0})

	index := filepath.Join(dir, ".git", "index")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(index, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := s.call("update_state", map[string]any{"uri": key, "digest": "the team's log", "append": "two\n"})
	if res.isError {
		t.Fatalf("a write past its commit point was reported as failed: %s", res.text)
	}
	w := decodeWrite(t, res.text)
	if w.Version != 2 || !slices.ContainsFunc(w.Warnings, func(s string) bool { return strings.Contains(s, "do not write it again") }) {
		t.Errorf("the write's answer: %+v", w)
	}
	eventually(t, "the server's log says what did not finish", func() bool {
		return strings.Contains(s.stderr.String(), "write committed, not finished")
	})
	if got := fixtures.GitOutput(t, dir, "show", "main:"+key+".md"); !strings.HasSuffix(got, "one\ntwo\n") {
		t.Errorf("the acknowledged append is not in git:\n%s", got)
	}

	// The person repairs git; the next write finishes the last one first.
	if err := os.RemoveAll(index); err != nil {
		t.Fatal(err)
	}
	if out, err := afterIndexLock(func() ([]byte, error) { return fixtures.GitCmd(dir, "reset", "-q").CombinedOutput() }); err != nil {
		t.Fatalf("git reset -q: %v\n%s", err, out)
	}
	s.write(map[string]any{"uri": key, "digest": "the team's log", "append": "three\n"})
	if it := s.itemOf(key); it.Version != 3 || it.Body != "one\ntwo\nthree\n" {
		t.Errorf("after the repair: %+v", it)
	}
	s.closeClean()
	checkWorkspace(t, dir)
}

// A full disk fails writes at every step of the write path in turn: the
// workspace is on a small file system that a filler file has filled, and
// the filler gives back 24 KB before each append (a refused write keeps
// the objects it wrote, about 16 KB, until git gc). Every append the server
// acknowledged is in the note exactly once and every one it refused is
// not, so an agent that retries a refused write never duplicates it.
func TestMCPDiskFull(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small file system here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", mnt, err, out)
		}
	})
	dir := filepath.Join(mnt, "acme")
	s := startMCPGo(t, dir, "agent")
	const key = "team/log"
	s.write(map[string]any{"uri": key, "digest": "the team's log", "body": "start\n", "expect_version": 0})

	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break // the disk is full
		}
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	acked, refused, unfinished := map[string]bool{}, map[string]bool{}, 0
	for i := 0; i < 300 && size > 0; i++ {
		size = max(0, size-24<<10)
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		entry := fmt.Sprintf("entry %d", i)
		ctx, cancel := contextWithTimeout()
		res, err := s.callTool(ctx, "update_state", map[string]any{"uri": key, "digest": "the team's log", "append": entry + "\n"})
		cancel()
		switch {
		case err != nil:
			t.Fatalf("append %d: %v\nserver log:\n%s", i, err, s.stderr.String())
		case res.isError:
			refused[entry] = true
			if !strings.HasPrefix(res.text, "internal: nothing was written") {
				t.Errorf("append %d refused without saying it did not happen: %s", i, res.text)
			}
		default:
			acked[entry] = true
			if strings.Contains(res.text, "do not write it again") {
				unfinished++
			}
		}
	}
	f.Close()
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d appends acknowledged (%d past their commit point, with a warning), %d refused", len(acked), unfinished, len(refused))
	if len(refused) == 0 || len(acked) == 0 {
		t.Fatalf("the disk never filled, or never had room: %d acknowledged, %d refused", len(acked), len(refused))
	}
	s.write(map[string]any{"uri": key, "digest": "the team's log", "append": "done\n"})
	lines := strings.Split(s.fullItem(key).Body, "\n")
	count := map[string]int{}
	for _, l := range lines {
		count[l]++
	}
	for entry := range acked {
		if count[entry] != 1 {
			t.Errorf("acknowledged %q is in the note %d times", entry, count[entry])
		}
	}
	for entry := range refused {
		if count[entry] != 0 {
			t.Errorf("refused %q is in the note %d times", entry, count[entry])
		}
	}
	s.closeClean()
	checkWorkspace(t, dir)
	if out := fixtures.GitOutput(t, dir, "fsck", "--strict", "--no-dangling", "--no-progress"); strings.TrimSpace(out) != "" {
		t.Errorf("git fsck: %s", out)
	}
}

// `git reset --hard HEAD` and `git stash` mean "throw away my uncommitted
// changes", never "and the agents' commits": run again and again while two
// servers increment a counter with compare-and-swap, they drop commits that
// land in their window, and the next write brings them back with their
// files. A reset whose ref update a write beat leaves older files behind,
// which are put right (a sibling note may keep one), never committed as the
// counter's next version. Every acknowledged write stays on the branch, the
// counter's history never goes back, and no version is acknowledged twice.
func TestMCPResetAndStashDuringWrites(t *testing.T) {
	dir := newWorkspaceDir(t)
	servers := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b")}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the branch's reflog:\n%s\nHEAD's reflog:\n%s\nthe branch's last commits (commit, parents):\n%s\nthe servers' logs:\n%s\n%s",
				fixtures.Git(t, dir, "reflog", "-40", "--format=%h %gs", "main"), fixtures.GitOutput(t, dir, "reflog", "-40", "--format=%h %gs", "HEAD"),
				fixtures.Git(t, dir, "log", "-40", "--format=%h %p %s", "main"), servers[0].stderr.String(), servers[1].stderr.String())
		}
	})
	const key = "team/counter"
	servers[0].write(map[string]any{"uri": key, "digest": "count 0", "body": "0\n", "expect_version": 0})
	writeTree(t, dir, "scratch.txt", "the person's scratch file\n")
	fixtures.Git(t, dir, "add", "scratch.txt")
	fixtures.Git(t, dir, "commit", "-q", "-m", "a scratch file of the person's")

	const perAgent = 20
	counting := startCounting(t, servers, key, perAgent)
	done := counting.done
	resets, stashes := 0, 0
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			// The person throws away a change of theirs, by reset or by
			// stash; a git command that meets a write's index lock fails
			// and is simply not counted.
			script := "echo change >> scratch.txt && git reset -q --hard HEAD"
			if i%2 == 1 {
				script = "echo change >> scratch.txt && git stash -q"
			}
			cmd := exec.Command("sh", "-c", script)
			cmd.Dir, cmd.Env = dir, mcpEnv("")
			if cmd.Run() == nil {
				if i%2 == 1 {
					stashes++
				} else {
					resets++
				}
			}
			continue
		}
		break
	}
	// One more write brings back whatever the last reset dropped. What it
	// read may be from before that (a reset had just dropped the last
	// increment): then it conflicts, as it must, and reads again.
	for try := 0; ; try++ {
		last := servers[0].itemOf(key)
		res := servers[0].call("update_state", map[string]any{"uri": key, "digest": "final", "body": last.Body, "expect_version": last.Version})
		if !res.isError {
			break
		}
		if !strings.HasPrefix(res.text, "conflict: ") || try == 3 {
			t.Fatalf("the last write: %s", res.text)
		}
	}
	// The person's last change is thrown away for good (their last reset
	// may have met a write's index lock and failed).
	eventually(t, "the person's scratch file is back", func() bool {
		return fixtures.GitCmd(dir, "checkout", "-q", "--", "scratch.txt").Run() == nil
	})
	restored := strings.Count(fixtures.GitOutput(t, dir, "reflog", "show", "--format=%gs", "main"), "bring back")
	acked := counting.acked
	history := strings.Join(gitLog(t, dir, key+".md"), "\n")
	siblings, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(key)+"-*.md"))
	t.Logf("%d acknowledged increments; the person reset %d times and stashed %d times; %d races brought back; "+
		"%d stale files kept as sibling notes", len(acked), resets, stashes, restored, len(siblings))

	counting.onBranch(t, history, key)
	// A reset of the person's that git refused halfway (a write moved the
	// branch before its ref update) leaves its older files behind: they are
	// put right, never committed as the counter's next version.
	if strings.Contains(history, "by hand") {
		t.Errorf("stale files were committed as the person's edit:\n%s", grepLines(history, "by hand"))
	}
	// Each value, once and in order: the counter's history never goes back.
	values := counterValues(t, dir, key+".md")
	want := make([]int, 0, 2*perAgent+2)
	for v := range 2*perAgent + 1 {
		want = append(want, v)
	}
	want = append(want, 2*perAgent) // the last write's
	if !slices.Equal(values, want) {
		t.Errorf("the counter's versions hold %v, want %v", values, want)
	}
	if it := servers[1].itemOf(key); strings.TrimSpace(it.Body) != strconv.Itoa(2*perAgent) || it.Version != 2*perAgent+2 {
		t.Errorf("the counter reads %q at version %d, want %d at version %d", it.Body, it.Version, 2*perAgent, 2*perAgent+2)
	}
	for _, sibling := range siblings {
		rel, _ := filepath.Rel(dir, sibling)
		if text := readTree(t, dir, filepath.ToSlash(rel)); !strings.Contains(text, "contradicts: ["+key+"]") {
			t.Errorf("the sibling note %s does not link contradicts %s:\n%s", rel, key, text)
		}
	}
	if disk := readTree(t, dir, key+".md"); !strings.HasSuffix(disk, "\n"+strconv.Itoa(2*perAgent)+"\n") {
		t.Errorf("the counter on disk: %q", disk)
	}
	eventually(t, "git status is clean", func() bool {
		return fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all") == ""
	})
	for _, s := range servers {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}

// A rewind the person means (`git reset --hard HEAD~2`) stands in content,
// but never takes version numbers back: the server (from its watcher, with
// no write needed) puts the rewound content as a commit on top of the
// agents' commits the reset dropped, so the note's next version is higher
// than any it had, the dropped writes stay in history, and the person's
// files and git's index are left as the reset made them.
func TestMCPDeliberateRewindGivesNewVersions(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	const key = "team/plan"
	for v := range 3 {
		s.write(map[string]any{"uri": key, "digest": fmt.Sprintf("plan %d", v+1), "body": fmt.Sprintf("%d\n", v+1), "expect_version": v})
	}
	fixtures.Git(t, dir, "reset", "-q", "--hard", "HEAD~2")
	it := s.waitVersion(key, 4)
	if strings.TrimSpace(it.Body) != "1" || it.Digest != "plan 1" {
		t.Errorf("after the rewind the note reads %q (%q) at version %d, want the rewound 1 (plan 1)", it.Body, it.Digest, it.Version)
	}
	if got := readTree(t, dir, key+".md"); !strings.HasSuffix(got, "\n1\n") {
		t.Errorf("the rewind did not stand on disk: %q", got)
	}
	s.write(map[string]any{"uri": key, "digest": "plan after the rewind", "body": "after\n", "expect_version": 4})

	history := gitLog(t, dir, key+".md")
	want := []string{"plan after the rewind", "rewind main to ", "plan 3", "plan 2", "plan 1"}
	if len(history) != len(want) {
		t.Fatalf("the note's history:\n%s", strings.Join(history, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(history[i], w) {
			t.Errorf("commit %d of the note's history is %q, want %q", i, history[i], w)
		}
	}
	if fixtures.GitOutput(t, dir, "rev-list", "--merges", "main") != "" {
		t.Error("the history is no longer linear")
	}
	eventually(t, "the server's log tells of the rewind", func() bool { return strings.Contains(s.stderr.String(), "rewound main past 2") })
	if refs := fixtures.GitOutput(t, dir, "for-each-ref", "refs/blackboard/rescued/"); refs != "" {
		t.Errorf("a rescue ref for commits still in the history:\n%s", refs)
	}
	s.closeClean()
	checkWorkspace(t, dir)
	if out, err := cliCommand(dir, "health").CombinedOutput(); err != nil {
		t.Errorf("health after the rewind: %v\n%s", err, out)
	}
}

// A person rewinds and then commits on the rewound branch before the board
// looks (no server runs; the next CLI write is the first to see it). Their
// commits are kept with their trees, authors and messages, after the commit
// that undoes the dropped writes, and every version is higher than before.
func TestRewindThenPersonsCommitsAreKept(t *testing.T) {
	dir := newWorkspaceDir(t)
	runCLI(t, dir, "init")
	for v := range 3 {
		runCLI(t, dir, "put", "team/plan", "--digest", fmt.Sprintf("plan %d", v+1), "--body", fmt.Sprintf("%d", v+1), "--expect", strconv.Itoa(v))
	}
	fixtures.Git(t, dir, "reset", "-q", "--hard", "HEAD~2")
	if err := os.WriteFile(filepath.Join(dir, "team", "idea.md"), []byte("---\ndigest: my idea\n---\nan idea\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "add", "team/idea.md")
	fixtures.Git(t, dir, "commit", "-q", "-m", "my idea")
	const format = "--format=%T %an <%ae> %ad %cn <%ce> %cd %s"
	idea := fixtures.GitOutput(t, dir, "log", "-1", format, "HEAD")

	runCLI(t, dir, "put", "team/other", "--digest", "other", "--body", "o", "--expect", "0")

	subjects := strings.Split(strings.TrimSpace(fixtures.GitOutput(t, dir, "log", "--format=%an%x09%s", "-6", "main")), "\n")
	want := []string{"\tupdate team/other v1", "\tmy idea", "\trewind main to ", "\tupdate team/plan v3", "\tupdate team/plan v2", "\tupdate team/plan v1"}
	for i, w := range want {
		if i >= len(subjects) || !strings.Contains(subjects[i], w) {
			t.Fatalf("the branch's history:\n%s\nwant, in order: %q", strings.Join(subjects, "\n"), want)
		}
	}
	if got := fixtures.GitOutput(t, dir, "log", "-1", format, "HEAD~1"); got != idea {
		t.Errorf("the person's commit was changed:\n%s, was\n%s", got, idea)
	}
	if out := runCLI(t, dir, "get", "team/plan"); !strings.Contains(out, "/team/plan v4\ndigest: plan 1\n") {
		t.Errorf("team/plan after the rewind, want version 4 (3 before it, and the rewind's commit) with the rewound digest:\n%s", out)
	}
	if out := runCLI(t, dir, "get", "team/idea"); !strings.Contains(out, "/team/idea v1\ndigest: my idea\n") {
		t.Errorf("the person's note after the rewind:\n%s", out)
	}
	checkWorkspace(t, dir)
}

// A reset to a commit outside the branch's history (another branch) cannot
// be kept as an undo on top: the branch stays where the person put it, the
// agents' commits it dropped are kept under a rescue ref, and the server's
// log and health say where and how to bring them back.
func TestMCPResetElsewhereKeepsARescueRef(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	skipVersionCheck(t, dir, "the person's reset drops the acknowledged writes from the branch (they live under the rescue ref)")
	const key = "team/plan"
	for v := range 2 {
		s.write(map[string]any{"uri": key, "digest": fmt.Sprintf("plan %d", v+1), "body": fmt.Sprintf("%d\n", v+1), "expect_version": v})
	}
	dropped := strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-parse", "main"))
	side := strings.TrimSpace(fixtures.GitOutput(t, dir, "commit-tree", "-p", "main~2", "-m", "a person's side line", "main~2^{tree}"))
	fixtures.Git(t, dir, "branch", "side", side)
	fixtures.Git(t, dir, "reset", "-q", "--hard", "side")
	s.waitGone(key)

	ref := "refs/blackboard/rescued/" + dropped
	eventually(t, "the server's log tells of the rescue", func() bool { return strings.Contains(s.stderr.String(), ref) })
	if subjects := fixtures.GitOutput(t, dir, "log", "--format=%s", "main.."+ref); !strings.Contains(subjects, "plan 2") || !strings.Contains(subjects, "plan 1") {
		t.Errorf("the rescue ref holds:\n%s", subjects)
	}
	out, err := cliCommand(dir, "health").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "git merge "+ref) {
		t.Errorf("health (%v) does not tell of the rescue:\n%s", err, out)
	}
	s.closeClean()
	checkWorkspace(t, dir)
}

// The race itself, made to happen every time with git's own commands, in
// the order `git reset --hard HEAD` runs them: it resolves HEAD, an agent's
// write lands (git releases the index lock before it moves the branch, so
// a write that waited on the lock lands right there), then it resets the
// files and git's index, and moves the branch to what it resolved. The next
// write brings the dropped one back, files and all, and the person's own
// edit made since stays theirs.
func TestMCPResetRaceBringsWritesBack(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	s.write(map[string]any{"uri": "team/a", "digest": "a one", "body": "a1\n", "expect_version": 0})
	s.write(map[string]any{"uri": "team/b", "digest": "b one", "body": "b1\n", "expect_version": 0})
	resolved := strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-parse", "HEAD"))

	s.write(map[string]any{"uri": "team/a", "digest": "a two", "body": "a2\n", "expect_version": 1})
	s.write(map[string]any{"uri": "team/b", "digest": "b two", "body": "b2\n", "expect_version": 1})
	fixtures.Git(t, dir, "read-tree", "-u", "--reset", resolved)
	fixtures.Git(t, dir, "update-ref", "-m", "reset: moving to HEAD", "refs/heads/main", resolved)
	if got := readTree(t, dir, "team/a.md"); !strings.HasSuffix(got, "a1\n") {
		t.Fatalf("the reset did not revert the files: %q", got)
	}
	// The person edits b by hand before any write.
	writeTree(t, dir, "team/b.md", handNote("b by hand", "the person's b\n"))

	s.write(map[string]any{"uri": "team/c", "digest": "c one", "body": "c1\n", "expect_version": 0})
	for short, want := range map[string]string{"team/a": "a2\n", "team/c": "c1\n"} {
		if it := s.itemOf(short); it.Body != want {
			t.Errorf("%s reads %+v after the next write, want %q", short, it, want)
		}
	}
	if got := readTree(t, dir, "team/a.md"); !strings.HasSuffix(got, "a2\n") {
		t.Errorf("team/a.md on disk after the next write: %q", got)
	}
	it := s.waitVersion("team/b", 3)
	if it.Body != "the person's b\n" {
		t.Errorf("the person's edit of b: %+v", it)
	}
	history := strings.Join(gitLog(t, dir), "\n")
	for _, want := range []string{"update team/a v2: a two", "update team/b v2: b two", "edit team/b v3 by hand: b by hand"} {
		if !strings.Contains(history, want) {
			t.Errorf("%q is not on the branch:\n%s", want, history)
		}
	}
	if !strings.Contains(s.stderr.String(), "they are back") {
		eventually(t, "the server's log tells of the race", func() bool { return strings.Contains(s.stderr.String(), "they are back") })
	}
	s.closeClean()
	checkWorkspace(t, dir)
}

// The steps of one bad interleaving, made to happen every time with git's
// own commands and the CLI (whose every write runs the repairs first): a
// write lands while the person is on a branch of theirs; their `git
// checkout main` writes the older file it read before that write; before
// the board puts it right, they make a new branch, which carries the older
// file over as a staged change; another write lands. The board gives the
// new branch its own file back, `git checkout main` works, and the board's
// file comes back on main: nothing staged the person did not make, nothing
// committed as their edit.
func TestOlderFileCarriedOntoANewBranchIsGivenBack(t *testing.T) {
	dir := newWorkspaceDir(t)
	runCLI(t, dir, "init")
	const key = "team/counter"
	put := func(v int) {
		runCLI(t, dir, "put", key, "--digest", fmt.Sprintf("count %d", v), "--body", strconv.Itoa(v), "--expect", strconv.Itoa(v-1))
	}
	put(1)
	fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
	put(2) // to main only: side is checked out
	// `git checkout main` that read main before that write: version 1's
	// files, HEAD on main.
	fixtures.Git(t, dir, "symbolic-ref", "HEAD", "refs/heads/main")
	fixtures.Git(t, dir, "checkout", "-q", "-b", "side2")
	if st := fixtures.GitOutput(t, dir, "status", "--porcelain"); st != "M  "+key+".md\n" {
		t.Fatalf("the new branch should start with the older file staged, git status says %q", st)
	}
	put(3) // to main only
	runCLI(t, dir, "put", "team/other", "--digest", "other", "--body", "o", "--expect", "0")
	if st := fixtures.GitOutput(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("the person's new branch is left with changes they did not make:\n%s", st)
	}
	fixtures.Git(t, dir, "checkout", "-q", "main")
	runCLI(t, dir, "put", "team/third", "--digest", "third", "--body", "t", "--expect", "0")
	if got := readTree(t, dir, key+".md"); !strings.HasSuffix(got, "---\n3") {
		t.Errorf("the counter on main holds %q, want version 3's", got)
	}
	if history := strings.Join(gitLog(t, dir, key+".md"), "\n"); strings.Contains(history, "by hand") {
		t.Errorf("the older file was committed as the person's edit:\n%s", history)
	}
	checkWorkspace(t, dir)
}

// The steps of a `git checkout main`, run while main is checked out, that
// read the branch before a write and wrote its files after, made to happen
// every time: git writes the older file and its index entry over the
// write's, then logs the checkout in HEAD's reflog. The board puts the
// write's file back rather than commit the older one as the person's edit,
// on main and on a branch the person makes right after (which carries the
// file over). A person who brings the older version back on purpose, after
// their checkout, keeps it: it is committed as theirs.
func TestOlderFileFromACheckoutOfTheBranchIsPutRight(t *testing.T) {
	const key = "team/counter"
	setup := func(t *testing.T) string {
		dir := newWorkspaceDir(t)
		runCLI(t, dir, "init")
		for v := 1; v <= 2; v++ {
			runCLI(t, dir, "put", key, "--digest", fmt.Sprintf("count %d", v), "--body", strconv.Itoa(v), "--expect", strconv.Itoa(v-1))
		}
		// The person's command before: their checkout began after it.
		fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
		fixtures.Git(t, dir, "checkout", "-q", "main")
		return dir
	}
	// What the racing checkout leaves: version 1's file and index entry
	// over version 3's, and then its line in HEAD's reflog.
	staleCheckout := func(t *testing.T, dir string) {
		runCLI(t, dir, "put", key, "--digest", "count 3", "--body", "3", "--expect", "2")
		fixtures.Git(t, dir, "checkout", "main~1", "--", key+".md")
		fixtures.Git(t, dir, "symbolic-ref", "-m", "checkout: moving from main to main", "HEAD", "refs/heads/main")
	}
	wantVersion := func(t *testing.T, dir string, v int) {
		t.Helper()
		if got := readTree(t, dir, key+".md"); !strings.HasSuffix(got, "---\n"+strconv.Itoa(v)) {
			t.Errorf("the counter's file holds %q, want version %d's", got, v)
		}
		if history := strings.Join(gitLog(t, dir, key+".md"), "\n"); strings.Contains(history, "by hand") {
			t.Errorf("the older file was committed as the person's edit:\n%s", history)
		}
	}

	t.Run("on the branch", func(t *testing.T) {
		dir := setup(t)
		staleCheckout(t, dir)
		writeByServer(t, dir, "team/other")
		wantVersion(t, dir, 3)
		if st := fixtures.GitOutput(t, dir, "status", "--porcelain"); st != "" {
			t.Errorf("git status: %q, want clean", st)
		}
		checkWorkspace(t, dir)
	})
	t.Run("carried onto a new branch", func(t *testing.T) {
		dir := setup(t)
		staleCheckout(t, dir)
		fixtures.Git(t, dir, "checkout", "-q", "-b", "side2")
		runCLI(t, dir, "put", key, "--digest", "count 4", "--body", "4", "--expect", "3") // to main only
		runCLI(t, dir, "put", "team/another", "--digest", "another", "--body", "a", "--expect", "0")
		if st := fixtures.GitOutput(t, dir, "status", "--porcelain"); st != "" {
			t.Errorf("the person's new branch is left with changes they did not make: %q", st)
		}
		fixtures.Git(t, dir, "checkout", "-q", "main")
		runCLI(t, dir, "put", "team/other", "--digest", "other", "--body", "o", "--expect", "0")
		wantVersion(t, dir, 4)
		checkWorkspace(t, dir)
	})
	t.Run("brought back on purpose after the checkout", func(t *testing.T) {
		dir := setup(t)
		second := fixtures.Git(t, dir, "rev-parse", "HEAD")
		runCLI(t, dir, "put", key, "--digest", "count 3", "--body", "3", "--expect", "2")
		written := time.Now()
		fixtures.Git(t, dir, "symbolic-ref", "-m", "checkout: moving from main to main", "HEAD", "refs/heads/main")
		time.Sleep(1100 * time.Millisecond) // past the checkout's second
		fixtures.Git(t, dir, "checkout", second, "--", key+".md")
		time.Sleep(600 * time.Millisecond) // past a file git wrote a moment ago
		// Past the checkout's second, the older file is not the checkout's
		// to put right silently. But it appeared right after the write
		// that moved the branch past it (fsstore's staleWindow): it cannot
		// be told from what a reset that read the branch before the write
		// leaves, so version 3 stays and its text is kept as a sibling note
		// that contradicts the counter.
		// The window is five seconds from the write (fsstore's
		// staleWindow); a machine that took most of them to get here (a
		// disk that syncs slowly, a loaded machine) cannot show what
		// happens within it, only what happens after.
		if late := time.Since(written); late < 4*time.Second {
			writeByServer(t, dir, "team/other")
			wantVersion(t, dir, 3)
			siblings, _ := filepath.Glob(filepath.Join(dir, "team", "counter-*.md"))
			if len(siblings) != 1 || !strings.HasSuffix(readTree(t, dir, "team/"+filepath.Base(siblings[0])), "---\n2") ||
				!strings.Contains(readTree(t, dir, "team/"+filepath.Base(siblings[0])), "contradicts: [team/counter]") {
				t.Errorf("the restore within the window is not kept as one sibling note holding version 2's text: %q", siblings)
			}
		} else {
			t.Logf("the restore came %s after the write, too near the window's end to check it within", late.Round(time.Millisecond))
		}
		// Past the window (and a second for reflog times), the person's
		// restore is theirs.
		time.Sleep(time.Until(written.Add(6500 * time.Millisecond)))
		fixtures.Git(t, dir, "checkout", second, "--", key+".md")
		time.Sleep(600 * time.Millisecond)
		writeByServer(t, dir, "team/other2")
		if got := readTree(t, dir, key+".md"); !strings.HasSuffix(got, "---\n2") {
			t.Errorf("the counter's file holds %q, want the person's (version 2's)", got)
		}
		if history := gitLog(t, dir, key+".md"); !strings.Contains(history[0], "by hand") {
			t.Errorf("the person's change is not committed as theirs:\n%s", strings.Join(history, "\n"))
		}
		checkWorkspace(t, dir)
	})
}

// writeByServer starts a server, makes it write a new note at key, and
// waits for the board's engine to leave. The engine compares the whole work
// tree as it starts, as a CLI write (which compares only its own note) does
// not, and finishes what it found (a file to put right) before it leaves:
// on a disk that syncs slowly, after the agent's write was answered.
func writeByServer(t *testing.T, dir, key string) {
	t.Helper()
	s := startMCPGo(t, dir, "agent")
	s.write(map[string]any{"uri": key, "digest": "written by a server", "body": "o", "expect_version": 0})
	s.closeClean()
	engineStopped(t, dir)
}

// A person who steps onto a branch of their own and back
// (`git checkout -b side && git checkout main`), again and again while two
// servers count with compare-and-swap, never reverts an acknowledged write
// in the files, never commits stale files as their own edit, and is never
// left with a staged change they did not make.
//
// git's checkout lets git's index lock go before it moves HEAD, and
// `git checkout -b` can read HEAD before a write and write git's index
// after it; `git checkout main` can write files older than the branch. A
// write that was waiting for the lock waits a moment more (gitver's
// settleAfterGit), one that HEAD left in its middle takes its files back
// out, the next look takes back what a checkout carried onto a new branch
// (any version of the board's newer than that branch, or older than the
// board's and recorded as waiting to be put right), and no write compares
// or places files while such older files wait (fsstore/unplaced.go). A
// `git checkout main` on main that read the branch before a write and
// wrote its files after is told by HEAD's reflog (fsstore/internal/history).
func TestMCPCheckoutAwayAndBackDuringWrites(t *testing.T) {
	dir := newWorkspaceDir(t)
	servers := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b")}
	const key = "team/counter"
	servers[0].write(map[string]any{"uri": key, "digest": "count 0", "body": "0\n", "expect_version": 0})

	const perAgent = 15
	counting := startCounting(t, servers, key, perAgent)
	done := counting.done
	trips, failed := 0, 0
	var lastErr, lastBack string
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			cmd := exec.Command("sh", "-c", fmt.Sprintf("git checkout -q -b side-%d && git checkout -q main", i))
			cmd.Dir, cmd.Env = dir, mcpEnv("")
			if out, err := cmd.CombinedOutput(); err == nil {
				trips++
			} else {
				failed++
				lastErr = string(out)
				// Back on main whatever happened, trying again a moment
				// later as a person would (a watching server puts a
				// carried-over change right within a second; a loaded
				// machine may take a few).
				for range 80 {
					out, err := fixtures.GitCmd(dir, "checkout", "-q", "main").CombinedOutput()
					if err == nil {
						break
					}
					lastBack = string(out)
					time.Sleep(50 * time.Millisecond)
				}
			}
			continue
		}
		break
	}
	acked := counting.acked
	t.Logf("%d acknowledged increments; the person went to a branch and back %d times (%d attempts failed; last: %s)",
		len(acked), trips, failed, strings.TrimSpace(lastErr))
	if head := strings.TrimSpace(fixtures.GitOutput(t, dir, "symbolic-ref", "HEAD")); head != "refs/heads/main" {
		t.Fatalf("the person is left on %s: git checkout main said %s\ngit status:\n%s\nHEAD's reflog:\n%s", head,
			strings.TrimSpace(lastBack), fixtures.GitOutput(t, dir, "status", "--porcelain"), fixtures.GitOutput(t, dir, "reflog", "-n", "40", "--format=%h %gs", "HEAD")+"\ngit diff:\n"+fixtures.GitOutput(t, dir, "diff")+"\nmain: "+fixtures.GitOutput(t, dir, "rev-parse", "main")+"side HEAD: "+fixtures.GitOutput(t, dir, "rev-parse", "HEAD"))
	}
	eventually(t, "git status is clean", func() bool {
		return fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all") == ""
	})
	history := strings.Join(gitLog(t, dir, key+".md"), "\n")
	counting.onBranch(t, history, key)
	if strings.Contains(history, "by hand") {
		t.Errorf("stale files were committed as the person's edit:\n%s\nHEAD's reflog:\n%s", grepLines(history, "by hand"),
			fixtures.Git(t, dir, "reflog", "--format=%h %gs", "HEAD"))
	}
	if it := servers[1].itemOf(key); strings.TrimSpace(it.Body) != strconv.Itoa(2*perAgent) {
		t.Errorf("the counter reads %q at version %d, want %d", it.Body, it.Version, 2*perAgent)
	}
	for _, s := range servers {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}

// counting is agents incrementing a counter note with compare-and-swap, one
// goroutine per server, perAgent acknowledged increments each.
type counting struct {
	done  chan struct{}  // closed when every agent is done
	acked map[int]string // version -> digest of each acknowledged write; read after done
}

func startCounting(t *testing.T, servers []*session, key string, perAgent int) *counting {
	c := &counting{done: make(chan struct{}), acked: map[int]string{}}
	var mu sync.Mutex
	var agents sync.WaitGroup
	for i, s := range servers {
		agents.Go(func() {
			for n := 0; n < perAgent; {
				it := s.itemOf(key)
				value, _ := strconv.Atoi(strings.TrimSpace(it.Body))
				digest := fmt.Sprintf("count %d by agent %d", value+1, i)
				res := s.call("update_state", map[string]any{"uri": key, "digest": digest,
					"body": strconv.Itoa(value+1) + "\n", "expect_version": it.Version})
				if res.isError {
					if !strings.HasPrefix(res.text, "conflict: ") {
						t.Errorf("write: %s", res.text)
						return
					}
					continue
				}
				w := decodeWrite(t, res.text)
				mu.Lock()
				if prev, dup := c.acked[w.Version]; dup {
					t.Errorf("version %d acknowledged twice: %q and %q", w.Version, prev, digest)
				}
				c.acked[w.Version] = digest
				mu.Unlock()
				n++
			}
		})
	}
	go func() { agents.Wait(); close(c.done) }()
	return c
}

// Text written through a file opened before a write replaced the file ends
// up in a version: an append through a handle held open across an agent's
// write (a shell's `exec 3>>note.md`), and the second half of an in-place
// save that paused while an agent wrote.
func TestMCPTextThroughAFileOpenedBeforeAWrite(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	const key = "team/log"
	s.write(map[string]any{"uri": key, "digest": "the team's log", "body": "one\n", "expect_version": 0})

	held, err := os.OpenFile(filepath.Join(dir, key+".md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.write(map[string]any{"uri": key, "digest": "the team's log", "append": "an agent's line\n"})
	if _, err := held.WriteString("a line through the held file\n"); err != nil {
		t.Fatal(err)
	}
	held.Close()
	eventually(t, "the held file's line is in the note", func() bool {
		return strings.HasSuffix(s.itemOf(key).Body, "one\nan agent's line\na line through the held file\n")
	})

	// A slow save: the file truncated, half written, held open while an
	// agent writes the note, then finished. Nothing of it is committed
	// while it is open, the agent's write does not replace the file under
	// it, and the whole save is one version once it is closed.
	const page = "team/page"
	s.write(map[string]any{"uri": page, "digest": "a page", "body": "old text\n", "expect_version": 0})
	pageFile := filepath.Join(dir, page+".md")
	save, err := os.OpenFile(pageFile, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := save.WriteString(handNote("a page, saved slowly", "first half\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // longer than the watcher's debounce
	if w := s.write(map[string]any{"uri": page, "digest": "an agent's page", "body": "the agent's text\n", "expect_version": 1}); w.Version != 2 {
		t.Fatalf("the agent's write is at version %d, want 2: the half save was committed", w.Version)
	}
	if disk, _ := os.ReadFile(pageFile); string(disk) != handNote("a page, saved slowly", "first half\n") {
		t.Errorf("the file being saved was replaced: it holds %q", disk)
	}
	if _, err := save.WriteString("second half\n"); err != nil {
		t.Fatal(err)
	}
	save.Close()
	eventually(t, "the slow save is the note's next version", func() bool {
		return strings.HasSuffix(s.itemOf(page).Body, "first half\nsecond half\n")
	})
	if inHistory(t, dir, page+".md", handNote("a page, saved slowly", "first half\n")) {
		t.Errorf("half of the slow save was committed as a version")
	}
	history := strings.Join(gitLog(t, dir), "\n")
	for _, want := range []string{"update team/page v2: an agent's page", "edit team/page v3 by hand", "edit team/log v3 by hand"} {
		if !strings.Contains(history, want) {
			t.Errorf("%q is not on the branch:\n%s", want, history)
		}
	}
	s.closeClean()
	checkWorkspace(t, dir)
}

// A person appends lines to a note, opening and closing it each time, while
// an agent appends to it too: every line either wrote ends up in a version.
func TestMCPAppendsRacingAppends(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	const key = "team/log"
	s.write(map[string]any{"uri": key, "digest": "the team's log", "body": "start\n", "expect_version": 0})
	const lines = 40
	var person sync.WaitGroup
	person.Go(func() {
		for i := range lines {
			f, err := os.OpenFile(filepath.Join(dir, key+".md"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(f, "person line %d\n", i)
			f.Close()
			time.Sleep(time.Duration(5+i%4*5) * time.Millisecond)
		}
	})
	for i := range lines {
		s.write(map[string]any{"uri": key, "digest": "the team's log", "append": fmt.Sprintf("agent line %d\n", i)})
	}
	person.Wait()
	var absent []string
	eventuallyOr(t, "every line is in a version", func() bool {
		all := ""
		for _, c := range strings.Fields(fixtures.GitOutput(t, dir, "log", "--format=%H", "--", key+".md")) {
			all += fixtures.GitOutput(t, dir, "show", c+":"+key+".md")
		}
		absent = absent[:0]
		for i := range lines {
			for _, who := range []string{"person", "agent"} {
				if line := fmt.Sprintf("%s line %d\n", who, i); !strings.Contains(all, line) {
					absent = append(absent, line)
				}
			}
		}
		return len(absent) == 0
	}, func() string {
		return fmt.Sprintf("not in any version: %q\nhistory:\n%s\nserver log:\n%s", absent,
			fixtures.GitOutput(t, dir, "log", "--format=%h %s"), s.stderr.String())
	})
	final := s.itemOf(key).Body
	missing := 0
	for i := range lines {
		for _, who := range []string{"person", "agent"} {
			if !strings.Contains(final, fmt.Sprintf("%s line %d\n", who, i)) {
				missing++
			}
		}
	}
	t.Logf("%d lines by each; %d of them not in the note as it is now (each is in an earlier version)", lines, missing)
	s.closeClean()
	checkWorkspace(t, dir)
}

// counterValues is the value of each version of the counter's file, oldest
// first.
func counterValues(t *testing.T, dir, path string) []int {
	t.Helper()
	var out []int
	commits := strings.Fields(fixtures.GitOutput(t, dir, "log", "--first-parent", "--format=%H", "--", path))
	for _, c := range slices.Backward(commits) {
		lines := strings.Split(strings.TrimSpace(fixtures.GitOutput(t, dir, "show", c+":"+path)), "\n")
		v, err := strconv.Atoi(lines[len(lines)-1])
		if err != nil {
			t.Fatalf("version %s of %s: %v", c, path, err)
		}
		out = append(out, v)
	}
	return out
}

// onBranch checks that every acknowledged increment of key is in history
// (the subjects of the branch's commits that changed it).
func (c *counting) onBranch(t *testing.T, history, key string) {
	t.Helper()
	for v, digest := range c.acked {
		if want := fmt.Sprintf("update %s v%d: %s", key, v, digest); !strings.Contains(history, want) {
			t.Errorf("acknowledged %q is not on the branch", want)
		}
	}
}
