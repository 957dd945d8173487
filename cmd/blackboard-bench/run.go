package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const usage = `blackboard-bench: measures blackboard-mcp's write path and makes large workspaces to measure on.

Usage:
  blackboard-bench write [--dir DIR] [--procs N] [--writes M] [--notes K] [--no-sync]
      M updates per process, round-robin over K notes per process, each with
      the right expect_version; N > 1 runs N processes of this binary on the
      workspace at once and checks afterwards that no write was lost.
  blackboard-bench generate DIR --notes N --commits M [--topics T] [--seed S] [--name NAME]
      makes DIR a workspace with N notes and M note commits (plus the init
      commit), built by git fast-import.
`

type verb func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

func verbs() map[string]verb {
	return map[string]verb{
		"write":    runWrite,
		"generate": runGenerate,
		workerVerb: runWorker, // hidden: started by write, not by people
	}
}

// run is the whole program: a verb and its arguments in, an error out. It is
// the one place that decides what goes to stdout.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return usagef("no verb given")
		}
		return nil
	}
	v, ok := verbs()[args[0]]
	if !ok {
		fmt.Fprint(stderr, usage)
		return usagef("unknown verb %q", args[0])
	}
	return v(ctx, args[1:], stdin, stdout, stderr)
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode prints err and maps it to the exit status: 0, 1 for a failure, 2
// for a usage mistake.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "blackboard-bench: "+ue.msg)
		return 2
	}
	fmt.Fprintln(stderr, "blackboard-bench: "+err.Error())
	return 1
}

// workspaceFlags are the flags of the verbs that open a workspace, as
// blackboard-mcp's verbs take them.
type workspaceFlags struct {
	dir    string
	noSync bool
	stderr io.Writer // where a write tells of the people's edits it committed first
}

func newFlagSet(name string, stderr io.Writer, c *workspaceFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if c != nil {
		c.stderr = stderr
		fs.StringVar(&c.dir, "dir", "", "workspace directory (default $BLACKBOARD_DIR, else .)")
		fs.BoolVar(&c.noSync, "no-sync", os.Getenv("BLACKBOARD_NO_SYNC") == "1",
			"skip fsync: faster, but a power failure may lose acknowledged writes ($BLACKBOARD_NO_SYNC=1)")
	}
	return fs
}

// parse parses flags that may come before or after positional arguments
// (`generate DIR --notes 10` and `generate --notes 10 DIR` both work).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// open opens the workspace of --dir, else $BLACKBOARD_DIR, else the current
// directory. Every write names its own author, so the workspace needs none.
func (c *workspaceFlags) open() (*fsstore.Workspace, error) {
	dir := c.dir
	if dir == "" {
		dir = os.Getenv("BLACKBOARD_DIR")
	}
	if dir == "" {
		dir = "."
	}
	return fsstore.Open(dir, fsstore.Options{NoSync: c.noSync,
		OnEdits: func(r *fsstore.EditReport) {
			for _, line := range r.Lines() {
				fmt.Fprintf(c.stderr, "committed a person's edit first: %s\n", line)
			}
		}})
}
