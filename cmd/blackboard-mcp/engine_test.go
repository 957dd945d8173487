package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// The board's engine: every agent's `serve` relays to one process per
// board, which a relay starts when none runs, and which a kill -9 at any
// moment costs nothing: the relays start a new one and send again what was
// not answered, each write once.

// enginePID is the pid of the engine serving the board at dir, 0 for none.
func enginePID(t testing.TB, dir string) int {
	t.Helper()
	place, err := engine.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	return place.Engine()
}

// TestEngineKilledWhileAgentsWrite: the board's engine is killed (kill -9)
// at random moments, ten times, while four agents write (agentsWriteWhile).
func TestEngineKilledWhileAgentsWrite(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	agents := []*session{startMCPGo(t, dir, "log-a"), startMCPGo(t, dir, "log-b"), startMCPGo(t, dir, "count-a"), startMCPGo(t, dir, "count-b")}
	agentsWriteWhile(t, dir, agents, func() { killEngines(t, dir, 10) })
}

// killEngines kills the engine of the board at dir (kill -9) n times,
// each time the one started after the last kill: a slow machine takes
// longer to start one, never fewer kills.
func killEngines(t *testing.T, dir string, n int) {
	t.Helper()
	last := 0
	for kills := range n {
		time.Sleep(time.Duration(150+kills*37%300) * time.Millisecond) // a different moment of a write each time
		pid := newEngine(t, dir, last)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the engine %d: %v", pid, err)
		}
		last = pid
	}
}

// engineSteps are the steps of a write the engine is killed at: the
// write's commit built, the journal written, the objects written, the
// branch moved, a file placed, all files placed, git's index written, the
// board's index caught up (the last step before the acknowledgement).
var engineSteps = []string{"built", "journal", "objects", "branch", "placed", "files", "gitindex", "index"}

// TestEngineKilledAtEveryStep: the engine of a board kills itself once at
// a named step of a write (a binary built with the crashpoints tag, the
// one the tests drive), while four agents write (agentsWriteWhile); on a
// board with a remote, also once the remote took a write and before the
// clone's branch moved ("pushed").
func TestEngineKilledAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("an engine killed at each step of a write, with four agents writing")
	}
	t.Parallel()
	steps := append(slices.Clone(engineSteps), "pushed")
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			var dir string
			if step == "pushed" {
				_, _, dir = boardWithRemote(t)
			} else {
				dir = newWorkspaceDir(t)
			}
			marker := filepath.Join(t.TempDir(), "crashed")
			// The fifth time the step is reached: the agents' own writes,
			// not the two that set the notes up.
			crash := []string{"BLACKBOARD_CRASH_AT=" + step, "BLACKBOARD_CRASH_AFTER=5", "BLACKBOARD_CRASH_ONCE=" + marker}
			var agents []*session
			for _, name := range []string{"log-a", "log-b", "count-a", "count-b"} {
				agents = append(agents, startServer(t, serverOpts{dir: dir, agent: name, env: crash}))
			}
			first := newEngine(t, dir, 0)
			agentsWriteWhile(t, dir, agents, func() {
				for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
					if _, err := os.Stat(marker); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("no write reached %q in a minute", step)
					}
				}
				newEngine(t, dir, first)
				time.Sleep(500 * time.Millisecond) // writes on the new engine
			})
		})
	}
}

// newEngine waits for an engine other than the one of pid last to serve
// the board at dir, and returns its pid.
func newEngine(t *testing.T, dir string, last int) int {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if pid := enginePID(t, dir); pid != 0 && pid != last {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new engine serves the board 30 s after engine %d", last)
		}
	}
}

