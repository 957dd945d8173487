package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// ErrUnavailable is why a relay cannot use the board's engine (an engine of
// another protocol, a directory without sockets): the caller then serves
// the board itself.
var ErrUnavailable = errors.New("the board's engine cannot be used")

// Relay passes one MCP client's lines to the board's engine and back.
type Relay struct {
	Place Place
	Hello Hello
	// Start starts an engine for the board, detached, and returns once it
	// is started (not once it listens).
	Start func() error
	Log   *slog.Logger
	// Tail, when set, hears the engine's log as it grows while the relay
	// runs: a client shows its server's stderr as the board's log.
	Tail io.Writer
	// Patience bounds how long the relay tries to reach an engine, to start
	// one and to get a new one after the last died.
	Patience time.Duration

	out   io.Writer
	outMu sync.Mutex

	mu sync.Mutex
	// conn is the engine's connection, nil while the relay reaches for one;
	// reader reads the first one, which Connect made.
	conn   net.Conn
	reader *bufio.Reader
	// logSize is the engine's log's size when the relay came: its tail
	// starts there.
	logSize int64
	// pending are the client's requests not answered yet, by id, in the
	// order they came: sent again to a new engine.
	pending map[string]*call
	order   []string
	seq     int
	// What a new engine must hear again to know the session: the
	// client's initialize, its initialized notification, its log level and
	// its subscriptions.
	initialize, initialized, level []byte
	subscribed                     map[string][]byte
	// internal are the ids of the relay's own replays: their answers go
	// to the relay, not the client.
	internal   map[string]chan struct{}
	writeIDs   string // this relay's prefix of write ids
	inputEnded bool
}

// call is one request of the client's.
type call struct {
	line  []byte // as first sent; a write carries its id
	write bool
}

// Connect reaches the board's engine, starting one if none runs. It
// returns ErrUnavailable (wrapped, with why) when no engine can serve the
// board.
func (r *Relay) Connect(ctx context.Context) error {
	if fi, err := os.Stat(r.Place.Log); err == nil {
		r.logSize = fi.Size()
	}
	conn, reader, err := r.connect(ctx)
	if err != nil {
		return err
	}
	r.conn, r.reader = conn, reader
	r.Log.Info("serving over stdio through the board's engine", "socket", r.Place.Socket)
	return nil
}

