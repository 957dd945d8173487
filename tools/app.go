package tools

import (
	"context"
	_ "embed" // the view's HTML
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// The board as an MCP App (the io.modelcontextprotocol/ui extension): a
// host that renders apps shows the board inline, in a sandboxed frame, when
// the model calls list_keys or get_state, which name the view. The view is
// one self-contained HTML document (app/view.html): it speaks the
// extension's JSON-RPC over postMessage to its host, and gets everything
// through the host by calling two tools that only a view may call
// (visibility "app"): board_view reads (the board, a topic, a note with its
// history and any past version, search, activity, and the cursor it polls
// to stay current), board_act writes as a person does from the page. Both
// are scoped by the caller's token exactly as the five tools are.
//
// The view's tools are listed only to a client that declares the
// extension, and hosts keep them from the model: the five tools' surface
// is what it was. A host without the extension sees the five tools and
// their text answers, as before.

const (
	uiExtension = "io.modelcontextprotocol/ui"
	// ViewURI is the view's resource.
	ViewURI = "ui://blackboard/board.html"
	// ViewMIME is the extension's type of an app's HTML.
	ViewMIME = "text/html;profile=mcp-app"
)

//go:embed app/view.html
var viewHTML string

// appOptions are the server options the view needs.
func (s *Server) appOptions() []server.ServerOption {
	return []server.ServerOption{
		server.WithExtensions(map[string]any{uiExtension: map[string]any{}}),
		server.WithToolFilter(viewToolsFor),
	}
}

// addApp registers the view's resource and its two tools.
func (s *Server) addApp() {
	s.mcp.AddResource(mcp.NewResource(ViewURI, "board", mcp.WithResourceDescription("The board, inline in the host"),
		mcp.WithMIMEType(ViewMIME)),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: ViewURI, MIMEType: ViewMIME, Text: viewHTML,
				Meta: map[string]any{"ui": map[string]any{"prefersBorder": true}}}}, nil
		})
	s.mcp.AddTool(appOnly(mcp.NewTool("board_view",
		mcp.WithDescription("The board's view reads: board, topic, note, search, activity or changes."),
		withSchema(boardViewSchema), readOnly("Board view"))), handler(s.log, s.ws.IndexBuild, "board_view", s.boardView))
	s.mcp.AddTool(appOnly(mcp.NewTool("board_act",
		mcp.WithDescription("A person's write from the board's view."),
		withSchema(boardActSchema))), handler(s.log, s.ws.IndexBuild, "board_act", s.boardAct))
}

// namesView makes a tool name the view, for hosts that show it beside the
// tool's answer (the nested key, and the flat one older hosts read).
func namesView(t mcp.Tool) mcp.Tool {
	t.Meta = &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": ViewURI}, "ui/resourceUri": ViewURI}}
	return t
}

// appOnly makes a tool the view's alone: hosts keep it from the model.
func appOnly(t mcp.Tool) mcp.Tool {
	t.Meta = &mcp.Meta{AdditionalFields: map[string]any{"ui": map[string]any{"resourceUri": ViewURI, "visibility": []string{"app"}}}}
	return t
}

// modelSees reports whether a host passes the tool to the model: every tool
// but one whose visibility leaves the model out.
func modelSees(meta map[string]any) bool {
	ui, _ := meta["ui"].(map[string]any)
	vis, ok := ui["visibility"]
	if !ok {
		return true
	}
	switch v := vis.(type) {
	case []string:
		return slices.Contains(v, "model")
	case []any:
		return slices.Contains(v, any("model"))
	}
	return true
}

// viewToolsFor keeps the view's tools from a client that does not declare
// the extension: it could not keep them from its model.
func viewToolsFor(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if declaresApps(ctx) {
		return tools
	}
	out := tools[:0:0]
	for _, t := range tools {
		if t.Meta == nil || modelSees(t.Meta.AdditionalFields) {
			out = append(out, t)
		}
	}
	return out
}

// declaresApps reports whether the call's client declared the extension at
// initialize.
func declaresApps(ctx context.Context) bool {
	session, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	_, ok = session.GetClientCapabilities().Extensions[uiExtension]
	return ok
}

var boardViewSchema = schema(1,
	oneOf("page", "board", "topic", "note", "search", "activity", "changes"),
	str("topic", ""),
	str("uri", ""),
	str("q", ""),
	str("from", ""),
	str("to", ""),
)

