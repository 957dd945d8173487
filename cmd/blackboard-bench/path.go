package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
)

// defaultCounts are the functions path counts unless --count names others,
// as regular expressions over a function's name without the module path
// (fsstore/internal/mover.(*Mover).Recover): upkeep that a lone write
// should not have to wait for, journal recovery and the derived index's
// catch-up; and the derived index following the write's own move.
var defaultCounts = []string{
	`^fsstore(/.*)?\.(.*\.)?[rR]ecover$`,
	`^fsstore(/internal/catchup)?\.(.*\.)?(CatchUp|catchUp\w*)$`,
	`^fsstore/internal/catchup\.\(\*Catcher\)\.FollowMove$`,
}

// countFlag is --count: regular expressions, the flag repeated or its value
// a comma-separated list.
type countFlag []*regexp.Regexp

func (c *countFlag) String() string {
	var s []string
	for _, re := range *c {
		s = append(s, re.String())
	}
	return strings.Join(s, ",")
}

func (c *countFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		re, err := regexp.Compile(s)
		if err != nil {
			return err
		}
		*c = append(*c, re)
	}
	return nil
}

// runPath tells which of the project's files one lone update_state passes
// through in the board's engine: it builds blackboard-mcp from a copy of the
// module whose every function tells a tracer (internal/calltrace) that it
// was entered, and from where, makes a fresh board, serves it through a real
// MCP client over stdio, and has the engine record from just before one
// write is sent until just after its answer arrives. Each run is printed on
// its own, as the engine's background work (the watcher, the index) may
// fall into one window and not another.
func runPath(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("path", stderr, nil)
	moduleDir := fs.String("module", "", "blackboard-mcp's source (default: the module the current directory is in)")
	runs := fs.Int("runs", 3, "writes traced, one at a time")
	warmup := fs.Int("warmup", 20, "writes of distinct notes before the first traced one")
	closures := fs.Bool("closures", true, "trace function literals too, not only declared functions: a callback then shows as entered in its own file")
	settle := fs.Duration("settle", time.Second, "wait before each traced write, for the engine's background work to end")
	var counts countFlag
	fs.Var(&counts, "count", "count the functions whose names (without the module path) match this regular expression; repeated or comma-separated (default "+strings.Join(defaultCounts, ",")+")")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef("path takes no arguments (the source is --module)")
	}
	if *runs < 1 || *warmup < 0 {
		return cli.Usagef("--runs must be at least 1 and --warmup at least 0")
	}
	if len(counts) == 0 {
		for _, s := range defaultCounts {
			counts = append(counts, regexp.MustCompile(s))
		}
	}
	root, err := moduleRoot(*moduleDir)
	if err != nil {
		return err
	}
	module, err := modulePath(root)
	if err != nil {
		return err
	}
	// One directory for the copy, the binary, the board and the record:
	// removed at the end, and with the board the engine, should it remain.
	top, err := os.MkdirTemp("", "bbpath-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(top)
	src := filepath.Join(top, "src")
	files, err := copyInstrumented(root, src, module, *closures)
	if err != nil {
		return err
	}
	bin := filepath.Join(top, "blackboard-mcp")
	start := time.Now()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/blackboard-mcp")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off") // the copy is its own module, whatever go.work lies above it
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the instrumented blackboard-mcp: %w\n%s", err, out)
	}
	built := time.Since(start)
	board := filepath.Join(top, "board")
	if out, err := exec.CommandContext(ctx, bin, "init", board).CombinedOutput(); err != nil {
		return fmt.Errorf("init the board: %w\n%s", err, out)
	}
	t, err := tracePath(ctx, bin, board, filepath.Join(top, "trace.json"), *warmup, *runs, *settle)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "path module=%s instrumented=%d files closures=%t build=%s warmup=%d traced=%s\n",
		module, files, *closures, seconds(built), *warmup, t.who)
	t.report(stdout, counts)
	return nil
}

// traced is what path recorded: each run's window, and in which process.
type traced struct {
	who  string // the engine, or serve itself when it served without one
	runs []pathRun
}

// pathRun is one write's window.
type pathRun struct {
	took time.Duration // the write as the client waited for it, traced
	// calls counts function entries by caller file and callee file;
	// a caller of "" is none of the module's (a goroutine's start).
	calls map[[2]string]int
	funcs map[string]int // entries by function
	files map[string]int // entries by file; 0 for a file seen only calling
}