// Run relays until the client's input ends and every call is answered,
// connecting first unless Connect did. It returns ErrUnavailable
// (wrapped, with why) when no engine can serve the board, before it has
// read anything from in.
func (r *Relay) Run(ctx context.Context, in io.Reader, out io.Writer) error {
	r.out, r.pending, r.subscribed, r.internal = out, map[string]*call{}, map[string][]byte{}, map[string]chan struct{}{}
	r.writeIDs = newWriteIDs()
	if r.conn == nil {
		if err := r.Connect(ctx); err != nil {
			return err
		}
	}
	if r.Tail != nil {
		tailCtx, stopTail := context.WithCancel(ctx)
		defer stopTail()
		go r.tail(tailCtx, r.logSize)
	}
	conn, reader := r.conn, r.reader
	lost := make(chan net.Conn, 1)
	go r.fromEngine(conn, reader, lost)

	input := make(chan []byte)
	go func() {
		defer close(input)
		rd := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := rd.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				input <- line
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		select {
		case line, ok := <-input:
			if !ok {
				input = nil
				r.endInput()
				if r.done() {
					return nil
				}
				continue
			}
			r.take(line)
		case c := <-lost:
			if r.done() {
				return nil
			}
			if err := r.reconnect(ctx, c, lost); err != nil {
				r.answerPending(err)
				return err
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// done reports whether the client's input ended and every call of it was
// answered: the relay's work is over.
func (r *Relay) done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inputEnded && len(r.pending) == 0
}

// endInput tells the engine that the client sent its last message: it
// answers what it has and closes the connection.
func (r *Relay) endInput() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputEnded = true
	if uc, ok := r.conn.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
}

// message is what the relay reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		URI       string          `json:"uri"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// isWrite reports whether m calls a tool that writes: a new engine must
// recognise it when it is sent again.
func isWrite(m message) bool {
	return m.Method == string(mcp.MethodToolsCall) && tools.Writes(m.Params.Name)
}

// newWriteIDs is a prefix of write ids of its own, for one relay or
// transport: random, so that no two share one.
func newWriteIDs() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// take passes one line of the client's to the engine, keeping what a new
// engine would need to hear again.
func (r *Relay) take(line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var m message
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) || json.Unmarshal(line, &m) != nil {
		r.send(line) // a batch, or what does not parse: the engine answers it
		return
	}
	switch m.Method {
	case string(mcp.MethodInitialize):
		r.initialize = line
	case string(mcp.MethodNotificationInitialized):
		r.initialized = line
	case string(mcp.MethodSetLogLevel):
		r.level = line
	case string(mcp.MethodResourcesSubscribe):
		r.subscribed[m.Params.URI] = line
	case string(mcp.MethodResourcesUnsubscribe):
		delete(r.subscribed, m.Params.URI)
	case string(mcp.MethodNotificationCancelled):
		// A cancelled call may get no answer: it is not waited for.
		delete(r.pending, string(m.Params.RequestID))
	}
	write := false
	if isWrite(m) {
		r.seq++
		if marked, err := withMeta(line, map[string]any{tools.MetaWriteID: r.writeIDs + "-" + strconv.Itoa(r.seq)}); err == nil {
			line, write = marked, true
		}
	}
	if m.ID != nil && m.Method != "" {
		id := string(m.ID)
		if _, dup := r.pending[id]; !dup {
			r.order = append(r.order, id)
		}
		r.pending[id] = &call{line: line, write: write}
	}
	r.send(line)
}

// send writes line to the engine, if one is connected: a line that does
// not reach it is sent again to the next, if it is a call.
func (r *Relay) send(line []byte) {
	if r.conn == nil {
		return
	}
	if !bytes.HasSuffix(line, []byte("\n")) {
		line = append(line, '\n')
	}
	_, _ = r.conn.Write(line)
}

// fromEngine passes the engine's lines to the client until the connection
// ends, then reports it on lost.
func (r *Relay) fromEngine(c net.Conn, rd *bufio.Reader, lost chan<- net.Conn) {
	for {
		line, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 && bytes.HasSuffix(line, []byte("\n")) {
			r.answer(line)
		}
		if err != nil {
			lost <- c
			return
		}
	}
}

// answer passes one line of the engine's to the client, unless it answers
// the relay's own replay.
func (r *Relay) answer(line []byte) {
	ids := answeredIDs(line)
	r.mu.Lock()
	for _, id := range ids {
		if done, ok := r.internal[string(id)]; ok {
			delete(r.internal, string(id))
			close(done)
			r.mu.Unlock()
			return
		}
		delete(r.pending, string(id))
	}
	r.mu.Unlock()
	r.outMu.Lock()
	defer r.outMu.Unlock()
	_, _ = r.out.Write(line)
}

// answeredIDs returns the ids of the calls a line of the engine's answers:
// none for a notification. An answer is read only as far as its id: the
// engine writes it before the result, which is most of the line (a
// listing's is kilobytes, and parsing it whole cost the relay more than
// passing it on).
func answeredIDs(line []byte) []json.RawMessage {
	if bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")) {
		var members []message
		if json.Unmarshal(line, &members) != nil {
			return nil
		}
		var ids []json.RawMessage
		for _, m := range members {
			if m.Method == "" && m.ID != nil {
				ids = append(ids, m.ID)
			}
		}
		return ids
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	answers := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		switch key {
		case "method":
			return nil // a notification, or the engine's own request
		case "id":
			if dec.Decode(&id) != nil {
				return nil
			}
			if string(id) == "null" {
				id = nil // an error for a line that had no id
			}
		case "result", "error":
			answers = true
			if id != nil {
				return []json.RawMessage{id}
			}
			fallthrough // the id may come after: read on
		default:
			var skipped json.RawMessage
			if dec.Decode(&skipped) != nil {
				return nil
			}
		}
	}
	if !answers || id == nil {
		return nil
	}
	return []json.RawMessage{id}
}

