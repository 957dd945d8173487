package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// bench is a maintainer's verb: it measures the real write path (durable by
// default, as the SPEC's targets are stated) and makes large workspaces to
// measure on. It prints plain text, one line per measurement, and never
// judges the numbers: targets belong to the people reading them.
const benchUsage = `Usage:
  blackboard-mcp bench write [--dir DIR] [--procs N] [--writes M] [--notes K] [--no-sync]
      M updates per process, round-robin over K notes per process, each with
      the right expect_version; N > 1 runs N processes of this binary on the
      workspace at once and checks afterwards that no write was lost.
  blackboard-mcp bench generate DIR --notes N --commits M [--topics T] [--seed S] [--name NAME]
      makes DIR a workspace with N notes and M note commits (plus the init
      commit), built by git fast-import.
`

func runBench(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, benchUsage)
		if len(args) == 0 {
			return usagef("bench needs write or generate")
		}
		return flag.ErrHelp
	}
	switch args[0] {
	case "write":
		return benchWrite(ctx, args[1:], stdout, stderr)
	case "generate":
		return benchGenerate(args[1:], stdout, stderr)
	case benchWorkerVerb:
		return benchWorker(args[1:], stdin, stdout, stderr)
	}
	fmt.Fprint(stderr, benchUsage)
	return usagef("unknown bench verb %q", args[0])
}

func benchGenerate(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench generate", stderr, nil)
	var opts fixtures.Options
	fs.IntVar(&opts.Notes, "notes", 1000, "distinct notes")
	fs.IntVar(&opts.Commits, "commits", 0, "note commits after the init commit, at least --notes (default: --notes)")
	fs.IntVar(&opts.Topics, "topics", 0, "topics the notes spread over (default 12)")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of names, text, authors and times: equal flags give an identical history")
	fs.StringVar(&opts.Workspace, "name", "", "workspace name (default: the directory's name)")
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("bench generate takes one directory")
	}
	start := time.Now()
	if err := fixtures.Generate(pos[0], opts); err != nil {
		return err
	}
	commits := opts.Commits
	if commits == 0 {
		commits = opts.Notes
	}
	fmt.Fprintf(stdout, "generate notes=%d commits=%d history=%d took=%s dir=%s\n",
		opts.Notes, commits, commits+1, seconds(time.Since(start)), pos[0])
	return nil
}

// benchWorkerVerb is the hidden sub-verb a multi-process bench starts.
const benchWorkerVerb = "worker"

func benchWrite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("bench write", stderr, &c)
	procs := fs.Int("procs", 1, "processes writing at once, each to its own notes")
	writes := fs.Int("writes", 1000, "writes per process")
	notes := fs.Int("notes", 20, "distinct notes per process, written round-robin")
	fs.Usage = func() { fmt.Fprint(stderr, benchUsage); fs.PrintDefaults() }
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("bench write takes no arguments (the workspace is --dir)")
	}
	if *procs < 1 || *writes < 1 || *notes < 1 {
		return usagef("--procs, --writes and --notes must be at least 1")
	}
	w, err := c.open()
	if err != nil {
		return err
	}
	// Catch the derived index up first (a generated workspace has none), so
	// the measurement is of writes, not of building the index.
	start := time.Now()
	cursor, err := w.Cursor()
	if err != nil {
		w.Close()
		return err
	}
	fmt.Fprintf(stdout, "catchup history=%d took=%s\n", cursor, seconds(time.Since(start)))
	before, err := gitCommitCount(w.Dir())
	if err != nil {
		w.Close()
		return err
	}
	picked, err := benchNotes(w, *procs**notes)
	if err != nil {
		w.Close()
		return err
	}
	durability := "on"
	if c.noSync {
		durability = "off"
	}
	label := fmt.Sprintf("sync=%s history=%d", durability, before)

	var results []benchResult
	var runErr error
	if *procs == 1 {
		var res benchResult
		watching := w.Watch(fsstore.WatchOptions{}) // as serve does
		res, runErr = benchRun(w, picked, *writes, "bench", nil)
		results = append(results, res)
		watching.Stop()
		w.Close()
	} else {
		w.Close()
		results, runErr = benchChildren(ctx, w.Dir(), c.noSync, picked, *procs, *writes)
	}
	// What was acknowledged is counted against the branch even after a
	// failure: a failed write must not have lost an earlier one.
	after, err := gitCommitCount(w.Dir())
	if err != nil {
		return errors.Join(runErr, err)
	}
	var all benchResult
	for i, r := range results {
		all.add(r)
		if *procs > 1 && len(r.lat) > 0 {
			fmt.Fprintf(stdout, "write proc=%d/%d %s %s\n", i+1, *procs, label, r.stats())
		}
	}
	// More commits than acknowledgements is no loss: a writer that failed
	// after its commit point, or someone else committing meanwhile. Both
	// still fail the run, as the numbers then measure something else.
	acked, commits := len(all.lat), after-before
	fmt.Fprintf(stdout, "write procs=%d %s %s acked=%d commits=%d lost=%d\n", *procs, label, all.stats(),
		acked, commits, max(0, acked-commits))
	if acked != commits {
		runErr = errors.Join(runErr, fmt.Errorf("%d writes were acknowledged but the branch has %d new commits", acked, commits))
	}
	return runErr
}

