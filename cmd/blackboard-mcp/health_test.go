package main

import (
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/health"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// TestHealthSurfaceFinding: a tool surface over its budget is a finding that
// names the dearest tools first; within it, an info line.
func TestHealthSurfaceFinding(t *testing.T) {
	costs := []tools.ToolTokens{{Name: "get_state", Tokens: 150}, {Name: "update_state", Tokens: 300}, {Name: "list_keys", Tokens: 200}}
	var r health.Report
	surfaceFindings(costs, tools.MaxSurfaceTokens, &r)
	if len(r.Findings) != 1 {
		t.Fatalf("got %d findings, want 1: %+v", len(r.Findings), r.Findings)
	}
	f := r.Findings[0]
	if f.Check != "tool_surface" || f.Severity != health.SeverityError {
		t.Errorf("got %s/%s, want tool_surface/error", f.Check, f.Severity)
	}
	if want := "650 tokens on every turn, over the budget of 600 (update_state 300, list_keys 200, get_state 150)"; !strings.Contains(f.Message, want) {
		t.Errorf("got message %q, want it to contain %q", f.Message, want)
	}
	if f.Fix == "" {
		t.Error("no fix")
	}
	line := findingLine(f)
	if !strings.HasPrefix(line, "error   tool_surface: the tool surface costs 650") || !strings.Contains(line, "; fix: shorten") {
		t.Errorf("got line %q", line)
	}

	r = health.Report{}
	surfaceFindings(costs[:2], tools.MaxSurfaceTokens, &r)
	if !r.OK() || len(r.Info) != 1 || r.Info[0] != "tool surface: 450 of 600 tokens" {
		t.Errorf("within budget: got findings %+v, info %q", r.Findings, r.Info)
	}
}

// TestHealthFindingLine: one line per finding, whatever the message holds.
func TestHealthFindingLine(t *testing.T) {
	for _, tt := range []struct {
		f    health.Finding
		want string
	}{
		{health.Finding{Check: "uncommitted", Severity: "warning", Path: "t/a.md", Message: "differs.", Fix: "commit it"},
			"warning uncommitted t/a.md: differs; fix: commit it"},
		{health.Finding{Check: "objects", Severity: "error", Message: "git fsck fails:\nline two", Fix: "restore"},
			"error   objects: git fsck fails: line two; fix: restore"},
	} {
		if got := findingLine(tt.f); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
