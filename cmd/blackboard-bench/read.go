package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// runRead measures the calls of an agent's catch-up as the agent meets
// them, through a real MCP client over stdio against blackboard-mcp serve,
// beside the same calls made in this process through the same tool code
// (no process, no pipe): each call's p50 both ways, writes' p50 and p99, a
// new server's first answer, and the server's memory, settled and at its
// peak, on the board and on a fresh copy of it.
func runRead(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("read", stderr, &c)
	server := fs.String("server", "", "the blackboard-mcp binary (default: beside this one, else on PATH)")
	rounds := fs.Int("rounds", 50, "times each read is made, after warm-up calls")
	writes := fs.Int("writes", 400, "update_state calls, each way")
	copyBoard := fs.Bool("copy", true, "also measure the first server on a copy of the board (cp -a)")
	beside := fs.String("beside", "", "another blackboard-mcp binary (an earlier build) to measure side by side with --server, each on its own copy of the board, in turns")
	turns := fs.Int("turns", 2, "with --beside, the turns each server takes")
	quiet := fs.Duration("quiet", 0, "with --beside, in the last turn, how much longer each server is left quiet, its client connected, before its memory is read again (an engine gives back the most once quiet for two minutes)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef("read takes no arguments (the workspace is --dir)")
	}
	if *rounds < 1 || *writes < 1 {
		return cli.Usagef("--rounds and --writes must be at least 1")
	}
	binary, err := serverBinary(*server)
	if err != nil {
		return err
	}
	dir := c.Dir()

	// In this process first: it also catches the index up, so the server
	// measured next starts on a settled board.
	inproc, plan, err := measureInProcess(ctx, dir, *rounds, *writes)
	if err != nil {
		return err
	}
	if *beside != "" {
		other, err := serverBinary(*beside)
		if err != nil {
			return err
		}
		return readBeside(ctx, stdout, [2]string{binary, other}, dir, plan, *rounds, *writes, *turns, *quiet)
	}
	viaMCP, err := measureOverStdio(ctx, binary, dir, plan, *rounds, *writes, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "read board=%s notes=%d\n", filepath.Base(dir), plan.notes)
	fmt.Fprintf(stdout, "%-52s %12s %12s %12s\n", "call", "in-process", "mcp p50", "mcp p99")
	for i, call := range plan.calls {
		fmt.Fprintf(stdout, "%-52s %12s %12s %12s\n", call.label, millis(inproc.calls[i].quantile(0.5)),
			millis(viaMCP.calls[i].quantile(0.5)), millis(viaMCP.calls[i].quantile(0.99)))
	}
	fmt.Fprintf(stdout, "%-52s %12s %12s %12s\n", fmt.Sprintf("update_state p50 (%d writes)", *writes),
		millis(inproc.writes.quantile(0.5)), millis(viaMCP.writes.quantile(0.5)), "")
	fmt.Fprintf(stdout, "%-52s %12s %12s %12s\n", "update_state p99", millis(inproc.writes.quantile(0.99)),
		millis(viaMCP.writes.quantile(0.99)), fmt.Sprintf("%.1fx p50", float64(viaMCP.writes.quantile(0.99))/float64(viaMCP.writes.quantile(0.5))))
	fmt.Fprintf(stdout, "%-52s %12s %12s\n", "a new server's first answer (list_keys)", "", millis(viaMCP.first))
	fmt.Fprintf(stdout, "%-52s %12s %12s\n", "server memory settled / peak", "", viaMCP.memory())
	if !*copyBoard {
		return nil
	}
	copied, err := measureOnACopy(ctx, binary, dir, plan)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-52s %12s %12s\n", "first server on a copy: first answer", "", millis(copied.first))
	fmt.Fprintf(stdout, "%-52s %12s %12s\n", "first server on a copy: memory settled / peak", "", copied.memory())
	return nil
}

// serverBinary is the blackboard-mcp to measure: named, else the one beside
// this program, else the one on PATH.
func serverBinary(named string) (string, error) {
	if named != "" {
		return named, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "blackboard-mcp")
		if _, err := os.Stat(beside); err == nil {
			return beside, nil
		}
	}
	path, err := exec.LookPath("blackboard-mcp")
	if err != nil {
		return "", cli.Usagef("no blackboard-mcp beside this program or on PATH; name it with --server")
	}
	return path, nil
}