type boardViewArgs struct {
	Page  string `json:"page"`
	Topic string `json:"topic,omitempty"`
	URI   string `json:"uri,omitempty"`
	Q     string `json:"q,omitempty"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

var boardActSchema = schema(2,
	oneOf("action", "new", "edit", "append", "link", "claim"),
	str("uri", ""),
	intDefault("expect", 0),
	str("digest", ""),
	str("body", ""),
	str("text", ""),
	str("rel", ""),
	strs("dst", ""),
	str("claim", ""),
	str("claim_for", ""),
	intDefault("hours", 1),
)

type boardActArgs struct {
	Action   string   `json:"action"`
	URI      string   `json:"uri"`
	Expect   int      `json:"expect,omitempty"`
	Digest   string   `json:"digest,omitempty"`
	Body     string   `json:"body,omitempty"`
	Text     string   `json:"text,omitempty"`
	Rel      string   `json:"rel,omitempty"`
	Dst      []string `json:"dst,omitempty"`
	Claim    string   `json:"claim,omitempty"`
	ClaimFor string   `json:"claim_for,omitempty"`
	Hours    int      `json:"hours,omitempty"`
}

// viewAnswer is a board_view or board_act answer: the JSON for the view as
// structured content, and a line of text for a host that shows text.
func viewAnswer(line string, data map[string]any) (*mcp.CallToolResult, error) {
	res := mcp.NewToolResultText(line)
	res.StructuredContent = data
	return res, nil
}

// boardView reads one page of the board for the view.
func (s *Server) boardView(ctx context.Context, in boardViewArgs) (*mcp.CallToolResult, error) {
	v := s.view(ctx)
	cursor, err := s.ws.Cursor()
	if err != nil {
		return nil, err
	}
	data := map[string]any{"page": in.Page, "cursor": cursor, "board": s.ws.Name()}
	switch in.Page {
	case "changes":
		return viewAnswer(fmt.Sprintf("cursor %d", cursor), data)
	case "board":
		counts, err := v.TopicCounts()
		if err != nil {
			return nil, err
		}
		recent, err := v.List(fsstore.ListOptions{Limit: 50})
		if err != nil {
			return nil, err
		}
		data["topics"], data["notes"] = counts, viewSummaries(recent.Notes)
		return viewAnswer(fmt.Sprintf("%d topics", len(counts)), data)
	case "topic":
		folders, err := v.Folders(in.Topic)
		if err != nil {
			return nil, err
		}
		l, err := v.List(fsstore.ListOptions{Topic: in.Topic, Limit: 200})
		if err != nil {
			return nil, err
		}
		data["topic"], data["folders"], data["notes"], data["omitted"] = in.Topic, folders, viewSummaries(l.Notes), l.Omitted
		return viewAnswer(fmt.Sprintf("%d notes", len(l.Notes)), data)
	case "note":
		return s.viewNote(v, in, data)
	case "search":
		hits, _, err := v.Search(in.Q, in.Topic, 50)
		if err != nil && !errors.Is(err, fsstore.ErrInvalid) {
			return nil, err
		}
		out := make([]map[string]any, 0, len(hits))
		for _, h := range hits {
			out = append(out, map[string]any{"uri": h.URI, "digest": h.Digest, "score": h.Score})
		}
		data["q"], data["hits"] = in.Q, out
		return viewAnswer(fmt.Sprintf("%d hits", len(hits)), data)
	case "activity":
		acts, err := v.Activity(100)
		if err != nil {
			return nil, err
		}
		out := make([]map[string]any, 0, len(acts))
		for _, a := range acts {
			out = append(out, map[string]any{"cursor": a.Cursor, "commit": a.Commit, "author": a.Author,
				"time": a.Time.UTC().Format(time.RFC3339), "subject": a.Subject, "by_program": a.ByProgram, "uris": a.URIs})
		}
		data["activity"] = out
		return viewAnswer(fmt.Sprintf("%d commits", len(acts)), data)
	}
	return nil, invalid("page must be board, topic, note, search, activity or changes")
}

// viewNote is the note page of the view: the note (or one past version),
// its history, links and backlinks, and the content at two commits when
// from and to name them (the view diffs them).
func (s *Server) viewNote(v *fsstore.View, in boardViewArgs, data map[string]any) (*mcp.CallToolResult, error) {
	n, err := v.Get(in.URI, true)
	if err != nil {
		return nil, err
	}
	key, _, _ := strings.Cut(s.short(n.URI), note.VersionMark)
	history, err := v.Log(key, 100)
	if err != nil {
		return nil, err
	}
	back, err := v.Backlinks(key)
	if err != nil {
		return nil, err
	}
	hist := make([]map[string]any, 0, len(history))
	for _, e := range history {
		hist = append(hist, map[string]any{"version": e.Version, "commit": e.Commit, "author": e.Author,
			"time": e.Time.UTC().Format(time.RFC3339), "subject": e.Subject, "deleted": e.Deleted})
	}
	backlinks := make([]map[string]string, 0, len(back))
	for _, b := range back {
		backlinks = append(backlinks, map[string]string{"src": b.Src, "rel": b.Rel})
	}
	item := map[string]any{"uri": n.URI, "key": key, "version": n.Version, "digest": n.Digest, "kind": n.Kind,
		"author": n.Author, "updated": n.Updated, "content": n.Content, "table": len(n.Columns) > 0,
		"sources": n.Sources, "links": n.Links, "claimed_by": n.ClaimedBy, "claim_until": n.ClaimUntil,
		"done_by": n.DoneBy, "done_at": n.DoneAt, "commit": n.Commit, "problem": n.Problem,
		"superseded_by": n.SupersededBy, "contradicted_by": n.ContradictedBy}
	data["note"], data["history"], data["backlinks"] = item, hist, backlinks
	data["can_write"] = n.Commit == "" && v.MayWrite(key)
	data["relations"] = note.Relations
	if in.From != "" && in.To != "" {
		from, err := v.ContentAt(key, in.From)
		if err != nil {
			return nil, err
		}
		to, err := v.ContentAt(key, in.To)
		if err != nil {
			return nil, err
		}
		data["diff"] = map[string]string{"from": in.From, "to": in.To, "from_content": from, "to_content": to}
	}
	return viewAnswer(n.URI+" v"+strconv.Itoa(n.Version), data)
}

// viewSummaries are a listing's notes as the view shows them.
func viewSummaries(notes []fsstore.Summary) []map[string]any {
	out := make([]map[string]any, 0, len(notes))
	for _, n := range notes {
		out = append(out, map[string]any{"uri": n.URI, "version": n.Version, "digest": n.Digest, "kind": n.Kind,
			"author": n.Author, "updated": n.Updated, "claimed_by": n.ClaimedBy, "problem": n.Problem,
			"superseded": len(n.SupersededBy) > 0, "contradicted": len(n.ContradictedBy) > 0})
	}
	return out
}

// boardAct is a person's write from the view, made as the page makes it
// (fsstore.View.Act): authored by the caller, marked as a person's, with
// the version the person saw as expect_version. A refused write answers
// why, and when the note moved on, the note then and now for the view to
// show what changed; the person's text stays in the view.
func (s *Server) boardAct(ctx context.Context, in boardActArgs) (*mcp.CallToolResult, error) {
	v := s.view(ctx)
	a := fsstore.Action{Kind: in.Action, URI: in.URI, Seen: in.Expect, Digest: in.Digest, Body: in.Body, Text: in.Text,
		Rel: in.Rel, Dst: in.Dst, Claim: in.Claim, ClaimFor: in.ClaimFor, Lease: time.Duration(max(in.Hours, 1)) * time.Hour}
	res, err := v.Act(a)
	if err == nil {
		return viewAnswer(fmt.Sprintf("%s v%d", res.URI, res.Version), map[string]any{"ok": true, "uri": res.URI, "version": res.Version})
	}
	var fe *fsstore.Error
	if !errors.As(err, &fe) {
		return nil, err
	}
	data := map[string]any{"ok": false, "error": errorCode(err), "message": fe.Msg}
	if errors.Is(err, fsstore.ErrConflict) && in.Action != fsstore.ActNew && in.Expect > 0 {
		if then, now, err := v.Moved(in.URI, in.Expect); err == nil {
			data["moved"] = map[string]any{"seen": in.Expect, "version": now.Version, "then": then.Content, "now": now.Content,
				"then_digest": then.Digest, "now_digest": now.Digest}
		}
	}
	return viewAnswer("not saved: "+fe.Msg, data)
}

// errorCode is the tools' error code of a refused write (SPEC 5).
func errorCode(err error) string {
	for _, c := range errorCodes {
		if errors.Is(err, c.kind) {
			return c.code
		}
	}
	return "internal"
}
