package main

import (
	"encoding/json"
	"reflect"
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
