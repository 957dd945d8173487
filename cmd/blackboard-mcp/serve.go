package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"

	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/rpcguard"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// version is reported to MCP clients at initialize.
const version = "0.1.0"

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("serve", stderr, &c)
	var hf httpFlags
	hf.define(fs)
	var roots stringList
	fs.Var(&roots, "source-root", "a directory source_path may read from (repeatable; default: the workspace's parent)")
	alone := fs.Bool("no-engine", false, "serve the board in this process, not through the board's shared engine")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: blackboard-mcp serve [--dir DIR] [--source-root DIR]... [--http ADDR [HTTP flags]]

Serves the board to agents over MCP: stdio by default (what MCP clients start),
or streamable HTTP at /mcp. A missing or empty DIR is made a workspace first.
It relays to the board's one engine, starting it if none runs (over HTTP,
it listens and the engine serves each request); --no-engine serves the
board in this process instead.
Over HTTP on an address other machines reach, a board needs an access file
(or --open-to-network) and tokens need TLS (--tls-cert and --tls-key, or
--behind-tls-proxy).`)
		fs.PrintDefaults()
	}
	if _, err := cli.Parse(fs, args); err != nil {
		return err
	}
	// The HTTP flags are checked before anything is made or opened.
	httpCfg, err := hf.check()
	if err != nil {
		return err
	}
	dir := c.Dir()
	if err := initIfEmpty(dir); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if httpCfg == nil && isTerminal(stdin) {
		abs, _ := filepath.Abs(dir)
		fmt.Fprintf(stderr, `blackboard-mcp serves the workspace %s (%s) over MCP on stdio.
It is waiting for an MCP client on stdin; this is how clients start it. To connect one, e.g. Claude Code:
  claude mcp add blackboard -- blackboard-mcp serve --dir %s
Press Ctrl-C to stop.
`, filepath.Base(abs), abs, abs)
	}
	if httpCfg != nil {
		return serveHTTP(ctx, dir, c.NoSync, *alone, roots, httpCfg, log)
	}
	if !*alone {
		// The board's engine serves this agent; this process relays.
		err := relayToEngine(ctx, dir, c.NoSync, roots, stdin, stdout, stderr, log)
		if !errors.Is(err, engine.ErrUnavailable) {
			return err
		}
		log.Warn("this process serves the board itself", "why", err)
	}
	b, err := openBoard(dir, c.NoSync, roots, log)
	if err != nil {
		return err
	}
	defer b.close()
	ws, srv, transportLog, log := b.ws, b.srv, b.transportLog, b.logger()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops the server gracefully; a second one, should
	// that take too long, kills it (the board survives a kill).
	context.AfterFunc(ctx, stop)
	// Subscribers of notes (MCP resources) hear of every change.
	go srv.WatchBoard(ctx)
	af, restricted, err := ws.Access()
	if err != nil {
		return fmt.Errorf("the access file %s is unreadable, so the server will not start: %w", ".blackboard/access.yaml", err)
	}
	if restricted {
		caller, err := admit(af, restricted, agentName(), os.Getenv("BLACKBOARD_TOKEN"))
		if err != nil {
			return err
		}
		srv.SetCaller(func(context.Context) *fsstore.Caller { return caller })
		log.Info("access control on", "agent", caller.Name)
	}

	// A client that dies closes our stdout: the next response must fail
	// with EPIPE, not kill the process in the middle of another call's write.
	signal.Ignore(syscall.SIGPIPE)
	log.Info("serving over stdio", "workspace", ws.Name(), "agent", ws.Agent())
	stdio := server.NewStdioServer(srv.MCP())
	stdio.SetErrorLogger(slog.NewLogLogger(transportLog.Handler(), slog.LevelError))
	// The guard answers what the library would mishandle: null ids,
	// requests before initialize, batches, cursors.
	guard := rpcguard.NewStdio(stdin, stdout, srv.NoteReadable)
	err = stdio.Listen(ctx, guard.In(), guard.Out())
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// initIfEmpty makes dir a workspace when it does not exist or is empty, as
// a client's first start should just work.
func initIfEmpty(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		return nil
	}
	return fsstore.Init(dir, "")
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// collectSooner has the garbage collector run when the heap has grown by
// half since the last collection, not doubled: every MCP client starts its
// own server, and a server's heap in use is about 30 MB on a board of
// 100,000 notes. Measured there, a server settled at 87 MB and peaked at
// 154 MB this way, at 100 and 177 MB with Go's default, reading as fast.
// GOGC, when set, decides instead. (A soft memory limit was tried too: at
// 80 MB the collector ran at every call and listings took twice as long.)
func collectSooner() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
