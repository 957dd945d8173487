package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// MaxSurfaceTokens is the most the five tools may cost a model on every turn
// (SPEC 5): each tool's name, description and input schema as JSON, in
// o200k_base tokens.
const MaxSurfaceTokens = 600

// ToolTokens is what one tool costs a model on every turn.
type ToolTokens struct {
	Name   string
	Tokens int
}

// SurfaceCost measures each tool as hosts pass it to the model: name,
// description and input schema serialized as JSON, from the exact tools/list
// result a client receives; a tool whose visibility leaves the model out
// (the view's, app.go) is not passed, and not counted. The _meta that names
// the view is the host's, not the model's. A host may re-serialize the schema (sorted keys,
// say), so the dearer of the as-sent and the key-sorted form counts.
func SurfaceCost(s *Server) ([]ToolTokens, error) {
	resp := s.mcp.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	raw, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	var list struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, err
	}
	if len(list.Result.Tools) == 0 {
		return nil, errors.New("tools/list returned no tools")
	}
	out := make([]ToolTokens, 0, len(list.Result.Tools))
	for _, rawTool := range list.Result.Tools {
		var tool struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Meta        map[string]any  `json:"_meta"`
		}
		if err := json.Unmarshal(rawTool, &tool); err != nil {
			return nil, err
		}
		if !modelSees(tool.Meta) {
			continue // the view's own: a host keeps it from the model
		}
		seen, err := json.Marshal(map[string]any{"name": tool.Name, "description": tool.Description, "input_schema": tool.InputSchema})
		if err != nil {
			return nil, err
		}
		var schema any
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", tool.Name, err)
		}
		resorted, err := json.Marshal(map[string]any{"name": tool.Name, "description": tool.Description, "input_schema": schema})
		if err != nil {
			return nil, err
		}
		out = append(out, ToolTokens{Name: tool.Name, Tokens: max(CountTokens(string(seen)), CountTokens(string(resorted)))})
	}
	return out, nil
}

// SurfaceTokens is the whole tool surface's cost: the sum of SurfaceCost.
func SurfaceTokens(s *Server) (int, error) {
	costs, err := SurfaceCost(s)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, c := range costs {
		total += c.Tokens
	}
	return total, nil
}
