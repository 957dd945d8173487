package engine

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// The board's page for people (`view`) is served by the engine too: the
// view process listens where people's browsers reach it and passes each
// request to the engine over a connection of its own (Relay.Dial), on
// which the engine serves HTTP (Host.Page).

// Dial reaches the board's engine as Run does, starting one when none
// runs, and returns the connection past the engine's welcome. It returns
// ErrUnavailable (wrapped) when no engine can serve the board.
func (r *Relay) Dial(ctx context.Context) (net.Conn, error) {
	c, rd, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	return &readerConn{Conn: c, r: rd}, nil
}

// readerConn is a connection whose first bytes a reader took already.
type readerConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *readerConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// servePage serves the board's page as HTTP on c, until c closes.
func (h *Host) servePage(c net.Conn, r *bufio.Reader, hello Hello, welcome Welcome) {
	if h.Page == nil {
		welcome.Error = "this engine serves no page"
		_ = writeLine(c, welcome)
		return
	}
	if err := writeLine(c, welcome); err != nil {
		return
	}
	l := &oneConn{conn: &readerConn{Conn: c, r: r}, closed: make(chan struct{})}
	srv := &http.Server{Handler: h.Page(hello), ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				l.Close()
			}
		}}
	_ = srv.Serve(l)
}

// oneConn is a listener of one connection: Serve takes it, then waits
// until it is closed.
type oneConn struct {
	mu     sync.Mutex
	conn   net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.conn
	l.conn = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return pageAddr{} }

// pageAddr is the address of a page's connection: the engine's socket.
type pageAddr struct{}

func (pageAddr) Network() string { return "unix" }
func (pageAddr) String() string  { return "engine" }