// benchNotes picks n notes to write: existing notes spread evenly over the
// workspace (so writes land in a realistic tree), then new ones under
// bench/ when the workspace has too few.
func benchNotes(w *fsstore.Workspace, n int) ([]string, error) {
	root := w.Dir()
	var found []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".md") || strings.HasSuffix(name, ".blob.md") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		key := strings.TrimSuffix(filepath.ToSlash(rel), ".md")
		if key == fsstore.StateNote {
			return nil
		}
		if a, err := fsstore.ParseAddress(key, w.Name()); err == nil && a.Short() == key {
			found = append(found, key)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, n)
	if len(found) >= n {
		for i := range n {
			out = append(out, found[i*len(found)/n])
		}
		return out, nil
	}
	out = append(out, found...)
	have := map[string]bool{}
	for _, k := range found {
		have[k] = true
	}
	for i := 0; len(out) < n; i++ {
		if k := "bench/note-" + strconv.Itoa(i); !have[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// benchResult is one process's acknowledged writes.
type benchResult struct {
	lat        []time.Duration
	start, end time.Time // first write began, last write acknowledged
}

func (r *benchResult) add(o benchResult) {
	r.lat = append(r.lat, o.lat...)
	if r.start.IsZero() || (!o.start.IsZero() && o.start.Before(r.start)) {
		r.start = o.start
	}
	if o.end.After(r.end) {
		r.end = o.end
	}
}

func (r *benchResult) stats() string {
	if len(r.lat) == 0 {
		return "n=0"
	}
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	// Nearest rank: the smallest latency at or above p of all writes.
	q := func(p float64) time.Duration { return lat[max(0, int(math.Ceil(p*float64(len(lat))))-1)] }
	rate := 0.0 // unknown: the process failed before saying when it started
	if !r.start.IsZero() && r.end.After(r.start) {
		rate = float64(len(lat)) / r.end.Sub(r.start).Seconds()
	}
	return fmt.Sprintf("n=%d p50=%s p95=%s p99=%s max=%s rate=%.1f/s",
		len(lat), millis(q(0.50)), millis(q(0.95)), millis(q(0.99)), millis(lat[len(lat)-1]), rate)
}

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
}

// benchRun reads each note once for its version, then makes writes updates
// round-robin over notes through the real write path, each expecting the
// version the previous one returned. hooks.ready, when set, runs between the
// reads and the first write (a worker waits there for the start signal);
// hooks.onWrite, when set, hears of each acknowledged write.
func benchRun(w *fsstore.Workspace, notes []string, writes int, agent string, hooks *benchHooks) (benchResult, error) {
	versions := make([]int, len(notes))
	for i, key := range notes {
		n, err := w.Get(key, false)
		switch {
		case errors.Is(err, fsstore.ErrNotFound):
		case err != nil:
			return benchResult{}, err
		default:
			versions[i] = n.Version
		}
	}
	if hooks != nil && hooks.ready != nil {
		if err := hooks.ready(); err != nil {
			return benchResult{}, err
		}
	}
	res := benchResult{lat: make([]time.Duration, 0, writes), start: time.Now()}
	for k := range writes {
		i := k % len(notes)
		body := fmt.Sprintf(benchBody, k+1, agent)
		req := fsstore.UpdateRequest{
			URI:           notes[i],
			Digest:        fmt.Sprintf("Bench write %d by %s, a few hundred bytes of Markdown.", k+1, agent),
			Body:          &body,
			ExpectVersion: &versions[i],
			Kind:          "finding",
			Agent:         agent,
		}
		t := time.Now()
		out, err := w.Update(req)
		lat := time.Since(t)
		if err != nil {
			return res, err
		}
		if out.Version != versions[i]+1 {
			return res, fmt.Errorf("write %d of %s: got version %d, want %d", k+1, notes[i], out.Version, versions[i]+1)
		}
		versions[i] = out.Version
		res.lat = append(res.lat, lat)
		res.end = time.Now()
		if hooks != nil && hooks.onWrite != nil {
			if err := hooks.onWrite(lat); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

type benchHooks struct {
	ready   func() error
	onWrite func(time.Duration) error
}

const benchBody = `## Measurement %d by %s

We measured the p99 latency of the search API over the last six hours. It rose
to 410 ms after the 2.4.7 deploy; the dashboard shows the change started around
14:00 UTC. Logs point at the connection pool, and a second run on eu-west gave
the same numbers within 3%%.

- Cache hit rate fell to 71%%.
- Queue depth in the ingest pipeline holds at 1,200.

Next: raise the cache to 32 GB and watch it for another day.
`

// workerJob is what a parent sends a worker on its first stdin line; the
// second line ("go") starts the writes, so that all workers start together.
type workerJob struct {
	Notes  []string `json:"notes"`
	Writes int      `json:"writes"`
	Agent  string   `json:"agent"`
}

// workerMsg is one line a worker prints: ready, one per acknowledged write,
// then done (or an error).
type workerMsg struct {
	Ready bool   `json:"ready,omitempty"`
	NS    int64  `json:"ns,omitempty"`
	Done  bool   `json:"done,omitempty"`
	Start int64  `json:"start,omitempty"` // Unix nanoseconds
	End   int64  `json:"end,omitempty"`
	Error string `json:"error,omitempty"`
}

func benchWorker(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("bench worker", stderr, &c)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("read the job: %w", err)
	}
	var job workerJob
	if err := json.Unmarshal(line, &job); err != nil {
		return fmt.Errorf("read the job: %w", err)
	}
	if len(job.Notes) == 0 {
		return errors.New("the job names no notes")
	}
	out := json.NewEncoder(stdout)
	w, err := c.open()
	if err != nil {
		_ = out.Encode(workerMsg{Error: err.Error()}) // best effort: the exit status tells too
		return err
	}
	defer w.Close()
	// Each writer watches the work tree as a server does: its writes then
	// compare only the files reported changed, and it sees the echoes of
	// every other writer's files.
	watching := w.Watch(fsstore.WatchOptions{})
	defer watching.Stop()
	res, err := benchRun(w, job.Notes, job.Writes, job.Agent, &benchHooks{
		ready: func() error {
			if err := out.Encode(workerMsg{Ready: true}); err != nil {
				return err
			}
			if _, err := in.ReadString('\n'); err != nil {
				return fmt.Errorf("wait for the start: %w", err)
			}
			return nil
		},
		onWrite: func(d time.Duration) error { return out.Encode(workerMsg{NS: int64(d)}) },
	})
	if err != nil {
		// Best effort: the exit status tells too.
		_ = out.Encode(workerMsg{Error: err.Error(), Start: unixNano(res.start), End: unixNano(res.end)})
		return err
	}
	return out.Encode(workerMsg{Done: true, Start: res.start.UnixNano(), End: res.end.UnixNano()})
}

// unixNano is t in Unix nanoseconds, 0 for the zero time (no write made).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// benchChildren runs procs workers of this binary on dir, each on its own
// slice of notes, starts them together and collects what each acknowledged.
// The results are returned even on failure: acknowledged writes count.
func benchChildren(ctx context.Context, dir string, noSync bool, notes []string, procs, writes int) ([]benchResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		out    *bufio.Scanner
		stderr bytes.Buffer
	}
	var children []*child
	results := make([]benchResult, procs)
	// failed describes worker i's failure with what it printed on stderr;
	// it is called once the worker has exited, so stderr is complete.
	failed := func(i int, why string) error {
		return fmt.Errorf("bench worker %d: %s: %s", i+1, why, strings.TrimSpace(children[i].stderr.String()))
	}
	// abort stops every worker started so far (they may be waiting for the
	// start signal), reaps them, and blames worker i (-1: none).
	abort := func(i int, why error) ([]benchResult, error) {
		cancel()
		for _, ch := range children {
			ch.stdin.Close()
			ch.cmd.Wait() //nolint:errcheck // killed on purpose; why says why
		}
		if i >= 0 {
			why = failed(i, why.Error())
		}
		return results, why
	}
	per := len(notes) / procs
	for i := range procs {
		args := []string{"bench", benchWorkerVerb, "--dir", dir}
		if noSync {
			args = append(args, "--no-sync")
		}
		ch := &child{cmd: exec.CommandContext(ctx, exe, args...)}
		ch.cmd.Stderr = &ch.stderr
		if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
			return abort(-1, err)
		}
		stdout, err := ch.cmd.StdoutPipe()
		if err != nil {
			return abort(-1, err)
		}
		ch.out = bufio.NewScanner(stdout)
		if err := ch.cmd.Start(); err != nil {
			return abort(-1, err)
		}
		children = append(children, ch)
		job, _ := json.Marshal(workerJob{Notes: notes[i*per : (i+1)*per], Writes: writes, Agent: fmt.Sprintf("bench-p%d", i+1)})
		if _, err := ch.stdin.Write(append(job, '\n')); err != nil {
			return abort(-1, err)
		}
	}
	for i, ch := range children {
		var m workerMsg
		if !ch.out.Scan() || json.Unmarshal(ch.out.Bytes(), &m) != nil || !m.Ready {
			return abort(i, errors.New("did not get ready"))
		}
	}
	for i, ch := range children {
		if _, err := io.WriteString(ch.stdin, "go\n"); err != nil {
			return abort(i, err)
		}
		ch.stdin.Close()
	}
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i, ch := range children {
		wg.Go(func() {
			r := &results[i]
			why := ""
			done := false
			for ch.out.Scan() {
				var m workerMsg
				switch err := json.Unmarshal(ch.out.Bytes(), &m); {
				case err != nil:
					why = "unreadable output " + strconv.Quote(ch.out.Text())
				case m.Error != "":
					why = m.Error
					if m.Start != 0 && m.End != 0 {
						r.start, r.end = time.Unix(0, m.Start), time.Unix(0, m.End)
					}
				case m.Done:
					r.start, r.end, done = time.Unix(0, m.Start), time.Unix(0, m.End), true
				default:
					r.lat = append(r.lat, time.Duration(m.NS))
				}
			}
			err := ch.cmd.Wait()
			switch {
			case why != "":
			case err != nil:
				why = err.Error()
			case !done:
				why = "stopped before it was done"
			default:
				return
			}
			errs[i] = failed(i, why)
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// gitCommitCount counts the commits of the workspace's branch with the C git
// CLI: an independent witness of what the program says it wrote.
func gitCommitCount(dir string) (int, error) {
	cmd := exec.Command("git", "rev-list", "--count", "HEAD")
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("git rev-list: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return strconv.Atoi(strings.TrimSpace(string(out)))
}
