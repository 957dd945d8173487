package tools

import (
	"context"
	"math"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const searchKeysDescription = "Digests of matches, exact identifiers first; empty means nothing relevant."

var searchKeysSchema = schema(1,
	str("q", `words "phrase" prefix*`),
	str("topic", ""),
	intDefault("limit", 10),
)

type searchKeysArgs struct {
	Q     string `json:"q"`
	Topic string `json:"topic,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

func searchKeysTool() mcp.Tool {
	return mcp.NewTool("search_keys",
		mcp.WithDescription(searchKeysDescription),
		withSchema(searchKeysSchema),
		readOnly("Search notes"),
	)
}

func (s *Server) searchKeys(ctx context.Context, in searchKeysArgs) (*mcp.CallToolResult, error) {
	if in.Limit < 0 || in.Limit > fsstore.MaxSearchLimit {
		return nil, invalid("limit is 1 to %d", fsstore.MaxSearchLimit)
	}
	v := s.view(ctx)
	hits, cursor, err := v.Search(in.Q, in.Topic, in.Limit)
	if err != nil {
		return nil, err
	}
	parts := make([]part, len(hits))
	for i, h := range hits {
		item := orderedItem{}
		item.add("uri", h.URI)
		item.add("digest", h.Digest)
		item.add("score", math.Round(h.Score*100)/100)
		parts[i] = newPart(h.URI, item.json(), nil)
	}
	return s.respond(modeDigest, nil, parts, 0, position{cursor: cursor, indexing: v.Indexing()}, DefaultBudget)
}