// entered are the files of r in which a function was entered.
func (r pathRun) entered() int {
	n := 0
	for _, c := range r.files {
		if c > 0 {
			n++
		}
	}
	return n
}

// traceRecord is what an instrumented process writes: internal/calltrace's
// Record, of which path reads these.
type traceRecord struct {
	Calls []struct {
		From, To string
		Count    int
	} `json:"calls"`
	Funcs []struct {
		Name, File string
		Count      int
	} `json:"funcs"`
}

// tracePath serves board with the instrumented bin through a real MCP
// client, warms the engine up, then traces runs writes, each alone.
func tracePath(ctx context.Context, bin, board, record string, warmup, runs int, settle time.Duration) (t traced, err error) {
	place, err := engine.Locate(board)
	if err != nil {
		return t, err
	}
	// The relay passes its environment to the engine it starts, so the
	// engine records too.
	s, err := startServer(ctx, bin, board, traceEnv+"="+record)
	if err != nil {
		return t, err
	}
	defer func() {
		err = errors.Join(err, s.close())
		// The engine would stay for its idle time after its last agent
		// left; nothing needs it any longer.
		if pid := place.Engine(); pid != 0 && pid != s.proc.Process.Pid {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			for deadline := time.Now().Add(5 * time.Second); place.Running() && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	write := func(key string, i int) (time.Duration, error) {
		start := time.Now()
		_, err := s.call(ctx, "update_state", map[string]any{"uri": key, "expect_version": 0,
			"digest": fmt.Sprintf("Cache hit rate holds at %d%%", 60+i%40),
			"body":   fmt.Sprintf("## Measurement %d\n\nThe p99 held at %d ms after the deploy.\n", i, 100+i%50)})
		if err != nil {
			return 0, fmt.Errorf("update_state %s: %w", key, err)
		}
		return time.Since(start), nil
	}
	for i := range warmup {
		if _, err := write(fmt.Sprintf("bench/warm-%02d", i), i); err != nil {
			return t, err
		}
	}
	for _, c := range []benchCall{
		{"", "list_keys", map[string]any{"topic": "bench"}},
		{"", "get_state", map[string]any{"uris": []string{"bench/warm-00"}}},
	} {
		if _, err := s.call(ctx, c.tool, c.args); err != nil && warmup > 0 {
			return t, fmt.Errorf("%s: %w", c.tool, err)
		}
	}
	t.who = "engine"
	pid := place.Engine()
	if pid == 0 {
		pid, t.who = s.proc.Process.Pid, "serve" // it serves the board itself
	}
	t.who = fmt.Sprintf("%s(pid %d)", t.who, pid)
	// A process that does not trace dies of SIGUSR1: only one that says it
	// traces is sent it.
	if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil || !bytes.Contains(env, []byte(traceEnv+"="+record+"\x00")) {
		return t, fmt.Errorf("the board's %s does not trace (not started by this run's serve?)", t.who)
	}
	for i := range runs {
		time.Sleep(settle)
		for _, f := range []string{record, record + ".on"} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return t, err
			}
		}
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			return t, err
		}
		if err := waitForFile(record+".on", 10*time.Second); err != nil {
			return t, fmt.Errorf("the %s did not start recording: %w", t.who, err)
		}
		took, err := write(fmt.Sprintf("bench/path-%d", i+1), i)
		if err != nil {
			return t, err
		}
		if err := syscall.Kill(pid, syscall.SIGUSR2); err != nil {
			return t, err
		}
		if err := waitForFile(record, 10*time.Second); err != nil {
			return t, fmt.Errorf("the %s wrote no record: %w", t.who, err)
		}
		r, err := readRecord(record)
		if err != nil {
			return t, err
		}
		r.took = took
		t.runs = append(t.runs, r)
	}
	return t, nil
}

// traceEnv names the file an instrumented process records to
// (calltrace.Env).
const traceEnv = "BLACKBOARD_CALLTRACE"

// waitForFile waits until path exists, at most patience.
func waitForFile(path string, patience time.Duration) error {
	for deadline := time.Now().Add(patience); ; time.Sleep(2 * time.Millisecond) {
		_, err := os.Stat(path)
		if err == nil || !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			return err
		}
	}
}

