package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"golang.org/x/sys/unix"
)

// Host is the engine's side of the socket: it serves every relay that
// connects as a session of one MCP server.
type Host struct {
	Place   Place
	MCP     *server.MCPServer
	Version string
	// Admit decides on a relay's hello: what the calls of its session are
	// made as (Admitted returns it), or an error to show the relay's user
	// (a token that is missing or revoked).
	Admit func(Hello) (any, error)
	// Guard stands between a session's connection and the MCP server
	// (rpcguard): the server reads in and writes out. admitted is the
	// session's (WithAdmitted gives it to a check of the guard's).
	Guard func(admitted any, conn io.Reader, w io.Writer) (in io.Reader, out io.Writer)
	// Busy reports work that still waits (a person's edit to commit):
	// the engine leaves it undone only once it has waited busyGrace past
	// its idle time (a merge a person left unfinished keeps the work tree
	// busy for as long as they like; the next engine commits what waits).
	Busy func() bool
	// Command runs a command line's verb on the board (Hello.Command);
	// nil refuses them.
	Command func(ctx context.Context, h Hello) Outcome
	// Page is the board's page for people, served on a connection that
	// asks for it (Hello.Page) as the process that says hello; nil
	// refuses them.
	Page func(Hello) http.Handler
	// Idle is how long the engine waits once its last relay left.
	Idle time.Duration
	Log  *slog.Logger
}

// busyGrace is how long past its idle time an engine waits for Busy work.
const busyGrace = 10 * time.Second

// helloTimeout bounds a connection's hello: a process that connects and
// says nothing is not a relay.
const helloTimeout = 5 * time.Second

// Run serves relays until the engine has had no relay for h.Idle with
// nothing waiting, until the board's directory is gone, or until ctx ends.
// The caller holds h.Place's lock.
func (h *Host) Run(ctx context.Context) error {
	board, err := os.Stat(filepath.Join(h.Place.Board, ".git"))
	if err != nil {
		return err
	}
	// A socket file left by an engine that died is no one's: this engine
	// holds the board's lock.
	_ = os.Remove(h.Place.Socket)
	l, err := net.Listen("unix", h.Place.Socket)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", h.Place.Socket, err)
	}
	if err := os.Chmod(h.Place.Socket, 0o600); err != nil {
		l.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var mu sync.Mutex
	left := time.Now() // when the last relay left
	var serving sync.WaitGroup
	conns := map[net.Conn]bool{} // the relays connected
	go func() {
		for seq := 1; ; seq++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			serving.Go(func() {
				h.serveRelay(ctx, c, seq)
				c.Close()
				mu.Lock()
				delete(conns, c)
				left = time.Now()
				mu.Unlock()
			})
		}
	}()

	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	why := ""
	for why == "" {
		select {
		case <-ctx.Done():
			why = "stopped"
		case <-tick.C:
			now, err := os.Stat(filepath.Join(h.Place.Board, ".git"))
			mu.Lock()
			quiet := time.Duration(-1)
			if len(conns) == 0 {
				quiet = time.Since(left)
			}
			mu.Unlock()
			switch {
			case err != nil || !os.SameFile(board, now):
				why = "the board's directory is gone"
			case quiet >= h.Idle+busyGrace || quiet >= h.Idle && (h.Busy == nil || !h.Busy()):
				why = "idle"
			}
		}
	}
	// No relay connects from here on; one that connected a moment ago is
	// served to its end, unless the board is gone.
	l.Close()
	if why != "idle" {
		cancel()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
	serving.Wait()
	h.Log.Info("engine stops", "why", why)
	return nil
}

// serveRelay admits one connection and serves it as an MCP session.
func (h *Host) serveRelay(ctx context.Context, c net.Conn, seq int) {
	if uc, ok := c.(*net.UnixConn); ok && !sameUser(uc) {
		h.Log.Warn("refused a connection from another user's process")
		return
	}
	r := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(helloTimeout))
	var hello Hello
	if err := readLine(r, &hello); err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	welcome := Welcome{Protocol: Protocol, Version: h.Version, PID: os.Getpid()}
	if hello.Protocol != Protocol {
		welcome.Error = fmt.Sprintf("the engine speaks protocol %d, the relay %d", Protocol, hello.Protocol)
		_ = writeLine(c, welcome)
		return
	}
	switch {
	case len(hello.Command) > 0:
		h.serveCommand(ctx, c, hello, welcome)
		return
	case hello.Page:
		h.servePage(c, r, hello, welcome)
		return
	}
	admitted, err := h.Admit(hello)
	if err != nil {
		welcome.Error = err.Error()
		_ = writeLine(c, welcome)
		return
	}
	if err := writeLine(c, welcome); err != nil {
		return
	}
	log := h.Log.With("relay", hello.PID, "agent", hello.Agent)
	if hello.Version != h.Version {
		log.Info("a relay of another build connected", "relay_version", hello.Version)
	}
	log.Info("relay connected")
	in, out := h.Guard(admitted, r, c)
	s := newSession(fmt.Sprintf("relay-%d-%d", hello.PID, seq), admitted)
	if err := s.serve(ctx, h.MCP, in, out); err != nil && !errors.Is(err, net.ErrClosed) {
		log.Info("relay left", "err", err)
		return
	}
	log.Info("relay left")
}

// serveCommand runs a command line's verb for the process at the other end
// of c, and answers its outcome. The command line has no access control
// (the board's files are the person's own), and only its user reaches the
// socket: it is not admitted as an agent is.
func (h *Host) serveCommand(ctx context.Context, c net.Conn, hello Hello, welcome Welcome) {
	if h.Command == nil {
		welcome.Error = "this engine runs no commands"
		_ = writeLine(c, welcome)
		return
	}
	if err := writeLine(c, welcome); err != nil {
		return
	}
	log := h.Log.With("pid", hello.PID, "agent", hello.Agent)
	log.Info("command", "verb", hello.Command[0])
	_ = writeLine(c, h.Command(ctx, hello))
}

// sameUser reports whether the process at the other end of c runs as this
// process's user: the socket's mode already keeps others out, and this
// holds where a file system's modes do not.
func sameUser(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return false
	}
	return int(cred.Uid) == syscall.Getuid()
}
