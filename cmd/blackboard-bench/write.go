package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// runWrite measures the write path on a workspace, in this process or in
// --procs workers at once, and checks afterwards against git that no
// acknowledged write was lost.
func runWrite(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("write", stderr, &c)
	procs := fs.Int("procs", 1, "processes writing at once, each to its own notes")
	writes := fs.Int("writes", 1000, "writes per process")
	notes := fs.Int("notes", 20, "distinct notes per process, written round-robin")
	pages := fs.Int("pages", 0, "with --procs > 1: pages of the board held open (a view of --server) in every other run")
	runs := fs.Int("runs", 2, "with --pages: runs, alternately without and with the pages open")
	server := fs.String("server", "", "with --pages: the blackboard-mcp binary (default: the one beside this one, or on PATH)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef("write takes no arguments (the workspace is --dir)")
	}
	if *procs < 1 || *writes < 1 || *notes < 1 {
		return cli.Usagef("--procs, --writes and --notes must be at least 1")
	}
	if *pages > 0 && (*procs < 2 || *runs < 2) {
		return cli.Usagef("--pages needs --procs of 2 or more and --runs of 2 or more")
	}
	w, err := c.Open("") // every write names its own author
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
	picked, err := pickNotes(w, *procs**notes)
	if err != nil {
		w.Close()
		return err
	}
	durability := "on"
	if c.NoSync {
		durability = "off"
	}
	label := fmt.Sprintf("sync=%s history=%d", durability, before)

	var results []result
	var runErr error
	var floor *result
	if *procs == 1 {
		watching := w.Watch(fsstore.WatchOptions{}) // as blackboard-mcp serve does
		var res result
		res, floor, runErr = writeBesideFloor(w, picked, *writes, !c.NoSync)
		results = append(results, res)
		watching.Stop()
		w.Close()
	} else if *pages > 0 {
		w.Close()
		results, runErr = writeBesidePages(ctx, stdout, w.Dir(), c.NoSync, *server, picked, *procs, *writes, *pages, *runs, label)
	} else {
		w.Close()
		results, runErr = runWorkers(ctx, w.Dir(), c.NoSync, picked, *procs, 0, *writes)
	}
	// What was acknowledged is counted against the branch even after a
	// failure: a failed write must not have lost an earlier one.
	after, err := gitCommitCount(w.Dir())
	if err != nil {
		return errors.Join(runErr, err)
	}
	var all result
	for i, r := range results {
		all.add(r)
		if *procs > 1 && *pages == 0 && len(r.lat) > 0 {
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
	if floor != nil && len(floor.lat) > 0 && len(all.lat) > 0 {
		fmt.Fprintf(stdout, "floor %s %s\n", label, floor.stats())
		fmt.Fprintf(stdout, "write/floor p50=%.2fx p99=%.2fx\n",
			float64(all.quantile(0.50))/float64(floor.quantile(0.50)), float64(all.quantile(0.99))/float64(floor.quantile(0.99)))
	}
	return runErr
}

// floorRound is how many writes the product and the floor probe make in
// turn: close enough in time that both meet the same machine.
const floorRound = 10

// writeBesideFloor makes writes through the real write path and as many
// floor commits (floor.go), in turns of floorRound.
func writeBesideFloor(w *fsstore.Workspace, notes []string, writes int, sync bool) (res result, floor *result, err error) {
	probe, err := newFloorProbe(w.Dir(), sync)
	if err != nil {
		return res, nil, err
	}
	defer func() { err = errors.Join(err, probe.close()) }()
	floor = &result{}
	for done := 0; done < writes; done += floorRound {
		n := min(floorRound, writes-done)
		r, err := writeNotes(w, notes, done, n, "bench", nil)
		res.addRound(r)
		if err != nil {
			return res, floor, err
		}
		f, err := probeNotes(probe, notes, done, n)
		floor.addRound(f)
		if err != nil {
			return res, floor, err
		}
	}
	return res, floor, nil
}

// pickNotes picks n notes to write: existing notes spread evenly over the
// workspace (so writes land in a realistic tree), then new ones under
// bench/ when the workspace has too few.
func pickNotes(w *fsstore.Workspace, n int) ([]string, error) {
	files, _, ok := w.WalkNotes()
	if !ok {
		return nil, fmt.Errorf("cannot list the work tree of %s", w.Dir())
	}
	var found []string
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if key, _ := note.KeyOf(p); note.IsNoteFile(p) && key != note.StateNote {
			found = append(found, key)
		}
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

// result is one process's acknowledged writes.
type result struct {
	lat        []time.Duration
	start, end time.Time // first write began, last write acknowledged
	// busy, when set, is the time spent writing, for writes made in turns
	// with something else.
	busy time.Duration
}

// addRound adds a turn of writes made in turns with something else.
func (r *result) addRound(o result) {
	r.lat = append(r.lat, o.lat...)
	if o.end.After(o.start) {
		r.busy += o.end.Sub(o.start)
	}
}

func (r *result) add(o result) {
	r.lat = append(r.lat, o.lat...)
	r.busy += o.busy
	if r.start.IsZero() || (!o.start.IsZero() && o.start.Before(r.start)) {
		r.start = o.start
	}
	if o.end.After(r.end) {
		r.end = o.end
	}
}

func (r *result) stats() string {
	if len(r.lat) == 0 {
		return "n=0"
	}
	return fmt.Sprintf("n=%d p50=%s p95=%s p99=%s max=%s rate=%.1f/s",
		len(r.lat), millis(r.quantile(0.50)), millis(r.quantile(0.95)), millis(r.quantile(0.99)), millis(r.quantile(1)), r.rate())
}

// rate is acknowledged writes a second; 0 when unknown (the process failed
// before saying when it started).
func (r *result) rate() float64 {
	switch {
	case r.busy > 0:
		return float64(len(r.lat)) / r.busy.Seconds()
	case !r.start.IsZero() && r.end.After(r.start):
		return float64(len(r.lat)) / r.end.Sub(r.start).Seconds()
	}
	return 0
}

// quantile is the nearest rank: the smallest latency at or above p of all
// writes.
func (r *result) quantile(p float64) time.Duration {
	lat := slices.Clone(r.lat)
	slices.Sort(lat)
	return lat[max(0, int(math.Ceil(p*float64(len(lat))))-1)]
}

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64) + "ms"
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
}

// writeNotes reads each note once for its version, then makes writes updates
// round-robin over notes through the real write path, each expecting the
// version the previous one returned. hooks.ready, when set, runs between the
// reads and the first write (a worker waits there for the start signal);
// hooks.onWrite, when set, hears of each acknowledged write.
func writeNotes(w *fsstore.Workspace, notes []string, first, writes int, agent string, hooks *writeHooks) (result, error) {
	board := w.As(fsstore.OpenCaller(agent))
	versions := make([]int, len(notes))
	for i, key := range notes {
		n, err := board.Get(key, false)
		switch {
		case errors.Is(err, fsstore.ErrNotFound):
		case err != nil:
			return result{}, err
		default:
			versions[i] = n.Version
		}
	}
	if hooks != nil && hooks.ready != nil {
		if err := hooks.ready(); err != nil {
			return result{}, err
		}
	}
	res := result{lat: make([]time.Duration, 0, writes), start: time.Now()}
	for k := first; k < first+writes; k++ {
		i := k % len(notes)
		body := fmt.Sprintf(noteBody, k+1, agent)
		req := fsstore.UpdateRequest{
			URI:           notes[i],
			Digest:        fmt.Sprintf(benchDigest, k+1, agent),
			Body:          &body,
			ExpectVersion: &versions[i],
			Kind:          "finding",
		}
		t := time.Now()
		out, err := board.Update(req)
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

type writeHooks struct {
	ready   func() error
	onWrite func(time.Duration) error
}

const benchDigest = "Bench write %d by %s, a few hundred bytes of Markdown."

const noteBody = `## Measurement %d by %s

We measured the p99 latency of the search API over the last six hours. It rose
to 410 ms after the 2.4.7 deploy; the dashboard shows the change started around
14:00 UTC. Logs point at the connection pool, and a second run on eu-west gave
the same numbers within 3%%.

- Cache hit rate fell to 71%%.
- Queue depth in the ingest pipeline holds at 1,200.

Next: raise the cache to 32 GB and watch it for another day.
`

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
