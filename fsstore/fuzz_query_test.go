package fsstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// FuzzSearchQuery: whatever a model types as a query, search_keys answers
// (Search's contract: a query FTS5 would reject is searched as words, never
// an error). Each input runs through a real workspace's Search, on its
// SQLite FTS5 index; a topic that is not a topic is the only error, and it
// is ErrInvalid. (index.FuzzParseQuery checks the query syntax built.)
func FuzzSearchQuery(f *testing.F) {
	for _, q := range []string{
		"deploy-v2.4.7-hotfix", "ERR_CONN_RESET", "cache_test.go", `"cache latency"`, "cache*", "lat*ency*", "*", "**", "-", "^x",
		"AND", "a OR b", "NOT x", "a AND", "NEAR(a b, 2)", "col:x", "ids : x", "digest:cache", "{addr digest}:x", "(x", "x)",
		`"unbalanced`, `"a""b"`, `""`, `" "`, `"`, "'", "a'b", "\x00", "canary\x00*", "deploy\x00notes", `"a` + "\x00" + `b"`,
		"\t\n\r", "🙂", "Ünïcödé", "Kelvin \u212a", "x*y*", "+x", "a:b:c", "a/b/c", "bb://acme/ops/deploys/hotfix",
		"../../etc/passwd", "%2e%2e", strings.Repeat("a ", 40), strings.Repeat(`"`, 101), strings.Repeat("x", 2000),
		"\xff\xfe", "SELECT * FROM notes; --", "') OR 1=1 --", "rank:bm25", "x NEAR y", "a^b", "a-b-", "-a-b", ".a.b.",
	} {
		f.Add(q, "")
	}
	for _, topic := range []string{"ops", "research/net", "../x", "con", "t\x00", "ops/", "/ops", "OPS/DEPLOYS"} {
		f.Add("cache", topic)
	}
	w := newWorkspace(f, false)
	notes := []struct{ uri, digest, body string }{
		{"ops/deploys/hotfix", "Rollback plan for the cache regression", "We shipped deploy-v2.4.7-hotfix on Monday; see cache_test.go."},
		{"ops/deploys/history", "Deploy history", "v2 went out in March. A hotfix is planned. \"quoted\" AND NEAR(x y) * ^ -"},
		{"research/net/errors", "Connection resets under load", "Clients see ERR_CONN_RESET when the proxy recycles connections."},
		{"research/cache/latency", "Cache hit rate fell to 71%", "The LRU is undersized for the working set. Ünïcödé 🙂"},
		{"research/cache/old", "Superseded cache note", "cache latency, the old view"},
	}
	for _, n := range notes {
		put(f, w, n.uri, 0, n.digest, n.body)
	}
	if _, err := agentView(w).Link("research/cache/latency", "supersedes", []string{"research/cache/old"}); err != nil {
		f.Fatal(err)
	}
	present := map[string]bool{"bb://acme/run/state/current": true}
	for _, n := range notes {
		present["bb://acme/"+n.uri] = true
	}

	f.Fuzz(func(t *testing.T, q, topic string) {
		hits, cursor, err := agentView(w).Search(q, topic, 10)
		if err != nil {
			if topic != "" && errors.Is(err, ErrInvalid) {
				return
			}
			t.Fatalf("Search(%q, topic %q): %v", q, topic, err)
		}
		if cursor < 1 || len(hits) > 10 {
			t.Fatalf("Search(%q): cursor %d, %d hits", q, cursor, len(hits))
		}
		scope := ""
		if segs, err := note.ParseTopic(topic, "acme"); err == nil && segs != nil {
			scope = strings.Join(segs, "/")
		}
		for _, h := range hits {
			if !present[h.URI] {
				t.Fatalf("Search(%q) found %q, which is not a note of the board", q, h.URI)
			}
			if key := strings.TrimPrefix(h.URI, "bb://acme/"); scope != "" && key != scope && !strings.HasPrefix(key, scope+"/") {
				t.Fatalf("Search(%q, topic %q) found %q, outside the topic", q, topic, h.URI)
			}
		}
	})
}