// reconnect replaces the engine's connection c, which ended: a new engine
// hears the session again, then every call not answered, writes marked as
// sent again. lost hears of the new connection's end.
func (r *Relay) reconnect(ctx context.Context, c net.Conn, lost chan net.Conn) error {
	r.mu.Lock()
	if r.conn != c {
		r.mu.Unlock()
		return nil
	}
	r.conn = nil
	r.mu.Unlock()
	c.Close()
	r.Log.Warn("the board's engine went away; reaching a new one")
	conn, reader, err := r.connect(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conn = conn
	go r.fromEngine(conn, reader, lost)
	if r.initialize != nil {
		done := r.replay(r.initialize)
		r.mu.Unlock()
		select {
		case <-done:
		case <-time.After(r.Patience):
		}
		r.mu.Lock()
		if r.conn != conn {
			return nil // lost again meanwhile: lost has heard of it
		}
	}
	if r.initialized != nil {
		r.send(r.initialized)
	}
	if r.level != nil {
		r.replay(r.level)
	}
	for _, line := range r.subscribed {
		r.replay(line)
	}
	order := r.order[:0]
	for _, id := range r.order {
		c, ok := r.pending[id]
		if !ok {
			continue
		}
		order = append(order, id)
		line := c.line
		if c.write {
			if marked, err := withMeta(line, map[string]any{tools.MetaRetried: true}); err == nil {
				line = marked
			}
		}
		r.send(line)
	}
	r.order = order
	if r.inputEnded {
		if uc, ok := conn.(*net.UnixConn); ok {
			_ = uc.CloseWrite()
		}
	}
	return nil
}

// replay sends line again under an id of the relay's own, whose answer
// closes the returned channel. The caller holds r.mu.
func (r *Relay) replay(line []byte) <-chan struct{} {
	done := make(chan struct{})
	r.seq++
	id := strconv.Quote("blackboard-mcp-relay-" + strconv.Itoa(r.seq))
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		close(done)
		return done
	}
	m["id"] = json.RawMessage(id)
	b, err := json.Marshal(m)
	if err != nil {
		close(done)
		return done
	}
	r.internal[id] = done
	r.send(b)
	return done
}

// answerPending answers every call not answered with err: no engine could
// be reached. A write's answer says that it may have landed.
func (r *Relay) answerPending(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range r.order {
		c, ok := r.pending[id]
		if !ok {
			continue
		}
		msg := "the board's engine stopped and no new one could be reached: " + err.Error()
		if c.write {
			msg += "; this write may have landed: read the note before writing it again"
		}
		var rid any
		_ = json.Unmarshal([]byte(id), &rid)
		b, _ := json.Marshal(mcp.NewJSONRPCError(mcp.NewRequestId(rid), mcp.INTERNAL_ERROR, msg, nil))
		r.outMu.Lock()
		_, _ = r.out.Write(append(b, '\n'))
		r.outMu.Unlock()
	}
	clear(r.pending)
	r.order = nil
}

