package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/rpcguard"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// version is reported to MCP clients at initialize.
const version = "0.1.0"

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("serve", stderr, &c)
	httpAddr := fs.String("http", "", "serve streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	var roots stringList
	fs.Var(&roots, "source-root", "a directory source_path may read from (repeatable; default: the workspace's parent)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp serve [--dir DIR] [--http ADDR] [--source-root DIR]...\n\nServes the board to agents over MCP: stdio by default (what MCP clients start),\nor streamable HTTP. A missing or empty DIR is made a workspace first.")
		fs.PrintDefaults()
	}
	if _, err := cli.Parse(fs, args); err != nil {
		return err
	}
	dir := c.Dir()
	if err := initIfEmpty(dir); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ws, err := fsstore.Open(dir, fsstore.Options{NoSync: c.NoSync, Agent: agentName(), SourceRoots: roots,
		OnEdits: func(r *fsstore.EditReport) {
			for _, line := range r.Lines() {
				log.Info("committed a person's edit", "edit", line, "commit", r.Commit[:7])
			}
		},
		Logf: func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return err
	}
	defer ws.Close()
	// People's edits become versions while the server runs; those made
	// while none ran are found in the background as it starts.
	watching := ws.Watch(fsstore.WatchOptions{Logf: func(format string, args ...any) {
		log.Warn(fmt.Sprintf(format, args...))
	}})
	defer watching.Stop()
	srv := tools.NewServer(ws, log, version)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	af, restricted, err := ws.Access()
	if err != nil {
		return fmt.Errorf("the access file %s is unreadable, so the server will not start: %w", ".blackboard/access.yaml", err)
	}

	if *httpAddr != "" {
		return serveHTTP(ctx, ws, srv, log, *httpAddr, restricted)
	}

	if restricted {
		agent, ok := af.Authenticate(os.Getenv("BLACKBOARD_TOKEN"))
		if !ok {
			return errors.New("this board has access control: set BLACKBOARD_TOKEN to the token `blackboard-mcp token add` printed for this agent (the token given is missing, unknown or revoked)")
		}
		caller := fsstore.AgentCaller(agent)
		srv.SetCaller(func(context.Context) *fsstore.Caller { return caller })
		log.Info("access control on", "agent", agent.Name)
	}

	if isTerminal(stdin) {
		abs, _ := filepath.Abs(dir)
		fmt.Fprintf(stderr, `blackboard-mcp serves the workspace %s (%s) over MCP on stdio.
It is waiting for an MCP client on stdin; this is how clients start it. To connect one, e.g. Claude Code:
  claude mcp add blackboard -- blackboard-mcp serve --dir %s
Press Ctrl-C to stop.
`, ws.Name(), abs, abs)
	}
	// A client that dies closes our stdout: the next response must fail
	// with EPIPE, not kill the process in the middle of another call's write.
	signal.Ignore(syscall.SIGPIPE)
	log.Info("serving over stdio", "workspace", ws.Name(), "agent", ws.Agent())
	stdio := server.NewStdioServer(srv.MCP())
	stdio.SetErrorLogger(slog.NewLogLogger(log.Handler(), slog.LevelError))
	// The guard answers what the library would mishandle: null ids,
	// requests before initialize, batches, cursors.
	guard := rpcguard.NewStdio(stdin, stdout)
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

// maxRequestBytes bounds an HTTP request: the largest note, escaped as JSON,
// and its arguments.
const maxRequestBytes = 2*note.MaxContentBytes + 1<<20

// callerKey carries an HTTP request's caller to the tools.
type callerKey struct{}

// serveHTTP serves streamable HTTP at /mcp. With an access file, every
// request needs a bearer token of a known agent (401 otherwise), and the
// file is read again for each request, so a revoked token stops working at
// once.
func serveHTTP(ctx context.Context, ws *fsstore.Workspace, srv *tools.Server, log *slog.Logger, addr string, restricted bool) error {
	if restricted {
		srv.SetCaller(func(ctx context.Context) *fsstore.Caller {
			c, _ := ctx.Value(callerKey{}).(*fsstore.Caller)
			return c
		})
	}
	mcpHandler := server.NewStreamableHTTPServer(srv.MCP(),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if c, ok := r.Context().Value(callerKey{}).(*fsstore.Caller); ok {
				return context.WithValue(ctx, callerKey{}, c)
			}
			return ctx
		}))
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request is refused before it is read whole when it exceeds what a
		// note may hold, with room for the JSON around it.
		r.Body = http.MaxBytesReader(w, r.Body, maxRequestBytes)
		if restricted {
			af, _, err := ws.Access()
			token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			var agent *access.Agent
			ok := false
			if err == nil && af != nil {
				agent, ok = af.Authenticate(token)
			}
			if !ok {
				w.Header().Set("WWW-Authenticate", `Bearer realm="blackboard-mcp"`)
				http.Error(w, "a bearer token of a known agent is required", http.StatusUnauthorized)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), callerKey{}, fsstore.AgentCaller(agent)))
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	hs := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving over streamable HTTP", "workspace", ws.Name(), "addr", addr, "endpoint", "/mcp", "access_control", restricted)
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return hs.Shutdown(context.Background())
	}
}
