package index

import (
	"math/rand/v2"
	"slices"
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

// newestMatching counts as matching does, and lists the newest matches
// as a query ordered by row does: on a random full-text index, for words,
// phrases and prefixes, at limits below, at and above the matches.
func TestNewestMatchingAgreesWithCountAndOrder(t *testing.T) {
	d := openTestIndex(t)
	rng := rand.New(rand.NewPCG(5, 11))
	words := strings.Fields("blik drom fasp gunt hwir jolk kramp lurt mesk nolt")
	err := d.Update(func(x *Tx) error {
		for id := range 400 {
			var text []string
			for range 3 + rng.IntN(8) {
				text = append(text, words[rng.IntN(len(words))])
			}
			if _, err := x.exec("INSERT INTO fts(rowid, addr, digest, body, fields, ids, echo) VALUES(?, '', '', ?, '', '', '')",
				1+id*(1+rng.IntN(3)), strings.Join(text, " ")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = d.Read(func(s *Snapshot) error {
		for trial := range 60 {
			var match string
			switch trial % 3 {
			case 0:
				match = ftsString(words[rng.IntN(len(words))])
			case 1:
				match = ftsString(words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))])
			default:
				match = ftsString(words[rng.IntN(len(words))][:2]) + " *"
			}
			var all []int64
			rows, err := s.q.Query("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC", match)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					return err
				}
				all = append(all, id)
			}
			if err := rows.Close(); err != nil {
				return err
			}
			for _, most := range []int{0, 5, len(all) - 1, len(all), len(all) + 3} {
				if most < 0 {
					continue
				}
				newest, err := s.newestMatching(match, most)
				if err != nil {
					return err
				}
				counted, err := s.matching(match, most)
				if err != nil {
					return err
				}
				want := all[:min(len(all), most+1)]
				if len(newest) != counted || !slices.Equal(newest, want) {
					t.Errorf("%s, most %d: newestMatching %v (%d), matching %d; want %v", match, most, newest, len(newest), counted, want)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
