package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const listKeysDescription = "List notes."

var listKeysSchema = schema(0,
	str("topic", "Topic or prefix"),
	str("kind", ""),
	oneOf("order", "recent", "name", "oldest"),
	intDefault("limit", 20),
	oneOf("mode", "digest", "table", "ref"),
	strs("fields", ""),
	intDefault("budget_tokens", 2000),
	intp("since", "After this cursor"),
	boolp("open", ""),
)

type listKeysArgs struct {
	Topic  string   `json:"topic,omitempty"`
	Kind   string   `json:"kind,omitempty"`
	Order  string   `json:"order,omitempty"`
	Limit  int      `json:"limit,omitempty"`
	Mode   string   `json:"mode,omitempty"`
	Fields []string `json:"fields,omitempty"`
	Budget int      `json:"budget_tokens,omitempty"`
	Since  int      `json:"since,omitempty"`
	Open   bool     `json:"open,omitempty"`
}

func listKeysTool() mcp.Tool {
	return mcp.NewTool("list_keys",
		mcp.WithDescription(listKeysDescription),
		withSchema(listKeysSchema),
		readOnly("List notes"),
	)
}

func (s *Server) listKeys(ctx context.Context, in listKeysArgs) (*mcp.CallToolResult, error) {
	v := s.view(ctx)
	mode, budget, err := readOptions(in.Mode, in.Budget, modeRef, modeDigest, modeTable)
	if err != nil {
		return nil, err
	}
	if err := checkFields(in.Fields); err != nil {
		return nil, err
	}
	if in.Order != "" && in.Order != "recent" && in.Order != "name" && in.Order != "oldest" {
		return nil, invalid("order is recent, name or oldest")
	}
	if in.Limit < 0 || in.Limit > fsstore.MaxListLimit {
		return nil, invalid("limit is 1 to %d", fsstore.MaxListLimit)
	}
	l, err := v.List(fsstore.ListOptions{Topic: in.Topic, Kind: in.Kind, ByName: in.Order == "name",
		Oldest: in.Order == "oldest", Limit: in.Limit, Since: in.Since, Open: in.Open})
	if err != nil {
		return nil, err
	}
	parts := make([]part, 0, len(l.Notes))
	for i := range l.Notes {
		p, err := readPart(v, fsstore.SummaryResult{URI: l.Notes[i].URI, Summary: &l.Notes[i]}, mode, in.Fields)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return s.respond(mode, in.Fields, parts, l.Omitted, position{cursor: l.Cursor, indexing: v.Indexing()}, budget)
}
