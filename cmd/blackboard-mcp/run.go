package main

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const usage = `blackboard-mcp: a shared blackboard for teams of LLM agents, in files and git.

Usage:
  blackboard-mcp serve [--dir DIR] [--http ADDR]  serve the board to agents over MCP (stdio by default)
  blackboard-mcp engine [--dir DIR]               the board's shared engine, which serve starts
  blackboard-mcp init [DIR]                       make DIR a workspace (idempotent)
  blackboard-mcp clone URL DIR                    make DIR a workspace from a board on a git remote
  blackboard-mcp remote [set URL]                 the board's remote; attach one
  blackboard-mcp put ADDRESS --digest D [flags]   write a note (body from --body or stdin)
  blackboard-mcp get ADDRESS [--full]             read a note
  blackboard-mcp log ADDRESS                      who changed a note, when, at which version
  blackboard-mcp ls [TOPIC]                       list notes, newest change first
  blackboard-mcp search QUERY                     full-text search; identifiers find their note first
  blackboard-mcp link SRC REL DST...              record typed links (supersedes, cites, ...)
  blackboard-mcp reindex                          rebuild the derived index from git
  blackboard-mcp health [--json]                  check the workspace; exit 1 with each problem and its fix
  blackboard-mcp token add|list|revoke            agents' tokens and topics (access control)
  blackboard-mcp import SOURCE                    bring in a memory.jsonl or a folder of Markdown notes
  blackboard-mcp view [--http 127.0.0.1:PORT]     a live page of the board for people, on this machine

Addresses are bb://<workspace>/<topic>/<key...> or the short form <topic>/<key...>.
The workspace is --dir DIR, else $BLACKBOARD_DIR, else the current directory.
Run 'blackboard-mcp VERB -h' for a verb's flags.
`

// run is the whole program: a verb and its arguments in, an error out. It is
// the one place that decides what goes to stdout.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	verbs := map[string]cli.Verb{
		"init":   runInit,
		"clone":  runClone,
		"remote": runRemote,
		"put":    runPut,
		"get":    runGet,
		"log":    runLog,
		"ls":     runLs,
		"search": runSearch,
		"link":   runLink,
		"health": runHealth,
		"token":  runToken,
		"import": runImport,
	}
	// A command that runs for more than a second says what it is doing on
	// a terminal (a catch-up of a pulled history, a health check of a large
	// board); reindex draws its own bar, and serve runs until stopped.
	for name, verb := range verbs {
		verbs[name] = cli.WithProgress(name, verb)
	}
	for _, name := range engineVerbs {
		verbs[name] = viaEngine(name, verbs[name])
	}
	verbs["reindex"] = runReindex
	verbs["serve"] = runServe
	verbs["engine"] = runEngine
	verbs["view"] = runView
	return cli.Program{Usage: usage, Verbs: verbs}.Run(ctx, args, stdin, stdout, stderr)
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
