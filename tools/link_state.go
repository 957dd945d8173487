package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const linkStateDescription = "Link src to dst notes."

var linkStateSchema = schema(3,
	str("src", ""),
	oneOf("rel", "depends_on", "derived_from", "supersedes", "refines", "cites", "part_of", "contradicts"),
	strs("dst", ""),
)

type linkStateArgs struct {
	Src string   `json:"src"`
	Rel string   `json:"rel"`
	Dst []string `json:"dst"`
}

func linkStateTool() mcp.Tool {
	return mcp.NewTool("link_state",
		mcp.WithDescription(linkStateDescription),
		withSchema(linkStateSchema),
		mcp.WithTitleAnnotation("Link notes"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		mcp.WithOpenWorldHintAnnotation(false),
	)
}

type writeResult struct {
	Version  int      `json:"version"`
	Digest   string   `json:"digest,omitempty"`
	Summary  string   `json:"summary,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func (s *Server) linkState(ctx context.Context, in linkStateArgs) (*mcp.CallToolResult, error) {
	res, err := s.view(ctx).Link(in.Src, in.Rel, in.Dst)
	if err != nil {
		return nil, err
	}
	s.logUnfinished("link_state", res)
	return jsonResult(writeResult{Version: res.Version, Warnings: res.Warnings})
}

// logUnfinished tells the operator why a write committed past its commit
// point did not finish; the agent's answer has a warning instead.
func (s *Server) logUnfinished(tool string, res *fsstore.UpdateResult) {
	if res.Unfinished != nil {
		s.log.Error("write committed, not finished; the next write finishes it", "tool", tool, "uri", res.URI,
			"version", res.Version, "err", res.Unfinished)
	}
}
