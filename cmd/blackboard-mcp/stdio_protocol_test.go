package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The protocol's edges over stdio: what the MCP library would leave
// unanswered, answer before the handshake, answer with a raw decoding
// error, or fail to parse.

// initializeAt makes the handshake at a protocol version.
func (r *rawServer) initializeAt(version string) {
	r.t.Helper()
	r.send(request("init", "initialize", map[string]any{"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e-edges", "version": "1.0.0"}}))
	got := r.await(`"init"`)
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(got[`"init"`].Result, &res); err != nil || res.ProtocolVersion != version {
		r.t.Fatalf("initialize at %s = %s (%v)", version, got[`"init"`].Result, err)
	}
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
}

// wantError checks that a response is a JSON-RPC error with code, and no
// result.
func wantError(t *testing.T, what string, m rpcResponse, code int, says string) {
	t.Helper()
	if m.Error == nil || m.Error.Code != code || !strings.Contains(m.Error.Message, says) {
		t.Errorf("%s: got %+v (result %s); want error %d saying %q", what, m.Error, m.Result, code, says)
	}
}

func TestMCPStdioProtocolEdges(t *testing.T) {
	t.Parallel()
	r := startRaw(t, serverOpts{dir: newWorkspaceDir(t), agent: "edges"})

	// Before the handshake only initialize and ping are answered.
	r.send(request(1, "tools/list", nil), request(2, "ping", nil))
	got := r.await("1", "2")
	wantError(t, "tools/list before initialize", got["1"], -32600, "initialize first")
	if got["2"].Error != nil {
		t.Errorf("ping before initialize = %+v; want an answer", got["2"].Error)
	}

	// A client may send its next requests before initialize is answered.
	r.send(request("init", "initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e-edges", "version": "1.0.0"}}),
		map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}, request("at-once", "tools/list", nil))
	got = r.await(`"init"`, `"at-once"`)
	if m := got[`"at-once"`]; m.Error != nil || !strings.Contains(string(m.Result), "update_state") {
		t.Errorf("tools/list sent right after initialize = %+v %s; want the tools", m.Error, m.Result)
	}
	// A request whose id is null is refused, not taken for a notification
	// and left unanswered.
	r.send(request(nil, "ping", nil))
	got = r.await("null")
	wantError(t, "a request with a null id", got["null"], -32600, "id")

	// The tools fit one page: no cursor is one the server gave.
	r.send(request(3, "tools/list", map[string]any{"cursor": "!!!not base64"}),
		request(4, "tools/list", map[string]any{"cursor": "bm9wZQ=="}))
	got = r.await("3", "4")
	for _, id := range []string{"3", "4"} {
		wantError(t, "tools/list with a made-up cursor", got[id], -32602, "invalid cursor")
		if strings.Contains(got[id].Error.Message, "base64") {
			t.Errorf("the cursor error leaks a decoding error: %q", got[id].Error.Message)
		}
	}

	// 2025-06-18 has no batches: refused whole, nothing in it run.
	r.send(`[` + mustJSON(t, toolCall(5, "update_state", map[string]any{"uri": "edge/batched", "digest": "d", "body": "b", "expect_version": 0})) +
		`,` + mustJSON(t, request(6, "ping", nil)) + `]`)
	got = r.await("null")
	wantError(t, "a batch under 2025-06-18", got["null"], -32600, "batch")
	r.send(toolCall(7, "get_state", map[string]any{"uris": []string{"edge/batched"}}))
	if text, _ := toolText(t, r.await("7")["7"]); !strings.Contains(text, "not_found") {
		t.Errorf("a note from a refused batch was written: %s", text)
	}
	// And the connection still serves.
	r.send(request(8, "ping", nil))
	if m := r.await("8")["8"]; m.Error != nil {
		t.Errorf("ping after the refused batch = %+v", m.Error)
	}
}

// Under 2025-03-26 a batch is answered as a batch: one array holding an
// answer to each request in it, none to its notifications.
func TestMCPStdioBatchUnder20250326(t *testing.T) {
	t.Parallel()
	r := startRaw(t, serverOpts{dir: newWorkspaceDir(t), agent: "batcher"})
	r.initializeAt("2025-03-26")
	r.send(`[` + strings.Join([]string{
		mustJSON(t, toolCall(1, "update_state", map[string]any{"uri": "b/one", "digest": "One", "body": "1", "expect_version": 0})),
		mustJSON(t, toolCall("two", "update_state", map[string]any{"uri": "b/two", "digest": "Two", "body": "2", "expect_version": 0})),
		mustJSON(t, request(3, "ping", nil)),
		mustJSON(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": "x", "progress": 1}}),
		mustJSON(t, request(nil, "ping", nil)),
		mustJSON(t, request(4, "tools/list", map[string]any{"cursor": "x"})),
	}, ",") + `]`)
	line := r.next()
	var answers []rpcResponse
	if err := json.Unmarshal([]byte(line), &answers); err != nil {
		t.Fatalf("the answer to a batch is not an array: %s", line)
	}
	byID := map[string]rpcResponse{}
	var ids []string
	for _, a := range answers {
		byID[string(a.ID)] = a
		ids = append(ids, string(a.ID))
	}
	slices.Sort(ids)
	if want := []string{`"two"`, "1", "3", "4", "null"}; !slices.Equal(ids, want) {
		t.Fatalf("the batch's answers have ids %v; want %v\n%s", ids, want, line)
	}
	for _, id := range []string{"1", `"two"`} {
		if text, isErr := toolText(t, byID[id]); isErr || !strings.Contains(text, `"version":1`) {
			t.Errorf("batched write %s = %s; want version 1", id, text)
		}
	}
	if byID["3"].Error != nil {
		t.Errorf("batched ping = %+v", byID["3"].Error)
	}
	wantError(t, "a batched request with a null id", byID["null"], -32600, "id")
	wantError(t, "a batched tools/list with a cursor", byID["4"], -32602, "invalid cursor")

	// A batch with initialize in it, or with an id twice, is refused whole.
	r.send(`[` + mustJSON(t, request(5, "ping", nil)) + `,` + mustJSON(t, request(5, "ping", nil)) + `]`)
	wantError(t, "a batch with an id twice", r.await("null")["null"], -32600, "batch")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
