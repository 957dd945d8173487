package tools

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

const updateStateDescription = "Write a Markdown note. expect_version: the version last read; 0 creates."

var updateStateSchema = schema(2,
	str("uri", "topic/key"),
	str("digest", "One-line summary"),
	str("body", ""),
	str("source_path", "File the server reads"),
	strs("columns", ""),
	rows("rows", "Without columns: appended"),
	str("append", ""),
	intp("expect_version", ""),
	strs("sources", "Addresses"),
	num("confidence", "0-1"),
	str("kind", ""),
	oneOf("claim", "take", "release", "done"),
	intDefault("lease", 600),
)

type updateStateArgs struct {
	URI           string     `json:"uri"`
	Digest        string     `json:"digest"`
	Body          *string    `json:"body,omitempty"`
	SourcePath    string     `json:"source_path,omitempty"`
	Columns       []string   `json:"columns,omitempty"`
	Rows          [][]string `json:"rows,omitempty"`
	Append        *string    `json:"append,omitempty"`
	ExpectVersion *int       `json:"expect_version,omitempty"`
	Sources       []string   `json:"sources,omitempty"`
	Confidence    *float64   `json:"confidence,omitempty"`
	Kind          string     `json:"kind,omitempty"`
	Claim         string     `json:"claim,omitempty"`
	Lease         int        `json:"lease,omitempty"`
}

func updateStateTool() mcp.Tool {
	return mcp.NewTool("update_state",
		mcp.WithDescription(updateStateDescription),
		withSchema(updateStateSchema),
		mcp.WithTitleAnnotation("Write a note"),
		mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(false), // every version stays in git
		mcp.WithIdempotentHintAnnotation(false),
		mcp.WithOpenWorldHintAnnotation(false),
	)
}

func (s *Server) updateState(ctx context.Context, in updateStateArgs) (*mcp.CallToolResult, error) {
	req := fsstore.UpdateRequest{URI: in.URI, Digest: in.Digest, Body: in.Body, SourcePath: in.SourcePath,
		ExpectVersion: in.ExpectVersion, Sources: in.Sources, Confidence: in.Confidence, Kind: in.Kind,
		AppendText: in.Append, Claim: in.Claim, Lease: time.Duration(in.Lease) * time.Second}
	switch {
	case in.Columns != nil:
		req.Columns, req.Rows = in.Columns, in.Rows
		if req.Rows == nil {
			req.Rows = [][]string{}
		}
	case in.Rows != nil:
		req.AppendRows = in.Rows
	}
	res, err := s.view(ctx).Update(req)
	if err != nil {
		return nil, err
	}
	s.logUnfinished("update_state", res)
	return jsonResult(writeResult{Version: res.Version, Digest: res.Digest, Summary: res.Summary, Warnings: res.Warnings})
}
