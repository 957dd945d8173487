package tools

import (
	"context"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// Server is the board's MCP server on one workspace.
type Server struct {
	ws  *fsstore.Workspace
	log *slog.Logger
	mcp *server.MCPServer
	// caller says who makes a call: one agent for a stdio server, the
	// bearer of each HTTP request's token.
	caller func(ctx context.Context) *fsstore.Caller
	// watchers are the sessions to tell of changes (resources.go).
	watchers watchers
}

// SetCaller decides who makes each call. Without it every call is the
// workspace's agent, with every topic (open mode).
func (s *Server) SetCaller(fn func(ctx context.Context) *fsstore.Caller) { s.caller = fn }

// view is the board as the call's caller sees it, its write carrying the
// id its relay gave it.
func (s *Server) view(ctx context.Context) *fsstore.View {
	v := s.ws.As(s.callerOf(ctx))
	if w, ok := ctx.Value(writeIDKey{}).(writeID); ok {
		v = v.WithWriteID(w.id, w.retried)
	}
	return v
}

// The _meta members a relay adds to a tools/call of a write it passes on
// to the engine.
const (
	// MetaWriteID is the write's id, given by the relay: the commit of the
	// write carries it, so that a write sent again to a new engine after
	// the last one died is recognised as done, not applied twice.
	MetaWriteID = "blackboard-mcp/write"
	// MetaRetried marks a write the relay sends again: only then does the
	// engine look for the write's id among the commits.
	MetaRetried = "blackboard-mcp/retry"
)

// writeID is a call's MetaWriteID and MetaRetried.
type writeID struct {
	id      string
	retried bool
}

type writeIDKey struct{}

// withWriteID keeps the write id of a call's _meta in its context.
func withWriteID(ctx context.Context, meta *mcp.Meta) context.Context {
	if meta == nil {
		return ctx
	}
	id, ok := meta.AdditionalFields[MetaWriteID].(string)
	if !ok {
		return ctx
	}
	retried, _ := meta.AdditionalFields[MetaRetried].(bool)
	return context.WithValue(ctx, writeIDKey{}, writeID{id: id, retried: retried})
}

// callerOf is who makes the call of ctx: the caller SetCaller names, no
// one for a call that reached the server without one (see nothing, write
// nothing), else the workspace's agent with every topic (open mode).
func (s *Server) callerOf(ctx context.Context) *fsstore.Caller {
	if s.caller != nil {
		if c := s.caller(ctx); c != nil {
			return c
		}
		return fsstore.NoCaller()
	}
	return fsstore.OpenCaller(s.ws.Agent())
}

// Instructions are sent once, at initialize: the conventions a tool
// description has no room for.
const instructions = "A shared blackboard: notes with a one-line digest, versioned in git. " +
	"Start with get_state([\"run/state/current\"]). Read digests first and full bodies only when needed; " +
	"search_keys before deriving anything. Write with expect_version (0 creates); on conflict, read and merge. " +
	"Link findings to what they derive from, supersede or contradict."

// NewServer builds the MCP server with the five tools. version is the
// program's version, reported at initialize.
func NewServer(ws *fsstore.Workspace, log *slog.Logger, version string) *Server {
	s := &Server{ws: ws, log: log}
	s.mcp = server.NewMCPServer("blackboard-mcp", version, append([]server.ServerOption{
		// The tools never change while a server runs, yet it says it may
		// tell of changes: a client of 2026-07-28 that listens for them
		// gets a stream that stays open, its acknowledgement first. (The
		// library ends a listen for nothing it serves at once, and its
		// acknowledgement may then be lost to the end of the stream.)
		server.WithToolCapabilities(true),
		server.WithInstructions(instructions),
		server.WithRecovery(),
	}, append(s.resourceOptions(), s.appOptions()...)...)...)
	s.addResourceTemplate()
	s.mcp.AddTool(updateStateTool(), handler(log, s.ws.IndexBuild, "update_state", s.updateState))
	s.mcp.AddTool(namesView(getStateTool()), handler(log, s.ws.IndexBuild, "get_state", s.getState))
	s.mcp.AddTool(namesView(listKeysTool()), handler(log, s.ws.IndexBuild, "list_keys", s.listKeys))
	s.mcp.AddTool(searchKeysTool(), handler(log, s.ws.IndexBuild, "search_keys", s.searchKeys))
	s.mcp.AddTool(linkStateTool(), handler(log, s.ws.IndexBuild, "link_state", s.linkState))
	s.addApp()
	return s
}

// MCP is the underlying mcp-go server, to serve over stdio or HTTP.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// readOnly sets the four annotations of a read: mcp-go's defaults say a tool
// is destructive and open-world.
func readOnly(title string) mcp.ToolOption {
	return func(t *mcp.Tool) {
		t.Annotations = mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(true),
			DestructiveHint: mcp.ToBoolPtr(false),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}
	}
}