// readRecord reads one window's record.
func readRecord(path string) (pathRun, error) {
	r := pathRun{calls: map[[2]string]int{}, funcs: map[string]int{}, files: map[string]int{}}
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	var rec traceRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range rec.Calls {
		r.calls[[2]string{c.From, c.To}] += c.Count
		r.files[c.To] += c.Count
		if c.From != "" {
			r.files[c.From] += 0
		}
	}
	for _, f := range rec.Funcs {
		r.funcs[f.Name] += f.Count
	}
	return r, nil
}

// switches are r's pairs of distinct files of the module, caller to callee.
func (r pathRun) switches() int {
	n := 0
	for k := range r.calls {
		if k[0] != "" && k[0] != k[1] {
			n++
		}
	}
	return n
}

// entries are r's function entries, and those no file of the module called.
func (r pathRun) entries() (all, outside int) {
	for k, n := range r.calls {
		all += n
		if k[0] == "" {
			outside += n
		}
	}
	return all, outside
}

// report prints each run's figures, their union, and the tables behind
// them, a column per run.
func (t traced) report(w io.Writer, counts []*regexp.Regexp) {
	files, calls, entered := map[string]bool{}, map[[2]string]bool{}, map[string]bool{}
	for i, r := range t.runs {
		all, outside := r.entries()
		fmt.Fprintf(w, "run=%d files=%d entered=%d switches=%d entries=%d outside=%d write=%s\n",
			i+1, len(r.files), r.entered(), r.switches(), all, outside, millis(r.took))
		for f, n := range r.files {
			files[f] = true
			entered[f] = entered[f] || n > 0
		}
		for k := range r.calls {
			calls[k] = true
		}
	}
	switches := 0
	for k := range calls {
		if k[0] != "" && k[0] != k[1] {
			switches++
		}
	}
	in := 0
	for _, e := range entered {
		if e {
			in++
		}
	}
	fmt.Fprintf(w, "union files=%d entered=%d switches=%d runs=%d\n", len(files), in, switches, len(t.runs))

	type row struct {
		label string
		n     func(pathRun) int // -1: not seen in the run
	}
	var switchRows, outsideRows, fileRows, countRows []row
	for _, k := range slices.SortedFunc(maps.Keys(calls), func(a, b [2]string) int {
		return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1])
	}) {
		n := func(r pathRun) int { return r.calls[k] }
		switch {
		case k[0] == "":
			outsideRows = append(outsideRows, row{"  " + k[1], n})
		case k[0] != k[1]:
			switchRows = append(switchRows, row{"  " + k[0] + " -> " + k[1], n})
		}
	}
	for _, f := range slices.Sorted(maps.Keys(files)) {
		fileRows = append(fileRows, row{"  " + f, func(r pathRun) int {
			if n, ok := r.files[f]; ok {
				return n
			}
			return -1
		}})
	}
	funcs := map[string]bool{}
	for _, r := range t.runs {
		for f := range r.funcs {
			funcs[f] = true
		}
	}
	for _, re := range counts {
		var matched []string
		for f := range funcs {
			if re.MatchString(f) {
				matched = append(matched, f)
			}
		}
		slices.Sort(matched)
		countRows = append(countRows, row{"count " + re.String(), func(r pathRun) int {
			n := 0
			for _, f := range matched {
				n += r.funcs[f]
			}
			return n
		}})
		for _, f := range matched {
			countRows = append(countRows, row{"  " + f, func(r pathRun) int { return r.funcs[f] }})
		}
	}

	// Every table shares the columns: a label, then one count per run.
	width := 0
	for _, rows := range [][]row{switchRows, outsideRows, fileRows, countRows} {
		for _, r := range rows {
			width = max(width, len(r.label))
		}
	}
	head := func(title string) {
		fmt.Fprintf(w, "%-*s", width, title)
		for i := range t.runs {
			fmt.Fprintf(w, " %6s", fmt.Sprintf("run%d", i+1))
		}
		fmt.Fprintln(w)
	}
	table := func(rows []row) {
		for _, r := range rows {
			fmt.Fprintf(w, "%-*s", width, r.label)
			for _, run := range t.runs {
				if n := r.n(run); n >= 0 {
					fmt.Fprintf(w, " %6d", n)
				} else {
					fmt.Fprintf(w, " %6s", "-")
				}
			}
			fmt.Fprintln(w)
		}
	}
	head("switches: caller file -> callee file, calls")
	table(switchRows)
	head("entered from no file of the module (a goroutine's start), calls")
	table(outsideRows)
	head("files: functions entered (0: seen only calling, -: not seen)")
	table(fileRows)
	head("counted functions: entries")
	table(countRows)
}
