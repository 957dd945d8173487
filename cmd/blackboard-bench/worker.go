package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// workerVerb is the hidden verb a multi-process write starts: this binary,
// run again, writing its share of the notes.
const workerVerb = "worker"

// workerJob is what a parent sends a worker on its first stdin line; the
// second line ("go") starts the writes, so that all workers start together.
type workerJob struct {
	Notes  []string `json:"notes"`
	Writes int      `json:"writes"`
	First  int      `json:"first,omitempty"` // the number of the first write: each run's contents differ
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

// runWorker is one of runWrite's processes: it reads its job from stdin,
// waits for the start, and prints a JSON line for each acknowledged write.
func runWorker(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("worker", stderr, &c)
	if _, err := cli.Parse(fs, args); err != nil {
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
	if prefix := os.Getenv("BLACKBOARD_BENCH_CPUPROFILE"); prefix != "" {
		// Where a worker's time goes, for the one who tunes the write
		// path: go tool pprof the files of all the workers together.
		f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid()))
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	w, err := c.Open("") // every write names its own author
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
	res, err := writeNotes(w, job.Notes, job.First, job.Writes, job.Agent, &writeHooks{
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

// runWorkers runs procs workers of this binary on dir, each on its own
// slice of notes, starts them together and collects what each acknowledged,
// writes each, numbered from first. The results are returned even on
// failure: acknowledged writes count.
func runWorkers(ctx context.Context, dir string, noSync bool, notes []string, procs, first, writes int) ([]result, error) {
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
	results := make([]result, procs)
	// failed describes worker i's failure with what it printed on stderr;
	// it is called once the worker has exited, so stderr is complete.
	failed := func(i int, why string) error {
		return fmt.Errorf("worker %d: %s: %s", i+1, why, strings.TrimSpace(children[i].stderr.String()))
	}
	// abort stops every worker started so far (they may be waiting for the
	// start signal), reaps them, and blames worker i (-1: none).
	abort := func(i int, why error) ([]result, error) {
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
		args := []string{workerVerb, "--dir", dir}
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
		job, _ := json.Marshal(workerJob{Notes: notes[i*per : (i+1)*per], Writes: writes, First: first, Agent: fmt.Sprintf("bench-p%d", i+1)})
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
