package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// Regression tests for faults the end-to-end suite found: each checks a
// promise of SPEC section 5 that the product once broke, and says what broke
// if it breaks again.

// TestMCPSupersededInEveryMode checks SPEC section 5: a superseded note says
// so in every read mode but ref, including fields with named fields and
// table.
func TestMCPSupersededInEveryMode(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "linker")
	s.write(map[string]any{"uri": "research/old", "digest": "Old", "body": "x", "expect_version": 0})
	s.write(map[string]any{"uri": "research/new", "digest": "New", "body": "x", "expect_version": 0})
	s.link("research/new", "supersedes", "research/old")
	successor := uri("research/new")
	var missing []string
	if it := s.get([]string{"research/old"}, "fields", 0, "kind").Items[0]; !slices.Equal(it.SupersededBy, []string{successor}) {
		missing = append(missing, "mode=fields with fields=[kind] has no superseded_by (item keys "+strings.Join(it.keys, ",")+")")
	}
	text := s.ok("get_state", map[string]any{"uris": []string{"research/old"}, "mode": "table", "fields": []string{"kind"}})
	if _, rows, _ := parseTable(t, text, 2000); len(rows) != 1 || !strings.Contains(strings.Join(rows[0], "\t"), successor) {
		missing = append(missing, "mode=table does not name the successor: "+strings.Join(rows[0], " | "))
	}
	s.closeClean()
	if len(missing) > 0 {
		t.Error("regression: tools/get_state.go readPart adds superseded_by/contradicted_by only in mode=fields without " +
			"fields (and never in table): " + strings.Join(missing, "; "))
	}
}

// TestMCPSearchNULQuery: a query FTS5 would reject is searched as words and
// never fails for its syntax (fsstore.Search's contract); a NUL byte in the
// query is valid JSON (\u0000) that a model can send.
func TestMCPSearchNULQuery(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "searcher")
	s.write(map[string]any{"uri": "ops/deploy", "digest": "Deploy notes", "body": "deploy x", "expect_version": 0})
	var broken []string
	for _, q := range []string{"x\x00", "deploy\x00notes", `"a` + "\x00" + `b"`, "ab\x00*"} {
		res, err := s.callTool(t.Context(), "search_keys", map[string]any{"q": q})
		if err != nil {
			t.Fatal(err)
		}
		if res.isError {
			broken = append(broken, fmt.Sprintf("%q -> %s", q, res.text))
			continue
		}
		parseEnvelope(t, res.text, 2000)
	}
	s.closeClean()
	if len(broken) > 0 {
		t.Errorf("regression: fsstore/search.go parseQuery/ftsString pass a NUL byte into the FTS5 query, which SQLite "+
			"reads as the end of the string (server log: SQL logic error: unterminated string): %s",
			strings.Join(broken, "; "))
	}
}

// TestMCPDigestControlCharacters: a digest is one line of text and becomes
// the subject of the commit people read in git log (SPEC sections 3 and 4).
// A NUL byte in it must not break the repository's history.
func TestMCPDigestControlCharacters(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "writer")
	res := s.call("update_state", map[string]any{"uri": "ops/zero-byte", "digest": "before\x00after", "body": "x", "expect_version": 0})
	s.closeClean()
	if res.isError {
		if !strings.HasPrefix(res.text, "invalid: bb://acme/ops/zero-byte: ") {
			t.Errorf("a digest with a NUL byte: %q; want invalid or a clean commit", res.text)
		}
		return
	}
	subject := strings.TrimSpace(fixtures.GitOutput(t, dir, "log", "-1", "--format=%s"))
	fsck, err := fixtures.GitCmd(dir, "fsck", "--strict", "--no-progress").CombinedOutput()
	checkWorkspace(t, dir)
	if err != nil || !strings.Contains(subject, "after") {
		t.Errorf("regression: fsstore/write.go cleanDigest accepts control characters: the digest %q was committed with a NUL "+
			"byte in the message (subject shown by git log: %q; git fsck --strict: %v %s)",
			"before\x00after", subject, err, strings.TrimSpace(string(fsck)))
	}
}

// TestMCPBudgetExactFit: items that fit are not omitted (SPEC section 5):
// with budget_tokens equal to the size of the complete answer, nothing is
// left out.
func TestMCPBudgetExactFit(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "reader")
	uris := seedNotes(s, "bulk", 20)
	var short []string
	for _, n := range []int{1, 5, 20} {
		for _, mode := range []string{"digest", "full"} {
			full := s.get(uris[:n], mode, 20000)
			exact := s.get(uris[:n], mode, full.Spent)
			if exact.Truncated || len(exact.Items) != n {
				least := full.Spent
				for b := full.Spent + 1; b < full.Spent+300; b++ {
					if e := s.get(uris[:n], mode, b); !e.Truncated {
						least = b
						break
					}
				}
				short = append(short, fmt.Sprintf("%d notes in mode %s: the answer is %d tokens, budget %d keeps %d items, the least budget that keeps all is %d",
					n, mode, full.Spent, full.Spent, len(exact.Items), least))
			}
		}
	}
	s.closeClean()
	if len(short) > 0 {
		t.Errorf("regression: tools/envelope.go fit omits items that fit: it prices each item with a 2-token slack and the "+
			"envelope with spent_tokens=budget, and never re-tries omitted items against the exact size: %s", strings.Join(short, "; "))
	}
}