// agentsWriteWhile has four agents, each its own relay, write the board at
// dir while meanwhile runs (which kills its engine): two append lines to a
// log, two increment a counter by compare-and-swap. Every call gets
// exactly one answer, with its true outcome; every acknowledged append is
// in the note once and no line twice; the counter's acknowledged values
// are each written once, and the counter ends at the last of them.
func agentsWriteWhile(t *testing.T, dir string, agents []*session, meanwhile func()) {
	t.Helper()
	agents[0].write(map[string]any{"uri": "run/log", "digest": "Log", "body": "# Log\n", "expect_version": 0})
	agents[2].write(map[string]any{"uri": "run/counter", "digest": "Counter", "body": "0", "expect_version": 0})

	stop := make(chan struct{})
	var wg sync.WaitGroup
	acks := appendUntil(stop, &wg, agents[:2], "run/log", "agent%d-%d", func(int) time.Duration { return 0 })
	var mu sync.Mutex
	counted := map[int]int{} // value -> times acknowledged
	for _, s := range agents[2:] {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				e := s.get([]string{"run/counter"}, "full", 0)
				value, err := strconv.Atoi(strings.TrimSpace(e.Items[0].Body))
				if err != nil {
					t.Errorf("the counter holds %q", e.Items[0].Body)
					return
				}
				res := s.call("update_state", map[string]any{"uri": "run/counter", "digest": "Counter",
					"body": strconv.Itoa(value + 1), "expect_version": e.Items[0].Version})
				switch {
				case !res.isError:
					mu.Lock()
					counted[value+1]++
					mu.Unlock()
				case !strings.HasPrefix(res.text, "conflict:"):
					t.Errorf("increment: %s", res.text)
					return
				}
			}
		})
	}
	meanwhile()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	appended := acks.lines()

	t.Logf("%d appends and %d increments acknowledged", len(appended), len(counted))
	_, body := readNote(t, dir, "run/log")
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSuffix(body, "\n"), "\n")[1:] {
		seen[l]++
	}
	for _, l := range appended {
		if seen[l] != 1 {
			t.Errorf("acknowledged append %s is in the note %d times; want once", l, seen[l])
		}
	}
	for l, n := range seen {
		if n > 1 {
			t.Errorf("the line %s is in the note %d times", l, n)
		}
	}
	top := 0
	for v, n := range counted {
		if n != 1 {
			t.Errorf("the counter value %d was acknowledged %d times", v, n)
		}
		top = max(top, v)
	}
	_, final := readNote(t, dir, "run/counter")
	if strings.TrimSpace(final) != strconv.Itoa(top) {
		t.Errorf("the counter ends at %q; the last acknowledged value is %d", final, top)
	}
	// Every value up to the last was acknowledged: a write that landed
	// while its engine died was answered, on the next one, as written.
	for v := 1; v <= top; v++ {
		if counted[v] != 1 {
			t.Errorf("the counter's value %d landed but its writer was not told", v)
		}
	}
}

// TestEngineOutlivesARelayKilled: a relay killed (its client's `serve`,
// kill -9) costs the other agents nothing: the engine goes on, the same
// process, and their calls are answered.
func TestEngineOutlivesARelayKilled(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	a, b, c := startMCPGo(t, dir, "a"), startMCPGo(t, dir, "b"), startMCPGo(t, dir, "c")
	a.write(map[string]any{"uri": "t/x", "digest": "x", "body": "1", "expect_version": 0})
	pid := enginePID(t, dir)
	if pid == 0 {
		t.Fatal("no engine serves the board")
	}
	if err := c.kill(); err != nil {
		t.Fatal(err)
	}
	b.write(map[string]any{"uri": "t/x", "digest": "x", "body": "2", "expect_version": 1})
	a.write(map[string]any{"uri": "t/y", "digest": "y", "body": "1", "expect_version": 0})
	if got := enginePID(t, dir); got != pid {
		t.Errorf("the engine is pid %d after a relay was killed; want %d, the same", got, pid)
	}
}

// TestEngineLeavesWhenIdleAndStartsAgain: once its last agent left, the
// engine exits (after BLACKBOARD_ENGINE_IDLE), and the next agent's first
// call starts a new one.
func TestEngineLeavesWhenIdleAndStartsAgain(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "a")
	s.write(map[string]any{"uri": "t/x", "digest": "x", "body": "1", "expect_version": 0})
	first := enginePID(t, dir)
	s.closeClean()
	engineStopped(t, dir)
	start := time.Now()
	s = startMCPGo(t, dir, "b")
	e := s.get([]string{"t/x"}, "full", 0)
	t.Logf("a new agent's first answer with no engine running: %s", time.Since(start))
	if len(e.Items) != 1 || e.Items[0].Body != "1" {
		t.Errorf("t/x on the new engine: %+v", e.Items)
	}
	if again := enginePID(t, dir); again == 0 || again == first {
		t.Errorf("the engine after a restart is pid %d; want a new one (the first was %d)", again, first)
	}
	start = time.Now()
	s2 := startMCPGo(t, dir, "c")
	s2.get([]string{"t/x"}, "digest", 0)
	t.Logf("a new agent's first answer with the engine running: %s", time.Since(start))
}