// readPlan is what both ways measure: the calls, in order, and the notes
// the writes go to.
type readPlan struct {
	notes   int
	calls   []benchCall
	writeTo []string
}

type benchCall struct {
	label string
	tool  string
	args  map[string]any
}

// catchUpCalls are the reads of an agent catching up on topic: listings in
// every mode at the limit a catch-up asks for, 20 digests, and searches from
// a common word to a question in the agent's own words.
func catchUpCalls(topic string, twenty []string) []benchCall {
	list := func(mode string, limit int) benchCall {
		args := map[string]any{"topic": topic, "limit": limit}
		label := fmt.Sprintf("list_keys %s limit %d", topic, limit)
		if mode != "" {
			args["mode"] = mode
			label += " " + mode
		}
		return benchCall{label, "list_keys", args}
	}
	calls := []benchCall{
		list("table", 100), list("digest", 100), list("ref", 100), list("", 20),
		{"get_state 20 digests", "get_state", map[string]any{"uris": twenty}},
	}
	for _, q := range []string{"the", "cache", "deplo*", "cache latency", `"hit rate"`, "1.10.19",
		"cache hit rate fell when traffic ramped up from eu-west",
		"why did the p99 latency of the search API rise after the deploy"} {
		calls = append(calls, benchCall{"search_keys " + q, "search_keys", map[string]any{"q": q}})
	}
	return calls
}

// measured is one way's figures.
type measured struct {
	calls  []result
	writes result
	first  time.Duration
	mem    memory
	// quietMem is the memory once left quiet longer (measureOverStdio's
	// quiet), zero when not read.
	quietMem memory
}

func (m measured) memory() string {
	return fmt.Sprintf("%d / %d MB (settled: %d MB anonymous, %d MB of files)",
		m.mem.rss/1024, m.mem.peak/1024, m.mem.anon/1024, m.mem.file/1024)
}

// memory is a process's resident set in KB: now, at its peak, and now
// split into anonymous memory (its heap) and pages of files (the index
// read through a memory map).
type memory struct{ rss, peak, anon, file int }

// caller makes one tool call and returns its text, or an error for a tool
// error.
type caller func(ctx context.Context, tool string, args map[string]any) (string, error)

// measureInProcess opens the workspace in this process and measures the
// calls through the tool layer's own message handler.
func measureInProcess(ctx context.Context, dir string, rounds, writes int) (measured, readPlan, error) {
	var m measured
	ws, err := fsstore.Open(dir, fsstore.Options{Agent: "bench-in-process"})
	if err != nil {
		return m, readPlan{}, err
	}
	defer ws.Close()
	watching := ws.Watch(fsstore.WatchOptions{}) // as blackboard-mcp serve does
	defer watching.Stop()
	if _, err := ws.Cursor(); err != nil {
		return m, readPlan{}, err
	}
	plan, err := planOn(ws)
	if err != nil {
		return m, readPlan{}, err
	}
	srv := tools.NewServer(ws, slog.New(slog.NewTextHandler(io.Discard, nil)), "bench")
	if prefix := os.Getenv("BLACKBOARD_BENCH_CPUPROFILE"); prefix != "" {
		// Where the calls' time goes in the tool code and the engine,
		// without a process or a pipe: go tool pprof PREFIX.read.
		f, err := os.Create(prefix + ".read")
		if err != nil {
			return m, plan, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return m, plan, err
		}
		defer pprof.StopCPUProfile()
	}
	m.calls, m.writes, err = measureCalls(ctx, srv.CallTool, plan, rounds, writes, "in-process")
	if err != nil {
		return m, plan, err
	}
	return m, plan, writeHeapProfile()
}

// writeHeapProfile writes what the heap holds once the calls are made, to
// $BLACKBOARD_BENCH_MEMPROFILE if set (go tool pprof it): the memory a
// server keeps for the same calls on the same board.
func writeHeapProfile() error {
	path := os.Getenv("BLACKBOARD_BENCH_MEMPROFILE")
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	return errors.Join(pprof.WriteHeapProfile(f), f.Close())
}

