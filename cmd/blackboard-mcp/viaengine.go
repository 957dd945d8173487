package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// The commands that read and write notes run in the board's engine when
// one runs: its index is caught up already, its writes batch with the
// agents', and the command opens nothing of the board itself. Without an
// engine they run alone, and start none.

// engineVerbs are the verbs the engine runs for a command line.
var engineVerbs = []string{"put", "get", "log", "ls", "search", "link"}

// writingVerbs are those of engineVerbs that write.
var writingVerbs = []string{"put", "link"}

// engineBoard is the board a command runs on inside the engine, and as
// whom.
type engineBoard struct {
	ws     *fsstore.Workspace
	caller *fsstore.Caller
}

type engineBoardKey struct{}

// viaEngine is verb, run by the board's engine when one runs.
func viaEngine(name string, verb cli.Verb) cli.Verb {
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		if _, inEngine := ctx.Value(engineBoardKey{}).(*engineBoard); inEngine {
			return verb(ctx, args, stdin, stdout, stderr)
		}
		place, err := engine.Locate(dirArg(args))
		if err != nil || !place.Running() || slices.ContainsFunc(args, isFlag("h")) || slices.ContainsFunc(args, isFlag("help")) {
			// Asked for its usage, a verb reads nothing (put's stdin
			// included): it prints it here.
			return verb(ctx, args, stdin, stdout, stderr)
		}
		var input []byte
		if name == "put" && !slices.ContainsFunc(args, isFlag("body")) {
			if f, ok := stdin.(*os.File); ok {
				if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
					return verb(ctx, args, stdin, stdout, stderr) // it says how to give the body
				}
			}
			if input, err = io.ReadAll(io.LimitReader(stdin, note.MaxContentBytes+1)); err != nil {
				return err
			}
			stdin = bytes.NewReader(input)
		}
		cwd, _ := os.Getwd()
		out, err := engine.RunCommand(ctx, place, engine.Hello{Version: version, Agent: agentName(), Dir: cwd,
			PID: os.Getpid(), Command: append([]string{name}, args...), Stdin: input})
		switch {
		case errors.Is(err, engine.ErrUnavailable):
			return verb(ctx, args, stdin, stdout, stderr)
		case err != nil && slices.Contains(writingVerbs, name):
			return fmt.Errorf("%w; whether the write was committed cannot be told: read the note before writing it again", err)
		case err != nil:
			return verb(ctx, args, stdin, stdout, stderr) // a read: made alone
		}
		_, _ = stdout.Write(out.Stdout)
		_, _ = stderr.Write(out.Stderr)
		return cli.Exited(out.Code)
	}
}

// runInEngine runs a command line's verb for the process that sent hello,
// on the engine's board, as the agent it names.
func runInEngine(ctx context.Context, ws *fsstore.Workspace, hello engine.Hello) engine.Outcome {
	var stdout, stderr bytes.Buffer
	if !slices.Contains(engineVerbs, hello.Command[0]) {
		fmt.Fprintf(&stderr, "blackboard-mcp: the engine does not run %q\n", hello.Command[0])
		return engine.Outcome{Stderr: stderr.Bytes(), Code: 2}
	}
	agent := hello.Agent
	if agent == "" {
		agent = "agent"
	}
	board := &engineBoard{ws: ws, caller: fsstore.OpenCaller(agent).ReadingFrom(ws.Dir(), hello.Dir, nil)}
	err := run(context.WithValue(ctx, engineBoardKey{}, board), hello.Command, bytes.NewReader(hello.Stdin), &stdout, &stderr)
	code := cli.ExitCode("blackboard-mcp", err, &stderr)
	return engine.Outcome{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Code: code}
}

// openView is the board as a command's agent sees it, and what to call
// once done with it: the engine's board inside the engine, else the
// workspace opened for the command. toRead first brings a board with a
// remote up to date with it, so that a person reads what every clone
// wrote.
func openView(ctx context.Context, c *cli.WorkspaceFlags, stderr io.Writer, toRead bool) (*fsstore.View, func(), error) {
	if b, ok := ctx.Value(engineBoardKey{}).(*engineBoard); ok {
		if toRead {
			if err := b.ws.FetchRemote(ctx); err != nil {
				fmt.Fprintf(stderr, "reading this clone as it is: %v\n", err)
			}
		}
		return b.ws.As(b.caller), func() {}, nil
	}
	open := func() (*fsstore.Workspace, error) { return c.Open(agentName()) }
	if toRead {
		open = func() (*fsstore.Workspace, error) { return c.OpenToRead(ctx, agentName()) }
	}
	w, err := open()
	if err != nil {
		return nil, nil, err
	}
	return asAgent(w), func() { w.Close() }, nil
}

// dirArg is the workspace a command line names, as cli.WorkspaceFlags.Dir
// resolves it: --dir, else $BLACKBOARD_DIR, else the current directory.
func dirArg(args []string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "dir" {
			continue
		}
		if hasValue {
			return value
		}
		if i+1 < len(args) {
			return args[i+1]
		}
	}
	if d := os.Getenv("BLACKBOARD_DIR"); d != "" {
		return d
	}
	return "."
}

// isFlag matches a command-line argument that sets the flag name.
func isFlag(name string) func(string) bool {
	return func(a string) bool {
		if !strings.HasPrefix(a, "-") || a == "--" {
			return false
		}
		n, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return n == name
	}
}