// TestEngineOnePerBoard: engines started for one board by two binaries at
// once: one serves it, the other leaves; and relays of both binaries are
// served by that one.
func TestEngineOnePerBoard(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	other := filepath.Join(t.TempDir(), "blackboard-mcp-other")
	raw, err := os.ReadFile(testBinary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	var engines []*exec.Cmd
	for _, bin := range []string{testBinary, other, testBinary, other} {
		cmd := exec.Command(bin, "engine", "--dir", dir, "--no-sync")
		cmd.Env = append(mcpEnv(""), "BLACKBOARD_ENGINE_IDLE=2s")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		engines = append(engines, cmd)
	}
	checkVersionsAtEnd(t, dir)
	s := startMCPGo(t, dir, "a")
	s.write(map[string]any{"uri": "t/x", "digest": "x", "body": "1", "expect_version": 0})
	// The engine serving the board is one of the four; the lock kept the
	// other three from serving it too.
	pid := enginePID(t, dir)
	if !slices.ContainsFunc(engines, func(cmd *exec.Cmd) bool { return cmd.Process.Pid == pid }) {
		t.Errorf("the engine serving the board is pid %d, none of the four started", pid)
	}
	// A relay of the other binary uses the same engine.
	cmd := exec.Command(other, "serve", "--dir", dir, "--no-sync")
	cmd.Env = mcpEnv("b")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_state","arguments":{"uris":["t/x"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("a relay of the other binary: %v", err)
	}
	if !strings.Contains(string(out), `bb://acme/t/x`) {
		t.Errorf("a relay of the other binary answered %s", out)
	}
	if got := enginePID(t, dir); got != pid {
		t.Errorf("the other binary's relay left the engine pid %d; want %d", got, pid)
	}
	s.closeClean()
	for _, cmd := range engines {
		_ = cmd.Wait() // each leaves: at once, or once idle
	}
}

// TestEngineRefusesAnotherUser: the engine's socket lives in a directory
// only its user may enter; another user's process cannot connect.
func TestEngineRefusesAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Getuid() != 0 {
		t.Skip("needs root, to run a process as another user")
	}
	perl, err := exec.LookPath("perl")
	if err != nil {
		t.Skip("needs perl, to connect as another user")
	}
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "a")
	s.write(map[string]any{"uri": "t/x", "digest": "x", "body": "1", "expect_version": 0})
	place, err := engine.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Dir(place.Socket))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the sockets' directory: %v, mode %v; want 0700", err, fi.Mode().Perm())
	}
	if fi, err := os.Stat(place.Socket); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the socket: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	cmd := exec.Command(perl, "-MSocket", "-e",
		`socket(S, PF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect(S, pack_sockaddr_un($ARGV[0])) or die "connect: $!\n"; print "connected\n"`,
		place.Socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("another user's connect: %v, %s; want permission denied", err, out)
	}
}

// writeAnswer is a write's JSON answer.
type writeAnswer struct {
	Version int `json:"version"`
}

// TestEngineAnswersAWriteSentAgainAsDone: a write that a relay sends again
// (its engine died after the commit, before the answer) carries the id
// its first sending had, and is answered as done, at its version: it is
// not applied again, and a compare-and-swap is not refused against its own
// version.
func TestEngineAnswersAWriteSentAgainAsDone(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	// The server itself (a relay gives every write its own id).
	r := startRaw(t, serverOpts{dir: dir, agent: "raw", flags: []string{"--no-engine"}})
	r.initialize()
	call := func(id string, retried bool, args map[string]any) string {
		meta := map[string]any{"blackboard-mcp/write": "relay1-7"}
		if retried {
			meta["blackboard-mcp/retry"] = true
		}
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": "update_state", "arguments": args, "_meta": meta}})
		r.send(json.RawMessage(line))
		got := r.await(`"` + id + `"`)
		text, _ := toolText(t, got[`"`+id+`"`])
		return text
	}
	args := map[string]any{"uri": "t/log", "digest": "log", "body": "one\n", "expect_version": 0}
	first := call("w1", false, args)
	again := call("w2", true, args)
	var a, b writeAnswer
	if json.Unmarshal([]byte(first), &a) != nil || json.Unmarshal([]byte(again), &b) != nil || a.Version != 1 || b.Version != 1 {
		t.Errorf("a write, then the same sent again: %s, %s; want version 1 both times", first, again)
	}
	if n := len(gitLog(t, dir, "t/log.md")); n != 1 {
		t.Errorf("%d commits of t/log; want 1", n)
	}
	if !regexp.MustCompile(`(?m)^Blackboard-Write: relay1-7$`).MatchString(fixtures.GitOutput(t, dir, "log", "-1", "--format=%B")) {
		t.Errorf("the commit does not carry the write's id:\n%s", fixtures.GitOutput(t, dir, "log", "-1", "--format=%B"))
	}
}

