package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// HTTP is served by the engine too: the board's page for people (`view`),
// and serve --http's endpoint for agents (Hello.HTTP). The process in
// front listens where browsers and agents reach it and passes each request
// to the engine over a connection of its own (Relay.Transport), on which
// the engine serves HTTP (Host.Page).

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

// maxResends is how many times Transport sends a request again to a new
// engine after the one it went to died without answering: engines killed
// from outside in a row (a stdio relay sends again as long as it reaches
// one), but not forever a request that may itself be what kills them.
const maxResends = 10

// Transport carries HTTP requests to the board's engine, each connection
// one of Dial's. A request the engine did not answer, because it died, is
// sent again to the next one (Dial starts it) when its body can be had
// again (http.Request.GetBody; a request without body can). A JSON-RPC
// call of a tool that writes carries a write id, and is marked as sent
// again when it is, so that a new engine answers a write the dead one
// committed as committed instead of applying it twice, as a stdio relay's
// are (Run).
func (r *Relay) Transport() http.RoundTripper {
	return &resending{
		base: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := r.Dial(ctx)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", errNoEngine, err)
			}
			return c, nil
		}},
		ids: newWriteIDs(),
		log: r.Log,
	}
}

// resending is Transport's round tripper.
type resending struct {
	base *http.Transport
	ids  string // this transport's prefix of write ids
	seq  atomic.Int64
	log  *slog.Logger
}

func (t *resending) RoundTrip(req *http.Request) (*http.Response, error) {
	hasBody := req.Body != nil && req.Body != http.NoBody
	if hasBody && req.GetBody == nil {
		return t.base.RoundTrip(req) // sent once
	}
	var body []byte
	if hasBody {
		rc, err := req.GetBody()
		if err == nil {
			body, err = io.ReadAll(rc)
			rc.Close()
		}
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	write := false
	if req.Method == http.MethodPost {
		var m message
		if json.Unmarshal(body, &m) == nil && isWrite(m) {
			id := t.ids + "-" + strconv.FormatInt(t.seq.Add(1), 10)
			if marked, err := withMeta(body, map[string]any{tools.MetaWriteID: id}); err == nil {
				body, write = marked, true
			}
		}
	}
	for sent := 0; ; sent++ {
		out := req.Clone(req.Context())
		if hasBody {
			// The transport may send it again itself, on a connection the
			// engine closed while idle: as marked, too.
			payload := body
			out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(payload)), int64(len(payload))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil }
		}
		res, err := t.base.RoundTrip(out)
		if err == nil || sent == maxResends || req.Context().Err() != nil || !engineLost(err) {
			return res, err
		}
		t.log.Warn("the board's engine did not answer a request; sending it to a new one", "err", err)
		t.base.CloseIdleConnections()
		if write {
			if marked, merr := withMeta(body, map[string]any{tools.MetaRetried: true}); merr == nil {
				body = marked
			}
		}
	}
}

// errNoEngine is a round trip that reached no engine: Dial waited its
// patience already, starting one.
var errNoEngine = errors.New("no engine could be reached")

// engineLost reports whether a round trip failed because the engine's
// connection ended under it: a new engine may answer.
func engineLost(err error) bool {
	return !errors.Is(err, errNoEngine) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

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
