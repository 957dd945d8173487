package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// Verb is one verb of a binary: the arguments after its name in, an error
// out (a usage error, ErrSilent, flag.ErrHelp or a failure; see ExitCode).
type Verb func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// Program is a binary's command line: the verbs it offers and the usage text
// that lists them. A verb the text leaves out is hidden, not refused.
type Program struct {
	Usage string
	Verbs map[string]Verb
}

// Run runs the verb args[0] names with the arguments after it. With no verb,
// -h, --help or help it prints the usage text on stdout (no verb is a usage
// error); with a verb it does not know, on stderr, with a usage error.
func (p Program) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, p.Usage)
		if len(args) == 0 {
			return Usagef("no verb given")
		}
		return nil
	}
	v, ok := p.Verbs[args[0]]
	if !ok {
		fmt.Fprint(stderr, p.Usage)
		return Usagef("unknown verb %q", args[0])
	}
	return v(ctx, args[1:], stdin, stdout, stderr)
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Usagef is a mistake in the command line, said as what is wrong: ExitCode
// prints it and exits 2.
func Usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// ErrSilent is returned by a verb that has already said what went wrong:
// ExitCode prints nothing more and exits 1.
var ErrSilent = errors.New("")

// Exited is a command that ran elsewhere (in the board's engine) and
// printed its own messages there: ExitCode prints nothing and exits code.
func Exited(code int) error { return exitedError(code) }

type exitedError int

func (e exitedError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// ExitCode prints err on stderr after the binary's name and maps it to the
// exit status: 0 for none (or -h), 2 for a usage mistake, 1 for a failure.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var exited exitedError
	if errors.As(err, &exited) {
		return int(exited)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, name+": "+ue.msg)
		return 2
	}
	if !errors.Is(err, ErrSilent) {
		fmt.Fprintln(stderr, name+": "+err.Error())
	}
	return 1
}

// WorkspaceFlags are the flags of a verb that opens a workspace: --dir and
// --no-sync. NewFlagSet defines them.
type WorkspaceFlags struct {
	dir    string    // --dir as given; Dir resolves it
	NoSync bool      // --no-sync: skip fsync (default $BLACKBOARD_NO_SYNC=1)
	stderr io.Writer // where a write tells of the people's edits it committed first
}

// NewFlagSet is a verb's flag set: its errors and -h go to stderr, and
// Parse turns its errors into usage errors. With ws it has the workspace
// flags too; nil is a verb that opens no workspace.
func NewFlagSet(name string, stderr io.Writer, ws *WorkspaceFlags) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if ws != nil {
		ws.stderr = stderr
		fs.StringVar(&ws.dir, "dir", "", "workspace directory (default $BLACKBOARD_DIR, else .)")
		fs.BoolVar(&ws.NoSync, "no-sync", os.Getenv("BLACKBOARD_NO_SYNC") == "1",
			"skip fsync: faster, but a power failure may lose acknowledged writes ($BLACKBOARD_NO_SYNC=1)")
	}
	return fs
}

// Parse parses flags that may come before or after positional arguments
// (`get ADDRESS --full` and `get --full ADDRESS` both work; `--` ends the
// flags) and returns the positional ones. A bad flag is a usage error; -h
// returns flag.ErrHelp after fs has printed its usage.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, Usagef("%v", err)
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

// Dir is the workspace directory: --dir, else $BLACKBOARD_DIR, else the
// current directory.
func (ws *WorkspaceFlags) Dir() string {
	if ws.dir != "" {
		return ws.dir
	}
	if d := os.Getenv("BLACKBOARD_DIR"); d != "" {
		return d
	}
	return "."
}

// Open opens the workspace in Dir, with --no-sync, telling stderr of each
// person's edit a write commits first and of what the workspace repaired on
// its own. agent is the author of the
// workspace's writes; "" where every write names its own.
func (ws *WorkspaceFlags) Open(agent string) (*fsstore.Workspace, error) {
	return ws.open(agent)
}

// OpenToRead opens the workspace as Open does and, when the board has a
// remote, first brings it up to date with the remote, so that a person
// reads what every clone wrote. A remote that cannot be reached is said on
// stderr, and the read is served from this clone as it is.
func (ws *WorkspaceFlags) OpenToRead(ctx context.Context, agent string) (*fsstore.Workspace, error) {
	w, err := ws.open(agent)
	if err != nil {
		return nil, err
	}
	if err := w.FetchRemote(ctx); err != nil {
		fmt.Fprintf(ws.stderr, "reading this clone as it is: %v\n", err)
	}
	return w, nil
}

func (ws *WorkspaceFlags) open(agent string) (*fsstore.Workspace, error) {
	return fsstore.Open(ws.Dir(), fsstore.Options{NoSync: ws.NoSync, Agent: agent, OneShot: true,
		OnEdits: func(r *fsstore.EditReport) {
			for _, line := range r.Lines() {
				fmt.Fprintf(ws.stderr, "committed a person's edit first: %s\n", line)
			}
		},
		Logf: func(format string, args ...any) { fmt.Fprintf(ws.stderr, format+"\n", args...) }})
}