// TestEngineOfAnotherProtocolIsWaitedFor: an agent whose relay finds the
// board served by an engine of another protocol (another build of the
// program, from before an upgrade) waits for it to leave, then starts an
// engine of its own build and is served by it: two engines never hold the
// board at once.
func TestEngineOfAnotherProtocolIsWaitedFor(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	place, err := engine.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The old engine: this test process holds the board's lock and
	// answers every hello in a protocol the relay does not speak.
	lock, ok, err := place.Hold()
	if err != nil || !ok {
		t.Fatalf("hold the engine lock: %v %v", ok, err)
	}
	l, err := net.Listen("unix", place.Socket)
	if err != nil {
		t.Fatal(err)
	}
	greeted := make(chan struct{}, 100)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = bufio.NewReader(c).ReadBytes('\n')
			b, _ := json.Marshal(engine.Welcome{Protocol: engine.Protocol + 1, Version: "an older build", PID: os.Getpid()})
			_, _ = c.Write(append(b, '\n'))
			c.Close()
			greeted <- struct{}{}
		}
	}()
	go func() {
		<-greeted
		time.Sleep(time.Second) // the old engine's last relays leave
		l.Close()
		lock.Close()
	}()
	s := startMCPGo(t, dir, "a")
	s.write(map[string]any{"uri": "t/x", "digest": "x", "body": "1", "expect_version": 0})
	if pid := enginePID(t, dir); pid == 0 || pid == os.Getpid() {
		t.Errorf("the board's engine is pid %d; want a new one of this build", pid)
	}
	if log := s.stderr.String(); !strings.Contains(log, "waiting for it to leave") || !strings.Contains(log, "through the board's engine") {
		t.Errorf("the relay's log does not say it waited, then used an engine:\n%s", log)
	}
}

// TestEngineRunsTheCommandLine: while the board's engine runs, the
// command line's reads and writes run in it (its log names each), authored
// by the command's agent, printing what they print alone; with no engine
// running, a command runs alone and starts none.
func TestEngineRunsTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent-a")
	s.write(map[string]any{"uri": "t/agent", "digest": "the agent's note", "body": "from the agent", "expect_version": 0})
	place, err := engine.Locate(dir)
	if err != nil {
		t.Fatal(err)
	}
	commands := func() int {
		b, _ := os.ReadFile(place.Log)
		return strings.Count(string(b), "msg=command")
	}
	before := commands()
	put := cliCommand(dir, "put", "t/cli", "--digest", "from the command line", "--expect", "0")
	put.Env = append(put.Env, "BLACKBOARD_AGENT=person-cli")
	put.Stdin = strings.NewReader("the body, read from stdin\n")
	if out, err := put.CombinedOutput(); err != nil || !strings.Contains(string(out), "t/cli v1") {
		t.Fatalf("put through the engine: %v\n%s", err, out)
	}
	inEngine := map[string]string{}
	for _, args := range [][]string{{"get", "t/cli", "--full"}, {"ls", "t"}, {"search", "stdin"}, {"log", "t/cli"}, {"get", "t/agent", "--json"}} {
		inEngine[args[0]+" "+args[1]] = runCLI(t, dir, args...)
	}
	runCLI(t, dir, "link", "t/cli", "cites", "t/agent")
	linked := runCLI(t, dir, "get", "t/cli", "--full")
	if got := commands() - before; got != 8 {
		t.Errorf("the engine's log names %d commands, want the 8 run", got)
	}
	if !strings.Contains(inEngine["get t/cli"], "the body, read from stdin") || !strings.Contains(inEngine["get t/cli"], "author: person-cli") {
		t.Errorf("get through the engine:\n%s", inEngine["get t/cli"])
	}
	if author := fixtures.Git(t, dir, "log", "--reverse", "--format=%an", "--", "t/cli.md"); strings.Fields(author)[0] != "person-cli" {
		t.Errorf("the command's write is authored %q, want its agent's", author)
	}
	help := cliCommand(dir, "put", "-h")
	stdin, err := help.StdinPipe() // never closed: the usage reads none of it
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if out, err := help.CombinedOutput(); err != nil || !strings.Contains(string(out), "Usage: blackboard-mcp put") {
		t.Errorf("put -h with an open stdin, while the engine runs: %v\n%s", err, out)
	}
	if out, err := cliCommand(dir, "get", "t/none").CombinedOutput(); err == nil || !strings.Contains(string(out), "no note at this address") {
		t.Errorf("a read of no note through the engine: %v\n%s", err, out)
	}

	s.closeClean()
	engineStopped(t, dir)
	if alone := runCLI(t, dir, "get", "t/cli", "--full"); alone != linked {
		t.Errorf("get alone prints\n%s\nthrough the engine\n%s", alone, linked)
	}
	if pid := enginePID(t, dir); pid != 0 {
		t.Errorf("a command with no engine running started one (pid %d)", pid)
	}
	checkWorkspace(t, dir)
}