// connect reaches the board's engine, starting one when none listens, and
// says hello. An engine of another protocol (another build of the program)
// is waited for: once it leaves (it does once its relays are gone), an
// engine of this build starts; while it stays, at most r.Patience, after
// which the relay's caller serves the board itself (ErrUnavailable).
func (r *Relay) connect(ctx context.Context) (net.Conn, *bufio.Reader, error) {
	deadline := time.Now().Add(r.Patience)
	var started time.Time
	pause := 5 * time.Millisecond
	other := false // an engine of another protocol holds the board
	for {
		c, err := net.Dial("unix", r.Place.Socket)
		if err == nil {
			conn, reader, err := r.greet(c)
			switch {
			case errors.Is(err, errOtherProtocol):
				if time.Now().After(deadline) {
					return nil, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
				}
				if !other {
					r.Log.Info(err.Error() + "; waiting for it to leave, to start an engine of this build")
				}
				other = true
			case !errors.Is(err, errEngineLeft):
				return conn, reader, err
			}
		} else if !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		} else {
			other = false // no engine listens: the other has left
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("no engine answered on %s within %s (its log: %s)", r.Place.Socket, r.Patience, r.Place.Log)
		}
		// An engine started a moment ago may still be opening the board;
		// one that found another's lock has left again. None is started
		// while one holds the board's lock (opening the board, or of
		// another protocol, or leaving): it would only wait for the lock.
		if !other && !r.Place.Running() && (started.IsZero() || time.Since(started) > 2*time.Second) {
			if err := r.Start(); err != nil {
				return nil, nil, fmt.Errorf("%w: start an engine: %w", ErrUnavailable, err)
			}
			started = time.Now()
		}
		// An engine starting on a large board listens after a few hundred
		// milliseconds: looked for often, it is found as it does (a dial
		// of a socket no one listens on costs microseconds). One of
		// another protocol is asked again less often.
		if other {
			pause = 200 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// errEngineLeft is a connection that ended before the engine welcomed the
// relay: an engine on its way out.
var errEngineLeft = errors.New("the engine closed the connection")

// errOtherProtocol is an engine that speaks another protocol than the
// relay's.
var errOtherProtocol = errors.New("the board's engine speaks another protocol")

// greet says hello on c and reads the engine's welcome.
func (r *Relay) greet(c net.Conn) (net.Conn, *bufio.Reader, error) {
	hello := r.Hello
	hello.Protocol = Protocol
	_ = c.SetDeadline(time.Now().Add(r.Patience))
	rd := bufio.NewReaderSize(c, 64<<10)
	var w Welcome
	if err := writeLine(c, hello); err != nil {
		c.Close()
		return nil, nil, errEngineLeft
	}
	if err := readLine(rd, &w); err != nil {
		c.Close()
		return nil, nil, errEngineLeft
	}
	_ = c.SetDeadline(time.Time{})
	switch {
	case w.Protocol != Protocol:
		c.Close()
		return nil, nil, fmt.Errorf("%w: %d (build %s), this relay %d (build %s)",
			errOtherProtocol, w.Protocol, w.Version, Protocol, hello.Version)
	case w.Error != "":
		c.Close()
		return nil, nil, errors.New(w.Error)
	}
	if w.Version != hello.Version {
		r.Log.Info("the board's engine is of another build; their protocol matches", "engine", w.Version, "relay", hello.Version)
	}
	r.Log.Debug("reached the board's engine", "engine_pid", w.PID, "socket", r.Place.Socket)
	return c, rd, nil
}

// tail copies the engine's log to r.Tail from offset on, a whole line at
// a time, until ctx ends. The file stays open: an engine starting empties
// it in place, and the tail starts over.
func (r *Relay) tail(ctx context.Context, offset int64) {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if f == nil {
			f, _ = os.Open(r.Place.Log)
		}
		if f != nil {
			if fi, err := f.Stat(); err == nil && fi.Size() < offset {
				offset = 0
			}
			for {
				n, _ := f.ReadAt(buf, offset)
				end := bytes.LastIndexByte(buf[:n], '\n')
				if end < 0 {
					break
				}
				_, _ = r.Tail.Write(buf[:end+1])
				offset += int64(end + 1)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// withMeta returns the request line with members added to its params'
// _meta.
func withMeta(line []byte, members map[string]any) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, err
	}
	params := map[string]json.RawMessage{}
	if raw, ok := m["params"]; ok {
		if err := json.Unmarshal(raw, &params); err != nil {
			return nil, err
		}
	}
	meta := map[string]any{}
	if raw, ok := params["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	for k, v := range members {
		meta[k] = v
	}
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	if m["params"], err = json.Marshal(params); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	return append(b, '\n'), err
}
