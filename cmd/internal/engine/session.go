package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// session is one relay's connection as a session of the MCP server: what
// mcp-go's stdio server is for its one client, once per connection (the
// library's stdio session is a single value for the whole process).
type session struct {
	id string
	// admitted is what the engine's admit made of the relay's hello: the
	// caller of every call of this session.
	admitted any

	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
	level         atomic.Value // mcp.LoggingLevel
	version       atomic.Value // string: the protocol version in effect

	mu   sync.Mutex
	info mcp.Implementation
	caps mcp.ClientCapabilities
}

var (
	_ server.ClientSession         = (*session)(nil)
	_ server.SessionWithLogging    = (*session)(nil)
	_ server.SessionWithClientInfo = (*session)(nil)
)

func newSession(id string, admitted any) *session {
	return &session{id: id, admitted: admitted, notifications: make(chan mcp.JSONRPCNotification, 100)}
}

func (s *session) SessionID() string { return s.id }

func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

func (s *session) Initialize() {
	s.level.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

func (s *session) Initialized() bool { return s.initialized.Load() }

func (s *session) SetLogLevel(level mcp.LoggingLevel) { s.level.Store(level) }

func (s *session) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.level.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

func (s *session) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *session) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = info
}

func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *session) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = caps
}

func (s *session) ProtocolVersion() string {
	v, _ := s.version.Load().(string)
	return v
}

func (s *session) SetProtocolVersion(version string) { s.version.Store(version) }

// Admitted is what the engine's admit made of the hello of the session a
// call of ctx came on, nil for a call that came another way.
func Admitted(ctx context.Context) any {
	if a, ok := ctx.Value(admittedKey{}).(admittedValue); ok {
		return a.v
	}
	if s, ok := server.ClientSessionFromContext(ctx).(*session); ok {
		return s.admitted
	}
	return nil
}

// WithAdmitted is ctx as a call of a session admitted as admitted: for
// what looks at a call before the MCP server has it (the guard).
func WithAdmitted(ctx context.Context, admitted any) context.Context {
	return context.WithValue(ctx, admittedKey{}, admittedValue{admitted})
}

type admittedKey struct{}

type admittedValue struct{ v any }

// maxCallsAtOnce bounds the calls of one session served at once, as the
// library's stdio server bounds its tool calls.
const maxCallsAtOnce = 16

// serve runs the session: it reads the client's messages from in, one a
// line, serves each request on its own goroutine and writes the answers
// and the session's notifications to out, one message per Write. It
// returns once in ends and every call it read is answered.
func (s *session) serve(ctx context.Context, srv *server.MCPServer, in io.Reader, out io.Writer) error {
	if err := srv.RegisterSession(ctx, s); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer srv.UnregisterSession(ctx, s.id)
	ctx = srv.WithContext(ctx, s)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var writeMu sync.Mutex
	write := func(msg any) {
		b, err := json.Marshal(msg)
		if err != nil {
			return
		}
		writeMu.Lock()
		defer writeMu.Unlock()
		_, _ = out.Write(append(b, '\n')) // a relay gone drops its answers; the engine goes on
	}
	go func() {
		for {
			select {
			case n := <-s.notifications:
				write(n)
			case <-ctx.Done():
				return
			}
		}
	}()

	// Calls that wait for the client to leave (subscriptions/listen) end
	// with the input; the others are answered first.
	listening, stopListening := context.WithCancel(ctx)
	defer stopListening()
	var calls sync.WaitGroup
	slots := make(chan struct{}, maxCallsAtOnce)
	r := bufio.NewReaderSize(in, 64<<10)
	var readErr error
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var head struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			switch {
			case json.Unmarshal(line, &head) != nil:
				write(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "parse error", nil))
			case head.Method == "" && head.ID != nil && (head.Result != nil || head.Error != nil):
				// An answer from the client: the board asks clients nothing.
			case head.Method != "" && head.ID != nil:
				callCtx := ctx
				if head.Method == string(mcp.MethodSubscriptionsListen) {
					callCtx = listening
				}
				msg := json.RawMessage(bytes.Clone(line))
				slots <- struct{}{}
				calls.Go(func() {
					defer func() { <-slots }()
					if res := handle(callCtx, srv, head.ID, msg); res != nil {
						write(res)
					}
				})
			default:
				// A notification is handled in order, and has no answer;
				// what is neither request nor notification gets the
				// library's error.
				if res := handle(ctx, srv, nil, line); res != nil {
					write(res)
				}
			}
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	stopListening()
	calls.Wait()
	return readErr
}

// handle serves one message, recovering a panicking handler: a request
// gets an internal error carrying its id.
func handle(ctx context.Context, srv *server.MCPServer, id json.RawMessage, msg json.RawMessage) (res mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil && id != nil {
			var rid any
			_ = json.Unmarshal(id, &rid)
			res = mcp.NewJSONRPCError(mcp.NewRequestId(rid), mcp.INTERNAL_ERROR, fmt.Sprintf("internal error: %v", r), nil)
		}
	}()
	return srv.HandleMessage(ctx, msg)
}
