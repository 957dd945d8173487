package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errSilent is returned after a verb has already said what went wrong.
var errSilent = errors.New("")

const usage = `blackboard-mcp: a shared blackboard for teams of LLM agents, in files and git.

Usage:
  blackboard-mcp serve [--dir DIR] [--http ADDR]  serve the board to agents over MCP (stdio by default)
  blackboard-mcp init [DIR]                       make DIR a workspace (idempotent)
  blackboard-mcp put ADDRESS --digest D [flags]   write a note (body from --body or stdin)
  blackboard-mcp get ADDRESS [--full]             read a note
  blackboard-mcp log ADDRESS                      who changed a note, when, at which version
  blackboard-mcp ls [TOPIC]                       list notes, newest change first
  blackboard-mcp search QUERY                     full-text search; identifiers find their note first
  blackboard-mcp link SRC REL DST...              record typed links (supersedes, cites, ...)
  blackboard-mcp reindex                          rebuild the derived index from git
  blackboard-mcp health [--json]                  check the workspace; exit 1 with each problem and its fix
  blackboard-mcp token add|list|revoke            agents' tokens and topics (access control)

Addresses are bb://<workspace>/<topic>/<key...> or the short form <topic>/<key...>.
The workspace is --dir DIR, else $BLACKBOARD_DIR, else the current directory.
Run 'blackboard-mcp VERB -h' for a verb's flags.
`

type verb func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

func verbs() map[string]verb {
	return map[string]verb{
		"init":    runInit,
		"put":     runPut,
		"get":     runGet,
		"log":     runLog,
		"ls":      runLs,
		"search":  runSearch,
		"link":    runLink,
		"reindex": runReindex,
		"health":  runHealth,
		"serve":   runServe,
		"token":   runToken,
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

// exitCode prints err and maps it to the exit status: 0, 1 for a failure, 2
// for a usage mistake.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "blackboard-mcp: "+ue.msg)
		return 2
	}
	if !errors.Is(err, errSilent) {
		fmt.Fprintln(stderr, "blackboard-mcp: "+err.Error())
	}
	return 1
}

// commonFlags are the flags every workspace verb takes.
type commonFlags struct {
	dir    string
	noSync bool
	stderr io.Writer // where a write tells of the people's edits it committed first
}

func newFlagSet(name string, stderr io.Writer, c *commonFlags) *flag.FlagSet {
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
// (`get ADDRESS --full` and `get --full ADDRESS` both work).
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

func (c *commonFlags) workspaceDir() string {
	if c.dir != "" {
		return c.dir
	}
	if d := os.Getenv("BLACKBOARD_DIR"); d != "" {
		return d
	}
	return "."
}

func (c *commonFlags) open() (*fsstore.Workspace, error) {
	return fsstore.Open(c.workspaceDir(), fsstore.Options{NoSync: c.noSync, Agent: agentName(),
		OnEdits: func(r *fsstore.EditReport) {
			for _, line := range r.Lines() {
				fmt.Fprintf(c.stderr, "committed a person's edit first: %s\n", line)
			}
		}})
}

// asAgent is the board as this process's agent sees it: the command line
// has no access control (the files are the person's own).
func asAgent(w *fsstore.Workspace) *fsstore.View { return w.As(fsstore.OpenCaller(w.Agent())) }

// agentName is the author of writes made from this process.
func agentName() string {
	if a := strings.TrimSpace(os.Getenv("BLACKBOARD_AGENT")); a != "" {
		return a
	}
	return "agent"
}
