package tools

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

var update = flag.Bool("update", false, "rewrite the tool schema snapshots in testdata/toolsnaps")

func newTestServer(t testing.TB) (*Server, *fsstore.Workspace) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	ws, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return NewServer(ws, slog.New(slog.NewTextHandler(io.Discard, nil)), "test"), ws
}

// toolsList returns the exact tools/list result a client receives.
func toolsList(t testing.TB, s *Server) []json.RawMessage {
	t.Helper()
	resp := s.MCP().HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Result.Tools
}

// TestToolSurfaceBudget: what hosts pass to the model on every turn (each
// tool's name, description and input schema, as JSON) stays within 600
// o200k tokens, with every parameter described.
func TestToolSurfaceBudget(t *testing.T) {
	s, _ := newTestServer(t)
	tools := toolsList(t, s)
	if len(tools) != 5 {
		t.Fatalf("tools/list has %d tools, want 5", len(tools))
	}
	// What hosts pass to the model is counted by SurfaceCost, the same code
	// health runs; here the test also checks each tool's annotations.
	whole := 0
	for _, raw := range tools {
		var tool struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		whole += CountTokens(string(raw))
		for _, k := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := tool.Annotations[k]; !ok {
				t.Errorf("%s: annotation %s not set", tool.Name, k)
			}
		}
	}
	costs, err := SurfaceCost(s)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, c := range costs {
		t.Logf("%-12s %4d tokens", c.Name, c.Tokens)
		total += c.Tokens
	}
	t.Logf("tool surface: %d tokens of %d (whole tools/list result with annotations: %d tokens)", total, MaxSurfaceTokens, whole)
	if total > MaxSurfaceTokens {
		t.Errorf("the tool surface costs %d tokens on every turn; the budget is %d", total, MaxSurfaceTokens)
	}
}

// TestToolSnapshots fails when a tool's public shape drifts from its
// snapshot: every model reads it, so a change is a deliberate act
// (go test ./tools -run Snapshots -update).
func TestToolSnapshots(t *testing.T) {
	s, _ := newTestServer(t)
	for _, raw := range toolsList(t, s) {
		var tool struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		var pretty map[string]any
		if err := json.Unmarshal(raw, &pretty); err != nil {
			t.Fatal(err)
		}
		got, err := json.MarshalIndent(pretty, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "toolsnaps", tool.Name+".json")
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("no snapshot for %s: run go test ./tools -run Snapshots -update", tool.Name)
		}
		if string(want) != string(got)+"\n" {
			t.Errorf("tool %s changed; if that is meant, run go test ./tools -run Snapshots -update\ngot:\n%s", tool.Name, got)
		}
	}
}

// selfDescribing are the parameters whose name and type say what goes
// there (columns beside rows, fields beside mode=table): a description would
// cost tokens on every turn and add nothing.
var selfDescribing = map[string]bool{
	"update_state.body": true, "update_state.append": true, "update_state.columns": true, "update_state.kind": true,
	"get_state.uris": true, "get_state.fields": true, "list_keys.kind": true, "list_keys.fields": true,
	"search_keys.topic": true, "link_state.src": true, "link_state.dst": true, "list_keys.open": true,
}

// describedByTool are the parameters the tool's own description explains,
// by name: the model reads that first, and saying it twice costs twice.
var describedByTool = map[string]bool{
	"update_state.expect_version": true,
}

// TestSchemasMatchArguments: each hand-written schema names exactly the
// arguments its handler binds, with the required ones first, each typed and
// described (by its values, its default, a description, or by name in the
// tool's description) unless its name says it all.
func TestSchemasMatchArguments(t *testing.T) {
	for _, tt := range []struct {
		tool, desc string
		schema     json.RawMessage
		args       any
	}{
		{"update_state", updateStateDescription, updateStateSchema, updateStateArgs{}},
		{"get_state", getStateDescription, getStateSchema, getStateArgs{}},
		{"list_keys", listKeysDescription, listKeysSchema, listKeysArgs{}},
		{"search_keys", searchKeysDescription, searchKeysSchema, searchKeysArgs{}},
		{"link_state", linkStateDescription, linkStateSchema, linkStateArgs{}},
	} {
		var s struct {
			Properties map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
				Enum        []any  `json:"enum"`
				Default     any    `json:"default"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(tt.schema, &s); err != nil {
			t.Fatalf("schema does not parse: %v\n%s", err, tt.schema)
		}
		names := jsonNames(tt.args)
		if len(names) != len(s.Properties) {
			t.Errorf("%s: schema has %d properties, the struct %d", tt.tool, len(s.Properties), len(names))
		}
		for _, n := range names {
			p, ok := s.Properties[n]
			switch {
			case !ok:
				t.Errorf("%s: argument %s missing from the schema", tt.tool, n)
			case p.Type == "":
				t.Errorf("%s: argument %s has no type", tt.tool, n)
			case describedByTool[tt.tool+"."+n] && !strings.Contains(tt.desc, n):
				t.Errorf("%s: argument %s is listed as described by the tool, whose description does not name it", tt.tool, n)
			case p.Description == "" && p.Enum == nil && p.Default == nil && !selfDescribing[tt.tool+"."+n] && !describedByTool[tt.tool+"."+n]:
				t.Errorf("%s: argument %s has no description", tt.tool, n)
			case p.Description != "" && (selfDescribing[tt.tool+"."+n] || describedByTool[tt.tool+"."+n]):
				t.Errorf("%s: argument %s is described elsewhere but has a description too", tt.tool, n)
			}
		}
	}
}
