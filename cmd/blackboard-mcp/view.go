package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/web"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// defaultViewAddr is where `view` serves the page unless told otherwise.
const defaultViewAddr = "127.0.0.1:8420"

func runView(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("view", stderr, &c)
	addr := fs.String("http", defaultViewAddr, "the loopback address and port to serve the page on")
	alone := fs.Bool("no-engine", false, "serve the page from this process, not from the board's shared engine")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp view [--dir DIR] [--http 127.0.0.1:PORT]\n\nServes a live page of the board on this machine and prints its URL; `serve --http` serves it at / too.\nThe board's engine makes the page (one is started when none runs); --no-engine makes it here.")
		fs.PrintDefaults()
	}
	if _, err := cli.Parse(fs, args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return cli.Usagef("view serves on a loopback address only (127.0.0.1:PORT); to share the board, use serve --http with an access file")
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !*alone {
		front, err := pageThroughEngine(ctx, c.Dir(), c.NoSync, log)
		switch {
		case err == nil:
			defer front.stop()
			return servePage(ctx, *addr, web.LoopbackHostOnly(front), stdout)
		case !errors.Is(err, engine.ErrUnavailable):
			return err
		}
		log.Warn("the page is made by this process", "why", err)
	}
	ws, err := fsstore.Open(c.Dir(), fsstore.Options{NoSync: c.NoSync, Agent: agentName(), IndexInBackground: true,
		Logf: func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return err
	}
	defer ws.Close()
	// A person's save shows on the page: the watcher commits it.
	watching := ws.Watch(fsstore.WatchOptions{Logf: func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) }})
	defer watching.Stop()
	return servePage(ctx, *addr, web.New(ws, log, false).Handler(), stdout)
}

// servePage serves handler on addr, says its URL on stdout, and serves
// until ctx ends.
func servePage(ctx context.Context, addr string, handler http.Handler, stdout io.Writer) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot serve on %s: %w (is another program using that port? pick another with --http)", addr, err)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	fmt.Fprintf(stdout, "http://%s/\n", l.Addr())
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
