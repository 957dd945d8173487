// Package rpcguard answers the JSON-RPC messages that the MCP library would
// mishandle, before they reach it: a request whose id is null (it would be
// taken for a notification and never answered), a request other than
// initialize or ping before the client asked to initialize the session, a
// tools/list cursor (the tools fit one page, so none is valid; the library
// would answer with a raw decoding error), and a batch (a JSON array of
// messages, which the library cannot parse): under protocol 2025-03-26,
// which allows batches, each message in it is answered and the answers go
// back together as one array; under any other version it is refused.
// Check, IsBatch and ErrorResponse serve both transports; Stdio stands on a
// stdio connection, and serve's HTTP handler uses the rest.
package rpcguard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// BatchVersion is the one protocol version that allows batches.
const BatchVersion = "2025-03-26"

// message is what the guard reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Cursor *string   `json:"cursor"`
		Meta   *mcp.Meta `json:"_meta"`
		URI    string    `json:"uri"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// hasID reports whether the message carries an id member, null or not.
func (m *message) hasID() bool { return m.ID != nil }

// Check decides on one message (not a batch) from a client: the error
// response to send instead of passing it on, or nil to pass it on.
// initializing says the client sent initialize: a client may send its next
// requests before the answer comes.
func Check(raw []byte, initializing bool) []byte {
	var m message
	if json.Unmarshal(raw, &m) != nil || m.Method == "" || !m.hasID() {
		return nil // the library answers what does not parse; notifications and responses pass
	}
	if string(m.ID) == "null" {
		return ErrorResponse(nil, mcp.INVALID_REQUEST, "invalid request: the id must be a string or a number")
	}
	modern := m.Params.Meta != nil && mcp.IsModernProtocol(m.Params.Meta.ProtocolVersion())
	if !initializing && !modern && m.Method != string(mcp.MethodInitialize) && m.Method != string(mcp.MethodPing) {
		return ErrorResponse(m.ID, mcp.INVALID_REQUEST, "the session is not initialized: send initialize first")
	}
	if m.Method == string(mcp.MethodToolsList) && m.Params.Cursor != nil && *m.Params.Cursor != "" {
		return ErrorResponse(m.ID, mcp.INVALID_PARAMS, "invalid cursor: the tools are listed on one page")
	}
	return nil
}

// ResourceCheck says whether a resources/read of uri may go on: the
// resource exists and the caller of ctx may read it.
type ResourceCheck func(ctx context.Context, uri string) bool

// CheckRead answers a resources/read (not a batch) whose resource check
// refuses with "resource not found", and returns nil for anything else: the
// MCP library reports a resource handler's failure as an internal error,
// which a client takes for the server's fault. version is the session's
// protocol version: the code is -32002 up to 2025-11-25 and -32602 (invalid
// params) from 2026-07-28 on, as the library answers for a URI no handler
// matches.
func CheckRead(ctx context.Context, raw []byte, check ResourceCheck, version string) []byte {
	if check == nil || !bytes.Contains(raw, []byte(mcp.MethodResourcesRead)) {
		return nil
	}
	var m message
	if json.Unmarshal(raw, &m) != nil || m.Method != string(mcp.MethodResourcesRead) || !m.hasID() || m.Params.URI == "" {
		return nil
	}
	if check(ctx, m.Params.URI) {
		return nil
	}
	code := mcp.RESOURCE_NOT_FOUND
	if m.Params.Meta != nil && m.Params.Meta.ProtocolVersion() != "" {
		version = m.Params.Meta.ProtocolVersion()
	}
	if mcp.IsModernProtocol(version) {
		code = mcp.INVALID_PARAMS
	}
	return ErrorResponse(m.ID, code, "resource not found: "+m.Params.URI)
}

// ErrorResponse is a JSON-RPC error response; a nil id is sent as null.
func ErrorResponse(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// IsBatch reports whether a message is a JSON array.
func IsBatch(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '['
}

// Stdio stands between a stdio connection and the library's stdio server:
// the server reads In and writes Out.
type Stdio struct {
	in    *io.PipeReader
	out   io.Writer
	outMu sync.Mutex // one message at a time to the client

	mu           sync.Mutex
	initialize   map[string]bool   // ids of initialize requests not answered yet
	initializing bool              // the client sent initialize
	initialized  bool              // and the server answered it
	version      string            // the protocol version initialize agreed on
	batches      map[string]*batch // a batch's open requests, by id
	resources    ResourceCheck     // decides resources/read, when set
}

// batch collects the answers to one batch's requests.
type batch struct {
	open    int
	answers [][]byte
}

// NewStdio starts reading in; what passes the guard is read from In.
// resources, when not nil, decides which resources/read go on (CheckRead).
func NewStdio(in io.Reader, out io.Writer, resources ResourceCheck) *Stdio {
	pr, pw := io.Pipe()
	s := &Stdio{in: pr, out: out, initialize: map[string]bool{}, batches: map[string]*batch{}, resources: resources}
	go func() { pw.CloseWithError(s.pump(in, pw)) }()
	return s
}

// In is what the server reads: the client's messages that passed.
func (s *Stdio) In() io.Reader { return s.in }

// Out is where the server writes: its messages go on to the client, but
// for answers to a batch, which go out together.
func (s *Stdio) Out() io.Writer { return writerFunc(s.write) }

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// pump reads the client's messages, one per line, and passes on those the
// guard does not answer itself.
func (s *Stdio) pump(in io.Reader, pass io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := s.take(line, pass); perr != nil {
				return perr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// take handles one line from the client.
func (s *Stdio) take(line []byte, pass io.Writer) error {
	if !IsBatch(line) {
		if reply := s.check(line); reply != nil {
			return s.send(reply)
		}
		_, err := pass.Write(line)
		return err
	}
	var members []json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return s.send(ErrorResponse(nil, mcp.PARSE_ERROR, "parse error: not valid JSON"))
	}
	s.mu.Lock()
	allowed := s.initialized && s.version == BatchVersion
	s.mu.Unlock()
	switch {
	case !allowed:
		return s.send(ErrorResponse(nil, mcp.INVALID_REQUEST, "invalid request: batches are not part of the protocol version in use"))
	case len(members) == 0:
		return s.send(ErrorResponse(nil, mcp.INVALID_REQUEST, "invalid request: an empty batch"))
	}
	// Requests whose ids repeat or are already open cannot be told apart
	// when answered: the batch is refused whole.
	b := &batch{}
	ids := map[string]bool{}
	for _, raw := range members {
		var m message
		if json.Unmarshal(raw, &m) != nil || m.Method == "" || !m.hasID() || string(m.ID) == "null" {
			continue
		}
		s.mu.Lock()
		_, open := s.batches[string(m.ID)]
		s.mu.Unlock()
		if ids[string(m.ID)] || open || m.Method == string(mcp.MethodInitialize) {
			return s.send(ErrorResponse(nil, mcp.INVALID_REQUEST, "invalid request: a batch with initialize or with repeated ids"))
		}
		ids[string(m.ID)] = true
	}
	var passed [][]byte
	s.mu.Lock()
	for _, raw := range members {
		var m message
		if json.Unmarshal(raw, &m) != nil {
			b.answers = append(b.answers, ErrorResponse(nil, mcp.INVALID_REQUEST, "invalid request: not a JSON-RPC message"))
			continue
		}
		if reply := Check(raw, s.initializing); reply != nil {
			b.answers = append(b.answers, reply)
			continue
		}
		if reply := CheckRead(context.Background(), raw, s.resources, s.version); reply != nil {
			b.answers = append(b.answers, reply)
			continue
		}
		if m.Method != "" && m.hasID() {
			b.open++
			s.batches[string(m.ID)] = b
		}
		passed = append(passed, raw)
	}
	done := b.open == 0
	s.mu.Unlock()
	for _, raw := range passed {
		if _, err := pass.Write(append(append([]byte{}, raw...), '\n')); err != nil {
			return err
		}
	}
	if done && len(b.answers) > 0 {
		return s.sendBatch(b)
	}
	return nil
}

// check is Check with the session's state; it notes an initialize request.
// A resources/read is checked after, outside the lock: it reads the board.
func (s *Stdio) check(line []byte) []byte {
	s.mu.Lock()
	reply := Check(line, s.initializing)
	if reply == nil {
		var m message
		if json.Unmarshal(line, &m) == nil && m.Method == string(mcp.MethodInitialize) && m.hasID() {
			s.initialize[string(m.ID)] = true
			s.initializing = true
		}
	}
	version := s.version
	s.mu.Unlock()
	if reply == nil {
		reply = CheckRead(context.Background(), line, s.resources, version)
	}
	return reply
}

// write takes one message from the server.
func (s *Stdio) write(p []byte) (int, error) {
	var m message
	if json.Unmarshal(p, &m) != nil || m.Method != "" || !m.hasID() {
		return s.forward(p)
	}
	id := string(m.ID)
	s.mu.Lock()
	if s.initialize[id] {
		delete(s.initialize, id)
		var r struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if m.Error == nil && json.Unmarshal(m.Result, &r) == nil {
			s.initialized, s.version = true, r.ProtocolVersion
		}
	}
	b, inBatch := s.batches[id]
	if !inBatch {
		s.mu.Unlock()
		return s.forward(p)
	}
	delete(s.batches, id)
	b.answers = append(b.answers, bytes.TrimSpace(append([]byte{}, p...)))
	b.open--
	done := b.open == 0
	s.mu.Unlock()
	if done {
		if err := s.sendBatch(b); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// forward writes one message of the server's to the client.
func (s *Stdio) forward(p []byte) (int, error) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return s.out.Write(p)
}

// send writes one message of the guard's own to the client.
func (s *Stdio) send(msg []byte) error {
	_, err := s.forward(append(msg, '\n'))
	return err
}

// sendBatch writes a batch's answers as one array.
func (s *Stdio) sendBatch(b *batch) error {
	return s.send(append(append([]byte{'['}, bytes.Join(b.answers, []byte{','})...), ']'))
}