// TestEngineKilledUnderACommandsWrite: an engine killed while it commits a
// command's write leaves the command saying that whether the write was
// committed cannot be told, never that it failed; the next process
// finishes the write from the journal, and git holds it once.
func TestEngineKilledUnderACommandsWrite(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	marker := filepath.Join(t.TempDir(), "crashed")
	s := startServer(t, serverOpts{dir: dir, agent: "agent-a",
		env: []string{"BLACKBOARD_CRASH_AT=branch", "BLACKBOARD_CRASH_AFTER=1", "BLACKBOARD_CRASH_ONCE=" + marker}})
	s.write(map[string]any{"uri": "t/agent", "digest": "the agent's note", "body": "1", "expect_version": 0})
	out, err := cliCommand(dir, "put", "t/cli", "--digest", "d", "--body", "b", "--expect", "0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "whether the write was committed cannot be told") {
		t.Fatalf("put while the engine is killed at the branch's move: %v\n%s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the engine was not killed at the branch's move: %v", err)
	}
	if got := runCLI(t, dir, "get", "t/cli"); !strings.Contains(got, "t/cli v1") {
		t.Errorf("the write past its commit point, read again:\n%s", got)
	}
	if n := fixtures.Git(t, dir, "rev-list", "--count", "HEAD", "--", "t/cli.md"); strings.TrimSpace(n) != "1" {
		t.Errorf("git holds %s commits of the command's write, want 1", n)
	}
	s.closeClean()
	engineStopped(t, dir)
	checkWorkspace(t, dir)
}

// TestEngineServesHTTP: `serve --http` is served by the board's engine too:
// an agent over stdio and one over HTTP meet the same engine, the HTTP
// process opens nothing of the board (with --no-engine it does), and
// while four agents of the stateless revision write over HTTP, the engine
// is killed ten times: the process in front sends what was unanswered to
// the next engine, and every call gets one answer with its true outcome
// (agentsWriteWhile).
func TestEngineServesHTTP(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	stdio := startMCPGo(t, dir, "stdio")
	stdio.write(map[string]any{"uri": "t/x", "digest": "from stdio", "body": "1", "expect_version": 0})
	pid := enginePID(t, dir)
	h := startHTTP(t, serverOpts{dir: dir, agent: "http"})
	if !strings.Contains(h.stderr.String(), "board_served_by=engine") {
		t.Fatalf("serve --http does not say the engine serves the board:\n%s", h.stderr.String())
	}
	var agents []*session
	for range 4 {
		s, _ := h.statelessClient(t, "")
		agents = append(agents, s)
	}
	if e := agents[0].get([]string{"t/x"}, "full", 0); len(e.Items) != 1 || e.Items[0].Body != "1" {
		t.Fatalf("t/x over HTTP: %+v", e.Items)
	}
	if got := enginePID(t, dir); got != pid {
		t.Fatalf("the board's engine is pid %d once HTTP served; want %d, the stdio agent's", got, pid)
	}
	// It has answered a read: a process that served the board itself
	// would hold its files open by now.
	if open := boardFilesOpen(t, h.cmd.Process.Pid, dir); len(open) > 0 {
		t.Errorf("serve --http holds files of the board open, as if it served the board itself: %v", open)
	}
	alone := startHTTP(t, serverOpts{dir: dir, agent: "alone", flags: []string{"--no-engine"}})
	for deadline := time.Now().Add(10 * time.Second); len(boardFilesOpen(t, alone.cmd.Process.Pid, dir)) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Error("serve --http --no-engine holds no file of the board open after 10 s: the check above cannot tell")
			break
		}
	}

	// The process in front holds the engine: it starts the next one at
	// once, whether a request is in flight or not.
	agentsWriteWhile(t, dir, agents, func() { killEngines(t, dir, 10) })
}

// boardFilesOpen are the files under the board at dir that process pid
// holds open (its index, git's objects): none for a process that relays.
func boardFilesOpen(t *testing.T, pid int, dir string) []string {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	board, _ := filepath.EvalSymlinks(dir)
	var open []string
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && (strings.HasPrefix(target, board+string(filepath.Separator)) || strings.HasPrefix(target, dir+string(filepath.Separator))) {
			open = append(open, target)
		}
	}
	return open
}
