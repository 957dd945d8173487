package tools

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// words are what random parts are made of: English, identifiers, numbers,
// punctuation that merges with the separators, and text in other scripts.
var words = []string{"the", "cache", "p99", "rose", "after", "deploy", "v1.10.19", "eu-west-1", "—", "::", "}", "{",
	`"`, `\`, "/", "//", "bb://acme/ops/x", "Überprüfung", "数据库", "🙂", " ", "  ", "\t", "\n", "0", "1234567",
	"latency", "rollback", "hit-rate", "fell", "when", "traffic", "ramped", "up", "(", ")", "[superseded_by", "]"}

// randomText is a text of up to n words.
func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range rng.IntN(n + 1) {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(3) > 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// randomParts makes n parts of one mode: JSON items, or table rows (one line
// each, as tsvCell keeps them). Some JSON items can shrink, as a full body can.
func randomParts(rng *rand.Rand, n int, table bool) []part {
	parts := make([]part, n)
	for i := range parts {
		uri := fmt.Sprintf("bb://acme/%s/n%d", []string{"ops", "decisions", "incidents"}[rng.IntN(3)], i)
		if table {
			parts[i] = newPart(uri, tsvCell(uri)+"\t"+strconv.Itoa(rng.IntN(200))+"\t"+tsvCell(randomText(rng, 30)), nil)
			continue
		}
		head := orderedItem{}
		head.add("uri", uri)
		head.add("version", rng.IntN(200))
		head.add("digest", randomText(rng, 12))
		if rng.IntN(4) > 0 {
			parts[i] = newPart(uri, head.json(), nil)
			continue
		}
		body := randomText(rng, 400)
		item := orderedItem{keys: append([]string(nil), head.keys...), vals: append([]any(nil), head.vals...)}
		item.add("body", body)
		parts[i] = newPart(uri, item.json(), func(maxTokens int) (string, bool) { return cutBody(head, body, maxTokens) })
	}
	return parts
}

// TestFitProperties fits thousands of random answers into random budgets:
// the answer is never over budget, spent_tokens is its exact size, items
// keep their order, every item left out is named, and none of them would
// have fitted. BLACKBOARD_FIT_CASES sets how many answers.
func TestFitProperties(t *testing.T) {
	cases := 1000 // checking that nothing left out fits is quadratic
	if n, err := strconv.Atoi(os.Getenv("BLACKBOARD_FIT_CASES")); err == nil {
		cases = n
	} else if testing.Short() {
		cases = 150
	}
	rng := rand.New(rand.NewPCG(26, 1))
	for c := range cases {
		table := rng.IntN(2) == 0
		parts := randomParts(rng, rng.IntN(120), table)
		budget := 20 + rng.IntN(3000)
		if rng.IntN(10) == 0 {
			budget = MaxBudget
		}
		extra, cursor := rng.IntN(3), rng.IntN(100000)
		render := renderJSON
		if table {
			render = renderTSV("uri\tversion\tdigest")
		}
		out, err := fit(budget, parts, extra, position{cursor: cursor}, render)
		if err != nil {
			if !strings.Contains(err.Error(), "too small") {
				t.Fatalf("case %d: %v", c, err)
			}
			continue
		}
		checkFitted(t, c, out, parts, table, budget, extra, cursor)
	}
}

// checkFitted checks one fitted answer against the properties of
// TestFitProperties.
func checkFitted(t *testing.T, c int, out string, parts []part, table bool, budget, extra, cursor int) {
	t.Helper()
	size := CountTokens(out)
	var m meta
	var kept []string
	if table {
		lines := strings.Split(out, "\n")
		last := lines[len(lines)-1]
		if err := json.Unmarshal([]byte(strings.TrimPrefix(last, "# ")), &m); err != nil {
			t.Fatalf("case %d: envelope line %q: %v", c, last, err)
		}
		kept = lines[1 : len(lines)-1]
	} else {
		var env struct {
			Items []json.RawMessage `json:"items"`
			meta
		}
		if err := json.Unmarshal([]byte(out), &env); err != nil {
			t.Fatalf("case %d: answer is not JSON: %v\n%s", c, err, out)
		}
		m = env.meta
		for _, it := range env.Items {
			kept = append(kept, string(it))
		}
	}
	if size > budget || m.Spent != size {
		t.Fatalf("case %d: answer of %d tokens says spent_tokens %d, budget %d", c, size, m.Spent, budget)
	}
	if m.Omitted != len(m.OmittedURIs)+extra || len(kept)+len(m.OmittedURIs) != len(parts) {
		t.Fatalf("case %d: %d parts, %d kept, %d named, omitted %d (extra %d)", c, len(parts), len(kept), len(m.OmittedURIs), m.Omitted, extra)
	}
	// Kept and named items are the parts in order; a kept item is the part
	// or a cut of it.
	k, o := 0, 0
	chosen := make([]string, len(parts))
	for i, p := range parts {
		isKept := k < len(kept) && (kept[k] == p.text || p.shrink != nil && strings.HasPrefix(kept[k], `{"uri":`+strconv.Quote(p.uri)+","))
		if !isKept && o < len(m.OmittedURIs) && m.OmittedURIs[o] == p.uri {
			o++
			continue
		}
		if !isKept {
			t.Fatalf("case %d: part %s is neither kept nor named", c, p.uri)
		}
		if kept[k] != p.text && !m.Truncated {
			t.Fatalf("case %d: a cut item without truncated", c)
		}
		chosen[i] = kept[k]
		k++
	}
	if o != len(m.OmittedURIs) {
		t.Fatalf("case %d: omitted_uris %q are not the parts left out, in order", c, m.OmittedURIs)
	}
	// Nothing left out would have fitted: each is put back in turn and the
	// answer counted.
	checkNothingFits(t, c, chosen, parts, table, budget, size, extra, cursor)
}

// checkNothingFits fails if a part left out of the answer, or cut, would
// have fitted whole in budget, counted exactly. chosen is the text of each
// part in the answer, "" if it was left out.
func checkNothingFits(t *testing.T, c int, chosen []string, parts []part, table bool, budget, size, extra, cursor int) {
	t.Helper()
	render := renderJSON
	if table {
		render = renderTSV("uri\tversion\tdigest")
	}
	a := newAnswer(parts, extra, position{cursor: cursor}, render)
	copy(a.chosen, chosen)
	for i, p := range parts {
		if chosen[i] == p.text {
			continue
		}
		a.keep(i, p.text, p.tokens)
		if out, _ := a.settle(0); CountTokens(out) <= budget {
			t.Errorf("case %d: %s (%d tokens) was left out or cut, yet the answer is %d tokens with it whole, within %d (%d without)", c, p.uri, p.tokens, CountTokens(out), budget, size)
		}
		a.keep(i, chosen[i], 0)
	}
}

// BenchmarkFit fits listings of 100 rows (the largest a catch-up asks for)
// into the default budget, which holds a few dozen of them.
func BenchmarkFit(b *testing.B) {
	for _, mode := range []string{"table", "json"} {
		b.Run(mode, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(26, 2))
			parts := randomParts(rng, 100, mode == "table")
			render := renderJSON
			if mode == "table" {
				render = renderTSV("uri\tversion\tdigest")
			}
			for b.Loop() {
				if _, err := fit(DefaultBudget, parts, 0, position{cursor: 1}, render); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// 100 references whose answer ends a few tokens short of the budget:
	// the fit then tries the items left out one by one, by exact counts of
	// the whole answer.
	b.Run("ref", func(b *testing.B) {
		var parts []part
		for i := range 100 {
			uri := fmt.Sprintf("bb://board/incidents/a-%d/k-%d", i%7, i)
			parts = append(parts, newPart(uri, fmt.Sprintf(`{"uri":%q,"version":%d}`, uri, i%9+1), nil))
		}
		for b.Loop() {
			if _, err := fit(DefaultBudget, parts, 8234, position{cursor: 104901}, renderJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("count-8KB", func(b *testing.B) {
		text := strings.Repeat(randomText(rand.New(rand.NewPCG(26, 3)), 2000), 4)[:8000]
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			CountTokens(text)
		}
	})
}

// TestCountBySegments: an answer counted by segments (answer.count) is the
// count of the whole, on random renderings of both envelopes whose items
// hold every kind of character at the places segments are cut (symbols
// before letters, line breaks before rows, quotes escaped and not).
func TestCountBySegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 11))
	for c := range 3000 {
		table := rng.IntN(2) == 0
		parts := randomParts(rng, rng.IntN(40), table)
		for i := range parts {
			if rng.IntN(3) == 0 { // raw text, not JSON: lines, symbols, spaces
				parts[i].text = randomText(rng, 40)
			}
		}
		render := renderJSON
		if table {
			render = renderTSV(randomText(rng, 5))
		}
		a := newAnswer(parts, rng.IntN(3), position{cursor: rng.IntN(100000)}, render)
		for i := range parts {
			if rng.IntN(2) == 0 {
				a.keep(i, parts[i].text, 0)
			}
		}
		for range 2 { // the second count reads the remembered segments
			out := a.renderWith(rng.IntN(5000))
			if got, want := a.count(out), CountTokens(out); got != want {
				t.Fatalf("case %d: counted by segments %d, whole %d:\n%q", c, got, want, out)
			}
		}
	}
}

// TestCountCacheIsBoundedAndExact fills the cache of segments' counts past
// its bound, from several goroutines: it never holds more than its bound,
// and every count it gives is CountTokens'.
func TestCountCacheIsBoundedAndExact(t *testing.T) {
	c := &countCache{max: 64}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				seg := fmt.Sprintf(`{"uri":"bb://b/t/k-%d","digest":"row %d of %d, said twice"}`, i%97, i, g)
				if got, want := c.count(seg), CountTokens(seg); got != want {
					t.Errorf("%q: %d, want %d", seg, got, want)
				}
			}
		})
	}
	wg.Wait()
	if len(c.counts) > c.max {
		t.Errorf("the cache holds %d segments, more than its bound %d", len(c.counts), c.max)
	}
}

// TestCountWholeAgreesWithCount: an answer counted from the last rendering's
// segments (countWhole) is its count from the start, on random renderings
// that follow one another as a fit makes them: an item put back or left
// out anywhere, a number changed at the end, the same rendering again.
func TestCountWholeAgreesWithCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 12))
	for c := range 300 {
		table := rng.IntN(2) == 0
		parts := randomParts(rng, 1+rng.IntN(30), table)
		render := renderJSON
		if table {
			render = renderTSV("uri\tversion\tdigest")
		}
		a := newAnswer(parts, rng.IntN(3), position{cursor: 1}, render)
		for i := range parts {
			if rng.IntN(2) == 0 {
				a.keep(i, parts[i].text, 0)
			}
		}
		for step := range 20 {
			switch i := rng.IntN(len(parts)); rng.IntN(3) {
			case 0:
				a.keep(i, parts[i].text, 0)
			case 1:
				a.omit(i)
			}
			out := a.renderWith(rng.IntN(3000))
			if got, want := a.countWhole(out), CountTokens(out); got != want {
				t.Fatalf("case %d step %d: countWhole %d, CountTokens %d, of\n%s", c, step, got, want, out)
			}
		}
	}
}

// TestMetaJSONIsMarshals: the envelope written by hand is encoding/json's,
// on random envelopes whose addresses and build progress hold every kind of
// character (quotes, backslashes, control characters, other scripts,
// U+2028, invalid UTF-8).
func TestMetaJSONIsMarshals(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 13))
	odd := []string{`"`, `\`, "\n", "\t", "\x01", "\x7f", "<&>", "Überprüfung", "数据库", "\u2028", "\xff", "🙂", "bb://acme/ops/x", "/", " "}
	text := func() string {
		var b strings.Builder
		for range rng.IntN(4) {
			b.WriteString(odd[rng.IntN(len(odd))])
		}
		return b.String()
	}
	for range 2000 {
		m := meta{Spent: rng.IntN(20001), Truncated: rng.IntN(2) == 0, Omitted: rng.IntN(500), Cursor: rng.IntN(1 << 20), OmittedURIs: []string{}}
		for range rng.IntN(5) {
			m.OmittedURIs = append(m.OmittedURIs, "bb://acme/"+text())
		}
		if rng.IntN(3) == 0 {
			m.Indexing = text()
		}
		want, err := marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.appendJSON(nil); string(got) != string(want) {
			t.Fatalf("by hand %s\nmarshal %s", got, want)
		}
	}
}
