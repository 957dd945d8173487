package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestCLIJSONSpeaksTheToolsJSON: `get --json` prints a note with the field
// names and values get_state gives it in digest, fields and full modes, so
// a script and an agent read one format.
func TestCLIJSONSpeaksTheToolsJSON(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "writer")
	s.write(map[string]any{"uri": "raw/metrics", "digest": "Raw metrics", "body": "m", "expect_version": 0})
	s.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell", "body": "LRU undersized",
		"expect_version": 0, "sources": []string{"raw/metrics"}, "confidence": 0.8, "kind": "finding"})
	s.link("research/cache", "derived_from", "raw/metrics")
	s.write(map[string]any{"uri": "research/newer", "digest": "Newer finding", "body": "n", "expect_version": 0})
	s.link("research/newer", "supersedes", "research/cache")
	items := map[string]map[string]any{}
	for _, mode := range []string{"digest", "fields", "full"} {
		var env struct{ Items []map[string]any }
		if err := json.Unmarshal([]byte(s.ok("get_state", map[string]any{"uris": []string{"research/cache"}, "mode": mode})), &env); err != nil || len(env.Items) != 1 {
			t.Fatalf("get_state %s: %v %v", mode, err, env)
		}
		items[mode] = env.Items[0]
	}
	s.closeClean()

	for _, full := range []bool{false, true} {
		args := []string{"get", "research/cache", "--json"}
		if full {
			args = append(args, "--full")
		}
		var cli map[string]any
		out := runCLI(t, dir, args...)
		if err := json.Unmarshal([]byte(out), &cli); err != nil {
			t.Fatalf("get --json: %v\n%s", err, out)
		}
		modes := []string{"digest", "fields"}
		if full {
			modes = append(modes, "full")
		}
		for _, mode := range modes {
			for k, want := range items[mode] {
				if got, ok := cli[k]; !ok || !reflect.DeepEqual(got, want) {
					t.Errorf("get --json (full %v) has %s = %v; get_state mode=%s has %v", full, k, got, mode, want)
				}
			}
		}
		if _, ok := cli["body"]; ok != full {
			t.Errorf("get --json (full %v) body present: %v", full, ok)
		}
	}
}

// TestCLIListAndSearchJSONAreTheTools: `ls --json` and `search --json`
// print, byte for byte, what list_keys and search_keys give a client for
// the same question.
func TestCLIListAndSearchJSONAreTheTools(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "writer")
	for i := range 12 {
		s.write(map[string]any{"uri": fmt.Sprintf("research/cache-%d", i), "digest": fmt.Sprintf("Cache hit rate %d", i),
			"body": "the LRU is undersized", "expect_version": 0, "kind": []string{"finding", "decision"}[i%2]})
	}
	s.link("research/cache-3", "supersedes", "research/cache-1")
	s.write(map[string]any{"uri": "research/cache-5", "claim": "take"})
	s.write(map[string]any{"uri": "research/cache-6", "claim": "done"})
	lists := map[string]map[string]any{
		"ls research --json -n 5":                   {"topic": "research", "limit": 5},
		"ls research --json --kind decision --name": {"topic": "research", "kind": "decision", "order": "name"},
		"ls --json --since 3":                       {"since": 3},
		"ls research --json --open -n 20":           {"topic": "research", "open": true, "order": "oldest", "limit": 20},
		"ls --json --oldest":                        {"order": "oldest"},
	}
	want := map[string]string{}
	for cmd, args := range lists {
		args["mode"], args["budget_tokens"] = "digest", 20000
		want[cmd] = s.ok("list_keys", args)
	}
	searches := map[string]map[string]any{
		"search cache hit --json":                        {"q": "cache hit"},
		"search undersized --json --topic research -n 3": {"q": "undersized", "topic": "research", "limit": 3},
	}
	for cmd, args := range searches {
		want[cmd] = s.ok("search_keys", args)
	}
	s.closeClean()
	for cmd, text := range want {
		if got := strings.TrimSuffix(runCLI(t, dir, strings.Fields(cmd)...), "\n"); got != text {
			t.Errorf("%s printed\n%s\nthe tool gives\n%s", cmd, got, text)
		}
	}
}