// planOn picks what to measure on the board: its largest topic, twenty of
// its notes to read, twenty more to write.
func planOn(ws *fsstore.Workspace) (readPlan, error) {
	v := ws.As(fsstore.OpenCaller("bench"))
	all, err := v.List(fsstore.ListOptions{Limit: fsstore.MaxListLimit})
	if err != nil {
		return readPlan{}, err
	}
	if len(all.Notes) < 40 {
		return readPlan{}, errors.New("the board needs at least 40 notes to measure on")
	}
	counts := map[string]int{}
	topic := ""
	for _, n := range all.Notes {
		t, _, _ := strings.Cut(strings.TrimPrefix(n.URI, "bb://"+ws.Name()+"/"), "/")
		if counts[t]++; counts[t] > counts[topic] {
			topic = t
		}
	}
	var twenty, writeTo []string
	for _, n := range all.Notes {
		switch {
		case len(twenty) < 20:
			twenty = append(twenty, n.URI)
		case len(writeTo) < 20:
			writeTo = append(writeTo, n.URI)
		}
	}
	return readPlan{notes: len(all.Notes) + all.Omitted, calls: catchUpCalls(topic, twenty), writeTo: writeTo}, nil
}

// measureCalls makes each call of plan rounds times after three warm-up
// calls, then writes updates round-robin over plan.writeTo, each expecting
// the version the one before returned.
func measureCalls(ctx context.Context, call caller, plan readPlan, rounds, writes int, who string) ([]result, result, error) {
	out := make([]result, len(plan.calls))
	for i, c := range plan.calls {
		for r := range rounds + 3 {
			start := time.Now()
			if _, err := call(ctx, c.tool, c.args); err != nil {
				return nil, result{}, fmt.Errorf("%s: %s: %w", who, c.label, err)
			}
			if r >= 3 {
				out[i].lat = append(out[i].lat, time.Since(start))
			}
		}
	}
	versions := map[string]int{}
	text, err := call(ctx, "get_state", map[string]any{"uris": plan.writeTo, "mode": "ref"})
	if err != nil {
		return nil, result{}, err
	}
	var refs struct {
		Items []struct {
			URI     string `json:"uri"`
			Version int    `json:"version"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(text), &refs); err != nil {
		return nil, result{}, fmt.Errorf("%s: get_state ref: %w", who, err)
	}
	for _, it := range refs.Items {
		versions[it.URI] = it.Version
	}
	var w result
	for i := range writes {
		uri := plan.writeTo[i%len(plan.writeTo)]
		start := time.Now()
		text, err := call(ctx, "update_state", map[string]any{"uri": uri, "expect_version": versions[uri],
			"digest": fmt.Sprintf("Cache hit rate %s at %d%% (%s write %d)", "holds", 60+i%40, who, i),
			"body":   fmt.Sprintf("## Measurement %d\n\nThe p99 held at %d ms after the deploy.\n", i, 100+i%50)})
		if err != nil {
			return nil, result{}, fmt.Errorf("%s: write %d of %s: %w", who, i, uri, err)
		}
		w.lat = append(w.lat, time.Since(start))
		var ack struct {
			Version int `json:"version"`
		}
		if err := json.Unmarshal([]byte(text), &ack); err != nil {
			return nil, result{}, fmt.Errorf("%s: write %d: %w", who, i, err)
		}
		versions[uri] = ack.Version
	}
	return out, w, nil
}

// stdioServer is blackboard-mcp serve started by an MCP client over stdio.
type stdioServer struct {
	dir    string
	client *client.Client
	proc   *exec.Cmd
	stderr strings.Builder
}

// startServer starts binary on dir, with env added to this process's
// environment, and initializes a session.
func startServer(ctx context.Context, binary, dir string, env ...string) (*stdioServer, error) {
	s := &stdioServer{dir: dir}
	tr := transport.NewStdioWithOptions(binary, nil, []string{"serve", "--dir", dir},
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(append(os.Environ(), "BLACKBOARD_AGENT=bench-mcp"), env...)
			cmd.Stderr = &s.stderr
			s.proc = cmd
			return cmd, nil
		}))
	s.client = client.NewClient(tr)
	if err := s.client.Start(context.Background()); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "blackboard-bench", Version: "1"}
	if _, err := s.client.Initialize(ctx, req); err != nil {
		s.client.Close()
		return nil, fmt.Errorf("initialize: %w\n%s", err, s.stderr.String())
	}
	return s, nil
}

func (s *stdioServer) call(ctx context.Context, tool string, args map[string]any) (string, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := s.client.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	return tools.ResultText(res)
}

// processes are the server's processes: the one the client started and,
// when that relays to the board's engine, the engine (what the agent's
// server costs is both).
func (s *stdioServer) processes() []int {
	pids := []int{s.proc.Process.Pid}
	if place, err := engine.Locate(s.dir); err == nil {
		if pid := place.Engine(); pid != 0 && pid != s.proc.Process.Pid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// memory reads the resident set of the server's processes, summed.
func (s *stdioServer) memory() (memory, error) {
	var m memory
	for _, pid := range s.processes() {
		p, err := processMemory(pid)
		if err != nil {
			return m, err
		}
		m = memory{rss: m.rss + p.rss, peak: m.peak + p.peak, anon: m.anon + p.anon, file: m.file + p.file}
	}
	return m, nil
}

// settle waits, at most three minutes, until the server's processes use
// less than a twentieth of a core over a second: the first look of a
// server (or of the engine it started) at the board's files is over. A
// board that people and agents use is settled; a copy's first look
// (every file hashed again, new inodes) is a cost of its own, and reads
// measured during it measure that look.
func (s *stdioServer) settle() {
	last := s.cpuTicks()
	for range 180 {
		time.Sleep(time.Second)
		now := s.cpuTicks()
		if now-last < 5 { // clock ticks of 10 ms
			return
		}
		last = now
	}
}

// cpuTicks is the CPU time the server's processes have used, in clock
// ticks (utime and stime of /proc/PID/stat).
func (s *stdioServer) cpuTicks() int {
	total := 0
	for _, pid := range s.processes() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		_, after, _ := strings.Cut(string(b), ") ") // the command may hold spaces
		fields := strings.Fields(after)
		if len(fields) > 12 {
			utime, _ := strconv.Atoi(fields[11])
			stime, _ := strconv.Atoi(fields[12])
			total += utime + stime
		}
	}
	return total
}

// processMemory reads the resident set of process pid.
func processMemory(pid int) (memory, error) {
	var m memory
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, val, _ := strings.Cut(line, ":")
		kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(val), " kB"))
		switch name {
		case "VmRSS":
			m.rss = kb
		case "VmHWM":
			m.peak = kb
		case "RssAnon":
			m.anon = kb
		case "RssFile":
			m.file = kb
		}
	}
	return m, nil
}

// settledMemory waits until the server is settled (its background work
// done), then for what a quiet engine gives back (it looks every 5 s
// whether it was quiet), and reads the server's resident set.
func (s *stdioServer) settledMemory() (memory, error) {
	s.settle()
	time.Sleep(12 * time.Second)
	return s.memory()
}

func (s *stdioServer) close() error { return s.client.Close() }

// measureOverStdio starts a server and measures its first answer, then the
// plan's calls, then its memory, and when quiet is more than zero, its
// memory again once left quiet that much longer.
func measureOverStdio(ctx context.Context, binary, dir string, plan readPlan, rounds, writes int, quiet time.Duration) (measured, error) {
	var m measured
	s, first, err := startAndAsk(ctx, binary, dir)
	if err != nil {
		return m, err
	}
	defer s.close()
	m.first = first
	s.settle()
	if m.calls, m.writes, err = measureCalls(ctx, s.call, plan, rounds, writes, "mcp"); err != nil {
		return m, err
	}
	if m.mem, err = s.settledMemory(); err != nil || quiet <= 0 {
		return m, err
	}
	time.Sleep(quiet)
	m.quietMem, err = s.memory()
	return m, err
}

// startAndAsk starts a server on dir and returns it with the time from
// its start to its first answer (a listing).
func startAndAsk(ctx context.Context, binary, dir string) (*stdioServer, time.Duration, error) {
	start := time.Now()
	s, err := startServer(ctx, binary, dir)
	if err != nil {
		return nil, 0, err
	}
	if _, err := s.call(ctx, "list_keys", map[string]any{}); err != nil {
		s.close()
		return nil, 0, err
	}
	return s, time.Since(start), nil
}

// measureOnACopy copies the board as a restore or a move does (cp -a: new
// inodes, the same times), and measures the first server on it: its first
// answer, then its memory once its catch-up is done, after a catch-up's
// reads.
func measureOnACopy(ctx context.Context, binary, dir string, plan readPlan) (measured, error) {
	var m measured
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".bench-copy-")
	if err != nil {
		return m, err
	}
	defer removeBoards(tmp)
	copied := filepath.Join(tmp, filepath.Base(dir))
	if err := copyQuietBoard(ctx, dir, copied); err != nil {
		return m, err
	}
	s, first, err := startAndAsk(ctx, binary, copied)
	if err != nil {
		return m, err
	}
	defer s.close()
	m.first = first
	for _, c := range plan.calls {
		if _, err := s.call(ctx, c.tool, c.args); err != nil {
			return m, err
		}
	}
	m.mem, err = s.settledMemory()
	return m, err
}

// readBeside measures two servers through MCP on copies of the board, one
// copy each (cp -a), each indexed by its own server first (`reindex`: an
// earlier build may keep its index in another form), in turns A B, B A,
// and prints every call's p50 and p99 side by side, with B's p50 over A's,
// then each server's first answer and memory in its last turn.
func readBeside(ctx context.Context, stdout io.Writer, servers [2]string, dir string, plan readPlan, rounds, writes, turns int, quiet time.Duration) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".bench-beside-")
	if err != nil {
		return err
	}
	defer removeBoards(tmp)
	var copies [2]string
	for i, server := range servers {
		copies[i] = filepath.Join(tmp, fmt.Sprintf("%s-%c", filepath.Base(dir), 'a'+i))
		if err := copyQuietBoard(ctx, dir, copies[i]); err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, server, "reindex", "--dir", copies[i]).CombinedOutput(); err != nil {
			return fmt.Errorf("%s reindex: %w: %s", server, err, out)
		}
	}
	var sums [2]measured
	for turn := range max(turns, 1) {
		// Whichever server goes first in a turn finds the machine's
		// caches cold for its copy: each goes first in every other turn.
		for _, i := range [][2]int{{0, 1}, {1, 0}}[turn%2] {
			server := servers[i]
			lastQuiet := time.Duration(0)
			if turn == max(turns, 1)-1 {
				lastQuiet = quiet
			}
			m, err := measureOverStdio(ctx, server, copies[i], plan, rounds, writes, lastQuiet)
			if err != nil {
				return fmt.Errorf("%s: %w", server, err)
			}
			if turn == 0 {
				sums[i].calls = make([]result, len(m.calls))
			}
			for c := range m.calls {
				sums[i].calls[c].add(m.calls[c])
			}
			sums[i].writes.add(m.writes)
			sums[i].first, sums[i].mem, sums[i].quietMem = m.first, m.mem, m.quietMem
		}
	}
	fmt.Fprintf(stdout, "read board=%s notes=%d turns=%d\n  A=%s\n  B=%s\n", filepath.Base(dir), plan.notes, turns, servers[0], servers[1])
	fmt.Fprintf(stdout, "%-52s %10s %10s %10s %10s %8s\n", "call", "A p50", "B p50", "A p99", "B p99", "B/A p50")
	row := func(label string, a, b *result) {
		fmt.Fprintf(stdout, "%-52s %10s %10s %10s %10s %8.2f\n", label, millis(a.quantile(0.5)), millis(b.quantile(0.5)),
			millis(a.quantile(0.99)), millis(b.quantile(0.99)), float64(b.quantile(0.5))/float64(a.quantile(0.5)))
	}
	for c, call := range plan.calls {
		row(call.label, &sums[0].calls[c], &sums[1].calls[c])
	}
	row(fmt.Sprintf("update_state (%d writes a turn)", writes), &sums[0].writes, &sums[1].writes)
	fmt.Fprintf(stdout, "%-52s %10s %10s\n", "a new server's first answer (list_keys), last turn", millis(sums[0].first), millis(sums[1].first))
	fmt.Fprintf(stdout, "%-52s A %s\n%-52s B %s\n", "server memory settled / peak, last turn", sums[0].memory(), "", sums[1].memory())
	if quiet > 0 {
		fmt.Fprintf(stdout, "%-52s A %d MB (%d MB anonymous), B %d MB (%d MB anonymous)\n", fmt.Sprintf("server memory after %s more quiet, last turn", quiet),
			sums[0].quietMem.rss/1024, sums[0].quietMem.anon/1024, sums[1].quietMem.rss/1024, sums[1].quietMem.anon/1024)
	}
	return nil
}
