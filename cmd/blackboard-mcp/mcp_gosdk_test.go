package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The same binary through the official Go SDK's client (CommandTransport
// over exec.Cmd): a second, independent implementation of the protocol must
// see the same tools and get the same answers.

// wantAnnotations are the four hints of each tool (SPEC: all four set on
// every tool; mcp-go's defaults would say destructive and open-world).
var wantAnnotations = map[string]map[string]bool{
	"update_state": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false},
	"link_state":   {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
	"get_state":    {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
	"list_keys":    {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
	"search_keys":  {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
}

func TestMCPToolsList(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	sessions := []*session{startMCPGo(t, dir, "lister"), startServer(t, serverOpts{dir: dir, agent: "lister", client: goSDK})}
	views := map[string]map[string]string{} // client -> tool -> canonical JSON
	for _, s := range sessions {
		ctx, cancel := contextWithTimeout()
		tools, err := s.listTools(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s tools/list: %v", s.client, err)
		}
		var names []string
		views[s.client] = map[string]string{}
		for _, tool := range tools {
			name, _ := tool["name"].(string)
			names = append(names, name)
			ann, _ := tool["annotations"].(map[string]any)
			for hint, want := range wantAnnotations[name] {
				got, present := ann[hint].(bool)
				if !present || got != want {
					t.Errorf("%s: %s %s = %v (present %v); want %v", s.client, name, hint, ann[hint], present, want)
				}
			}
			if title, _ := ann["title"].(string); title == "" {
				t.Errorf("%s: %s has no title", s.client, name)
			}
			if desc, _ := tool["description"].(string); desc == "" {
				t.Errorf("%s: %s has no description", s.client, name)
			}
			if _, ok := tool["outputSchema"]; ok {
				t.Errorf("%s: %s has an output schema; tools have none (SPEC section 5)", s.client, name)
			}
			schema, _ := tool["inputSchema"].(map[string]any)
			if schema["type"] != "object" {
				t.Errorf("%s: %s input schema %v is not an object schema", s.client, name, schema)
			}
			if req, ok := schema["required"].([]any); ok && len(req) == 0 {
				delete(schema, "required") // mcp-go's typed schema adds an empty list the wire does not carry
			}
			// Only what the protocol defines is compared between clients:
			// each client may add its own bookkeeping fields.
			canon, _ := json.Marshal(map[string]any{"name": name, "description": tool["description"],
				"inputSchema": schema, "annotations": ann})
			views[s.client][name] = string(canon)
		}
		slices.Sort(names)
		if !slices.Equal(names, toolNames) {
			t.Errorf("%s sees tools %q; want exactly %q", s.client, names, toolNames)
		}
	}
	for _, name := range toolNames {
		if a, b := views["mcp-go"][name], views["go-sdk"][name]; a != b {
			t.Errorf("the clients see %s differently:\nmcp-go %s\ngo-sdk %s", name, a, b)
		}
	}
	for _, s := range sessions {
		s.closeClean()
	}
}

// TestMCPGoSDKSession runs a short team session through the Go SDK's
// client: create, conflict, append, table, read in every mode, list, search
// and link, with the answers checked as through mcp-go.
func TestMCPGoSDKSession(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startServer(t, serverOpts{dir: dir, agent: "sdk-agent", client: goSDK})
	var log ledger

	w := s.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell to 71%", "body": "After deploy-v2.4.7-hotfix.\n", "expect_version": 0, "kind": "finding", "confidence": 0.7})
	log.add("sdk-agent", "update", "research/cache", w.Version, "Cache hit rate fell to 71%")
	msg := s.fail("update_state", map[string]any{"uri": "research/cache", "digest": "Other", "body": "x", "expect_version": 0}, "conflict")
	if !strings.Contains(msg, "version 1") || !strings.Contains(msg, "sdk-agent") || !strings.Contains(msg, "Cache hit rate fell to 71%") {
		t.Errorf("conflict through the SDK: %q", msg)
	}
	w = s.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell to 71%; LRU undersized", "append": "The LRU is undersized.\n"})
	log.add("sdk-agent", "append", "research/cache", w.Version, "Cache hit rate fell to 71%; LRU undersized")
	w = s.write(map[string]any{"uri": "research/fix", "digest": "Double the LRU", "body": "Plan.", "expect_version": 0, "sources": []string{"research/cache"}})
	log.add("sdk-agent", "update", "research/fix", w.Version, "Double the LRU")
	w = s.write(map[string]any{"uri": "data/hit", "digest": "Hit rate by day", "columns": []string{"day", "hit"}, "rows": [][]string{{"mon", "0.93"}, {"tue", "0.71"}}, "expect_version": 0})
	log.add("sdk-agent", "update", "data/hit", w.Version, "Hit rate by day")
	w = s.link("research/fix", "derived_from", "research/cache")
	log.add("sdk-agent", "link", "research/fix", w.Version, "derived_from bb://acme/research/cache")

	e := s.get([]string{"research/cache", "research/fix", "data/hit", "research/none"}, "full", 0)
	want := []item{
		{URI: uri("research/cache"), Version: 2, Body: "After deploy-v2.4.7-hotfix.\nThe LRU is undersized.\n"},
		{URI: uri("research/fix"), Version: 2, Body: "Plan."},
		{URI: uri("data/hit"), Version: 1, Body: "day\thit\nmon\t0.93\ntue\t0.71\n"},
		{URI: uri("research/none"), Error: "not_found"},
	}
	for i, w := range want {
		if got := e.Items[i]; got.URI != w.URI || got.Version != w.Version || got.Body != w.Body || got.Error != w.Error {
			t.Errorf("item %d = %+v; want %+v", i, got, w)
		}
	}
	it := s.get([]string{"research/fix"}, "fields", 0).Items[0]
	if !slices.Equal(it.Links["derived_from"], []string{uri("research/cache")}) || !slices.Equal(it.Sources, []string{uri("research/cache")}) {
		t.Errorf("fields of research/fix: %+v", it)
	}
	l := parseEnvelope(t, s.ok("list_keys", map[string]any{"topic": "research", "order": "name"}), 2000)
	if !slices.Equal(l.uris(), []string{uri("research/cache"), uri("research/fix")}) {
		t.Errorf("list research = %q", l.uris())
	}
	f := parseEnvelope(t, s.ok("search_keys", map[string]any{"q": "deploy-v2.4.7-hotfix"}), 2000)
	if len(f.Items) == 0 || f.Items[0].URI != uri("research/cache") {
		t.Errorf("search deploy-v2.4.7-hotfix = %q", f.uris())
	}
	s.fail("update_state", map[string]any{"uri": "../x", "digest": "d", "body": "b"}, "invalid")
	s.fail("get_state", map[string]any{"uris": []string{"a/b"}, "budget_tokens": 20001}, "invalid")

	// Concurrent calls through the SDK's own id matching.
	var wg sync.WaitGroup
	errs := make(chan string, 10)
	for i := range 10 {
		wg.Go(func() {
			ctx, cancel := contextWithTimeout()
			defer cancel()
			res, err := s.callTool(ctx, "get_state", map[string]any{"uris": []string{fmt.Sprintf("research/missing-%d", i)}, "mode": "ref"})
			if err != nil || res.isError || !strings.Contains(res.text, fmt.Sprintf(`"uri":"bb://acme/research/missing-%d","error":"not_found"`, i)) {
				errs <- fmt.Sprintf("concurrent read %d: %v %+v", i, err, res)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	s.closeClean()
	if got, want := gitLog(t, dir), log.newestFirst(); !slices.Equal(got, want) {
		t.Errorf("git log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkWorkspace(t, dir)
}
