package tools

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The server's own log goes to stderr, and, to a session that asked with
// logging/setLevel, as notifications/message at the level it asked. A
// session that may read the whole board gets every line; one scoped by a
// token gets only the lines about its own calls, without their details
// (other callers' notes, paths), as the tools keep them from it.

// ForwardLogs makes the server's log lines reach the sessions that asked
// for them, besides base, and returns the logger that does: give it to
// everything that logs about the board.
func (s *Server) ForwardLogs(base slog.Handler) *slog.Logger {
	s.log = slog.New(&logForwarder{base: base, s: s})
	return s.log
}

// logForwarder is a slog handler: every record to base, and a copy to the
// sessions that asked.
type logForwarder struct {
	base  slog.Handler
	s     *Server
	attrs []slog.Attr
	group string
}

func (h *logForwarder) Enabled(ctx context.Context, l slog.Level) bool {
	return h.base.Enabled(ctx, l) || h.s.watchers.anyLogs()
}

func (h *logForwarder) Handle(ctx context.Context, r slog.Record) error {
	var err error
	if h.base.Enabled(ctx, r.Level) {
		err = h.base.Handle(ctx, r)
	}
	targets := h.s.watchers.loggers()
	if len(targets) == 0 {
		return err
	}
	own := ""
	if session := server.ClientSessionFromContext(ctx); session != nil {
		own = session.SessionID()
	}
	whole := h.text(r, true)
	for _, t := range targets {
		data := whole
		if !t.readsAll {
			if t.session.SessionID() != own {
				continue // about another caller's call, or the board at large
			}
			data = h.text(r, false)
		}
		n := mcp.NewLoggingMessageNotification(mcpLevel(r.Level), "blackboard-mcp", data)
		// A session gone or blocked is not worth a log line: it would
		// come back here.
		_ = h.s.mcp.SendLogMessageToSpecificClient(t.session.SessionID(), n)
	}
	return err
}

// text is the record as one line: its message, then key=value pairs when
// details are wanted.
func (h *logForwarder) text(r slog.Record, details bool) string {
	var b strings.Builder
	b.WriteString(r.Message)
	if !details {
		return b.String()
	}
	add := func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		fmt.Fprintf(&b, " %s=%v", key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	return b.String()
}

func (h *logForwarder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.base = h.base.WithAttrs(attrs)
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logForwarder) WithGroup(name string) slog.Handler {
	c := *h
	c.base = h.base.WithGroup(name)
	c.group = name
	if h.group != "" {
		c.group = h.group + "." + name
	}
	return &c
}

// mcpLevel is a slog level as MCP names it.
func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return mcp.LoggingLevelDebug
	case l < slog.LevelWarn:
		return mcp.LoggingLevelInfo
	case l < slog.LevelError:
		return mcp.LoggingLevelWarning
	default:
		return mcp.LoggingLevelError
	}
}

// logTarget is a session that asked for log lines.
type logTarget struct {
	session  server.ClientSession
	readsAll bool
}

func (w *watchers) setLogs(ctx context.Context, s *Server) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.get(ctx, s, false); x != nil && !x.logs {
		x.logs = true
		w.logging++
	}
}

func (w *watchers) anyLogs() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.logging > 0
}

func (w *watchers) loggers() []logTarget {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.logging == 0 {
		return nil
	}
	var out []logTarget
	for _, x := range w.sessions {
		if x.logs {
			out = append(out, logTarget{session: x.session, readsAll: x.caller.ReadsAll()})
		}
	}
	return out
}
