package index

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzParseQuery: whatever a model types, ParseQuery makes at most
// MaxQueryTerms terms, none empty or holding a control character, and the
// FTS5 expression built from them has balanced quotes: nothing a user types
// is FTS5 syntax.
func FuzzParseQuery(f *testing.F) {
	for _, q := range []string{
		"deploy-v2.4.7-hotfix", "ERR_CONN_RESET", `"cache latency"`, "cache*", "lat*ency*", "*", "-", "^x",
		"AND", "a OR b", "NEAR(a b, 2)", "col:x", "ids : x", `"unbalanced`, `"a""b"`, `""`, `"`, "'",
		"\x00", "canary\x00*", "\t\n\r", "🙂", strings.Repeat("a ", 40), strings.Repeat(`"`, 101),
		"') OR 1=1 --", "a-b-", ".a.b.",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms := ParseQuery(q)
		if len(terms) > MaxQueryTerms {
			t.Fatalf("ParseQuery(%q) = %d terms, over %d", q, len(terms), MaxQueryTerms)
		}
		for _, term := range terms {
			if term.Text == "" || strings.IndexFunc(term.Text, unicode.IsControl) >= 0 {
				t.Fatalf("ParseQuery(%q): term %q is empty or holds a control character", q, term.Text)
			}
			if expr := term.match(); strings.Count(expr, `"`)%2 != 0 {
				t.Fatalf("term %q of %q matches as %q: unbalanced quotes", term.Text, q, expr)
			}
		}
	})
}
