package tools

import "github.com/blackboard-mcp/blackboard-mcp/tools/internal/o200k"

// CountTokens returns the number of o200k_base tokens (GPT-4o and later) in
// s: what a model pays for s.
func CountTokens(s string) int { return o200k.Count(s) }
