package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// The command line's --json speaks the tools' JSON, so that a script and an
// agent read one format: the same field names (snake_case), the same order,
// and fields without a value left out rather than null.

// NoteJSON is a note as get_state gives it: uri, version, digest, then its
// fields (kind, author, updated, confidence, sources, links, columns) that
// have a value, est_tokens, superseded_by and contradicted_by, and with
// withBody the body ("body", as mode=full has it).
func NoteJSON(n *fsstore.NoteView, withBody bool) string {
	item := orderedItem{}
	item.add("uri", n.URI)
	item.add("version", n.Version)
	item.addCommit(n.Commit)
	if n.Problem != "" {
		item.add("problem", n.Problem)
		return item.json()
	}
	item.add("digest", n.Digest)
	for _, f := range append(append([]string(nil), defaultFields...), "columns") {
		if v, ok := fieldValue(n, f); ok {
			item.add(f, v)
		}
	}
	item.add("est_tokens", n.EstTokens)
	addBacklinks(&item, n.SupersededBy, n.ContradictedBy)
	if withBody {
		item.add("body", n.Content)
	}
	return item.json()
}

// LogJSON is a note's provenance in the tools' style: one object per
// version, newest first.
func LogJSON(entries []fsstore.LogEntry) string {
	parts := make([]string, 0, len(entries))
	for _, e := range entries {
		item := orderedItem{}
		item.add("version", e.Version)
		item.add("commit", e.Commit)
		item.add("author", e.Author)
		item.add("time", e.Time.UTC().Format(time.RFC3339))
		if e.Digest != "" {
			item.add("digest", e.Digest)
		}
		if e.Deleted {
			item.add("deleted", true)
		}
		if e.MovedFrom != "" {
			item.add("moved_from", e.MovedFrom)
		}
		if e.SameAs > 0 {
			item.add("same_as", e.SameAs)
		}
		item.add("by_program", e.ByProgram)
		item.add("subject", e.Subject)
		parts = append(parts, item.json())
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// CallTool runs a tool in this process as a client's tools/call runs it
// (the same binding of arguments, budget and envelope) and returns its
// text: the command line's ls --json and search --json print exactly what
// list_keys and search_keys give. A tool's error is an error with the
// tool's text (`code: message`).
func (s *Server) CallTool(ctx context.Context, name string, args map[string]any) (string, error) {
	req, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args}})
	if err != nil {
		return "", err
	}
	switch resp := s.mcp.HandleMessage(ctx, req).(type) {
	case mcp.JSONRPCResponse:
		res, ok := resp.Result.(*mcp.CallToolResult)
		if !ok {
			return "", fmt.Errorf("%s answered %T", name, resp.Result)
		}
		return ResultText(res)
	case mcp.JSONRPCError:
		return "", errors.New(resp.Error.Message)
	default:
		return "", fmt.Errorf("%s answered %T", name, resp)
	}
}

// ResultText is the text of a tool's result, or, for a tool error, an error
// with that text.
func ResultText(res *mcp.CallToolResult) (string, error) {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	if res.IsError {
		return "", errors.New(b.String())
	}
	return b.String(), nil
}
