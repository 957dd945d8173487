package tools

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Budget limits of every read (SPEC section 5).
const (
	DefaultBudget = 2000
	MaxBudget     = 20000
)

// part is one item of a read: a JSON object, or a TSV row in table mode.
type part struct {
	uri    string
	text   string
	tokens int // text's own count, priced by fit
	// shrink, when set, returns a smaller text of at most maxTokens (a body
	// cut to fit), or false when nothing useful fits.
	shrink func(maxTokens int) (string, bool)
}

func newPart(uri, text string, shrink func(int) (string, bool)) part {
	return part{uri: uri, text: text, shrink: shrink}
}

// meta is the envelope around the items.
type meta struct {
	Spent       int      `json:"spent_tokens"`
	Truncated   bool     `json:"truncated"`
	Omitted     int      `json:"omitted"`
	OmittedURIs []string `json:"omitted_uris"`
	Cursor      int      `json:"cursor"`
	// Indexing says how far the build of the index has come while it
	// runs: the answer holds what it holds so far.
	Indexing string `json:"indexing,omitempty"`
}

// appendJSON appends m as encoding/json writes it (marshal), built by hand:
// an answer's envelope is written a few times over while the answer is
// fitted, with every address left out, and encoding/json's reflection was
// a sixth of a 100-row listing in ref mode. TestMetaJSONIsMarshals.
func (m meta) appendJSON(b []byte) []byte {
	b = append(b, `{"spent_tokens":`...)
	b = strconv.AppendInt(b, int64(m.Spent), 10)
	b = append(b, `,"truncated":`...)
	b = strconv.AppendBool(b, m.Truncated)
	b = append(b, `,"omitted":`...)
	b = strconv.AppendInt(b, int64(m.Omitted), 10)
	b = append(b, `,"omitted_uris":[`...)
	for i, uri := range m.OmittedURIs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, uri)
	}
	b = append(b, `],"cursor":`...)
	b = strconv.AppendInt(b, int64(m.Cursor), 10)
	if m.Indexing != "" {
		b = append(b, `,"indexing":`...)
		b = appendJSONString(b, m.Indexing)
	}
	return append(b, '}')
}

// appendJSONString appends s as a JSON string, as marshal writes it: an
// address is printable ASCII, written as it is; anything else is left to
// encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' || c == '"' || c == '\\' {
			q, _ := marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// position is the point of the board's history an answer was read at.
type position struct {
	cursor int
	// indexing is the index's build progress while it runs, "" after.
	indexing string
}

// renderer lays out the kept item texts and the envelope.
type renderer func(texts []string, m meta) string

// renderJSON is the envelope of JSON modes:
// {"items":[...],"spent_tokens":N,"truncated":B,"omitted":N,"omitted_uris":[...],"cursor":N}
func renderJSON(texts []string, m meta) string {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	b.WriteString(strings.Join(texts, ","))
	b.WriteString(`],`)
	b.Write(m.appendJSON(nil)[1:]) // the meta fields, without their opening brace
	return b.String()
}

// renderTSV is table mode: a header line, one row per note, and the envelope
// as JSON in a final line starting with #.
func renderTSV(header string) renderer {
	return func(texts []string, m meta) string {
		var b strings.Builder
		b.WriteString(header)
		b.WriteByte('\n')
		for _, t := range texts {
			b.WriteString(t)
			b.WriteByte('\n')
		}
		b.WriteString("# ")
		b.Write(m.appendJSON(nil))
		return b.String()
	}
}

// fit chooses the items that fit in budget tokens, in order, and renders the
// response. An item that does not fit is omitted and named; one that can
// shrink (a long body) is cut to the room left. extraOmitted counts matches
// left out before budgeting (over a listing's limit). The response's size in
// tokens is exact and never over budget, and spent_tokens is that size.
//
// Its cost is linear in the answer: each part is priced once, by its own
// token count, and the whole answer is counted a few times, not once an
// item. A part's price in the answer differs from its own count only where
// it joins its neighbours (a separator may merge with the characters
// around it into one token, or split them), by a token or two: joinSlack.
// Priced that way, the first choice stays within budget, and the exact size
// of the answer then decides: the room it leaves takes more of the items
// left out, and a choice priced short gives items up from the end.
func fit(budget int, parts []part, extraOmitted int, at position, render renderer) (string, error) {
	a := newAnswer(parts, extraOmitted, at, render)
	_, size := a.settle(0)
	if size > budget {
		return "", invalid("budget_tokens %d is too small to even name the %d addresses; give at least %d", budget, len(parts), size)
	}
	// named[i] is what naming parts[i] in omitted_uris costs; the room
	// left when all are named is the room for the items, less naming those
	// still to come, should none of them fit.
	named := make([]int, len(parts))
	toCome := 0
	oneNamed := a.count(`["x"]`)
	for i := range parts {
		// Counted by segments, as the answer is (count): the answer then
		// finds most of its segments counted already, its addresses above
		// all, and a listing of 100 short items counts each once.
		parts[i].tokens = a.count(parts[i].text)
		// An address is counted where it sits in the list, after
		// another: the `","` between two is one token, where the
		// address's own quotes and a comma count three. Counted alone,
		// an item left out looks 2 tokens cheaper to put back than it
		// is, and the last step (near) makes an exact count of the
		// whole answer for each such item, in vain.
		named[i] = a.count(`["x",`+strconv.Quote(parts[i].uri)+`]`) - oneNamed
		toCome += named[i]
	}
	room := budget - size
	for i, p := range parts {
		toCome -= named[i]
		room += named[i]
		avail := room - toCome
		switch {
		case p.tokens+joinSlack <= avail:
			a.keep(i, p.text, p.tokens)
		case p.shrink != nil && avail-joinSlack > minCut:
			if t, ok := p.shrink(avail - joinSlack); ok {
				a.keep(i, t, CountTokens(t))
			}
		}
		if a.chosen[i] != "" {
			room -= a.cost[i] + joinSlack
		} else {
			room -= named[i]
		}
	}
	out, size := a.settle(budget - room)
	for size > budget {
		// Priced short: give up items from the end, as many as the excess.
		excess := size - budget
		for i := len(parts) - 1; i >= 0 && excess > 0; i-- {
			if a.chosen[i] != "" {
				excess -= a.cost[i] + joinSlack - named[i]
				a.omit(i)
			}
		}
		out, size = a.settle(size)
	}
	// The exact room left takes items left out, priced; should they be
	// priced short, the last taken goes back, one at a time, and is not
	// tried again.
	tried := make([]bool, len(parts))
	for range refillRounds {
		spare := budget - size
		var taken []int
		for i, p := range parts {
			if a.chosen[i] != "" || tried[i] {
				continue
			}
			switch {
			case p.tokens+joinSlack-named[i] <= spare:
				a.keep(i, p.text, p.tokens)
			case p.shrink != nil && spare+named[i]-joinSlack > minCut:
				if t, ok := p.shrink(spare + named[i] - joinSlack); ok {
					a.keep(i, t, CountTokens(t))
				}
			}
			if a.chosen[i] != "" {
				spare -= a.cost[i] + joinSlack - named[i]
				taken = append(taken, i)
			}
		}
		if len(taken) == 0 {
			break
		}
		tryOut, trySize := a.settle(budget - spare)
		for trySize > budget {
			last := taken[len(taken)-1]
			a.omit(last)
			tried[last] = true
			taken = taken[:len(taken)-1]
			tryOut, trySize = a.settle(trySize)
		}
		out, size = tryOut, trySize
	}
	// Items priced a little over the room may fit all the same, left out
	// or cut: the cheapest few are tried whole, by exact count.
	growth := func(i int) int {
		if a.chosen[i] == "" {
			return parts[i].tokens - named[i]
		}
		return parts[i].tokens - a.cost[i]
	}
	var near []int
	for i, p := range parts {
		if a.chosen[i] != p.text && growth(i)-joinSlack <= budget-size {
			near = append(near, i)
		}
	}
	slices.SortStableFunc(near, func(i, j int) int { return cmp.Compare(growth(i), growth(j)) })
	for _, i := range near[:min(len(near), exactTries)] {
		was, wasCost, grows := a.chosen[i], a.cost[i], growth(i)
		a.keep(i, parts[i].text, parts[i].tokens)
		tryOut, trySize := a.settle(size + grows)
		if trySize <= budget {
			out, size = tryOut, trySize
			continue
		}
		a.keep(i, was, wasCost)
		if trySize > budget+2*joinSlack {
			// Missed by more than joining can make up: the items
			// after it grow at least as much by their own counts,
			// and joined, by at most joinSlack less at each end.
			break
		}
	}
	return out, nil
}

const (
	// joinSlack is what joining a part to its neighbours may add to its own
	// token count, most of the time: exact counts correct the rest.
	joinSlack = 2
	// minCut is the least room worth cutting a body to.
	minCut = 24
	// refillRounds bounds the passes that use the room an exact count
	// leaves: each costs a count of the whole answer.
	refillRounds = 3
	// exactTries bounds the items then tried one by one: on random answers
	// (TestFitProperties) nothing left out would have fitted.
	exactTries = 12
)

// answer is a read being fitted: for each part, the text chosen for it, or ""
// when it is omitted.
type answer struct {
	parts  []part
	chosen []string
	cost   []int // the tokens of chosen[i] by its own count
	extra  int
	at     position
	render renderer
	// counted holds the token counts of the answer's segments (see
	// count) already counted: an answer is counted a few times over while
	// it is fitted, and most of it is the same each time.
	counted map[string]int
	// last is the rendering countWhole counted last, cut into its segments:
	// the next rendering is most often the same up to an item put back or
	// the envelope's numbers at its end, and the segments before where it
	// first differs are taken as they were counted.
	last counting
}

// counting is a rendering cut into segments: ends[k] is where its k-th
// segment ends, and sums[k] the tokens of the segments up to there.
type counting struct {
	out  string
	ends []int
	sums []int
}

// count returns the exact number of tokens in out, a rendering of the
// answer: the sum of its segments' counts, each counted once per fit, cut
// where o200k's split into pieces always breaks (segmentEnd).
func (a *answer) count(out string) int {
	n := 0
	for start := 0; start < len(out); {
		end := segmentEnd(out, start)
		n += a.segment(out[start:end])
		start = end
	}
	return n
}

// segment is the count of one segment of the answer: as counted before in
// this fit, or in an earlier read (segmentCounts).
func (a *answer) segment(seg string) int {
	c, ok := a.counted[seg]
	if !ok {
		c = segmentCounts.count(seg)
		a.counted[seg] = c
	}
	return c
}

// countWhole is count for a rendering of the whole answer: the segments
// before the first byte where it differs from the last rendering counted
// are that one's. The cut into segments is made left to right, each end
// decided by the two bytes before it and the byte at it: up to a segment's
// end that is before the first difference, the two renderings are cut
// alike.
func (a *answer) countWhole(out string) int {
	last := &a.last
	same := commonPrefix(out, last.out)
	// The last segment end before the first difference (an end at p
	// looks at out[p]).
	k, _ := slices.BinarySearch(last.ends, same)
	k--
	start, n := 0, 0
	if k >= 0 {
		start, n = last.ends[k], last.sums[k]
	}
	ends, sums := last.ends[:k+1], last.sums[:k+1]
	for start < len(out) {
		end := segmentEnd(out, start)
		n += a.segment(out[start:end])
		ends, sums = append(ends, end), append(sums, n)
		start = end
	}
	a.last = counting{out: out, ends: ends, sums: sums}
	return n
}

// commonPrefix is how many bytes a and b begin with alike: compared a
// block at a time, then byte by byte.
func commonPrefix(a, b string) int {
	n, i := min(len(a), len(b)), 0
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// segmentCounts remembers segments' counts from one read to the next: a
// note's row is the same text in every listing and batch it is part of
// until the note changes, and agents list the same topics over and over.
// Counting was a quarter of a 100-row listing's time.
var segmentCounts = &countCache{max: 1 << 14}

// countCache is a bounded memo of CountTokens, safe for concurrent reads.
// Full, it starts again empty: what is still read comes back at once.
type countCache struct {
	mu     sync.Mutex
	max    int
	counts map[string]int
}

func (c *countCache) count(seg string) int {
	c.mu.Lock()
	n, ok := c.counts[seg]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = CountTokens(seg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil || len(c.counts) >= c.max {
		c.counts = make(map[string]int, c.max/4)
	}
	// A clone: seg is a slice of an answer, which the key would keep.
	c.counts[strings.Clone(seg)] = n
	return n
}

// segmentEnd returns where the segment of out that starts at start ends:
// at the next place past start where o200k's split into pieces breaks
// whatever comes before and after it, or at the end of out. Such a place
// is before an ASCII letter that follows two symbols (`{"uri`, `,"bb://`:
// the run of symbols holding both ends at the letter, and no piece starts
// at the second symbol, which a word may lead with, since the run took
// it), or before an ASCII letter or digit that follows a line break (a
// table's row: white space ends at its last line break, symbols take only
// line breaks and slashes after them, and no word leads with a line
// break). TestFitProperties checks the sum against a whole count.
func segmentEnd(out string, start int) int {
	// Looked at from the character before: most of an answer is letters,
	// which a look at their class alone passes by.
	for q := start + 1; q+1 < len(out); q++ {
		before := byteClass[out[q]]
		if before&(symbol|lineBreak) == 0 {
			continue
		}
		p, at := q+1, byteClass[out[q+1]]
		switch {
		case at&letter != 0 && before&symbol != 0 && byteClass[out[q-1]]&symbol != 0:
			return p
		case at&(letter|digit) != 0 && before&lineBreak != 0:
			return p
		}
	}
	return len(out)
}

// The classes of bytes segmentEnd tells apart. A symbol is an ASCII
// character that is neither a letter, a digit nor white space.
const (
	letter = 1 << iota
	digit
	symbol
	lineBreak
)

var byteClass = func() (class [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c|0x20 && c|0x20 <= 'z':
			class[c] = letter
		case '0' <= c && c <= '9':
			class[c] = digit
		case c > ' ' && c < 0x7f:
			class[c] = symbol
		case c == '\n':
			class[c] = lineBreak
		}
	}
	return class
}()

func newAnswer(parts []part, extra int, at position, render renderer) *answer {
	return &answer{parts: parts, chosen: make([]string, len(parts)), cost: make([]int, len(parts)),
		extra: extra, at: at, render: render, counted: map[string]int{}}
}

func (a *answer) keep(i int, text string, tokens int) { a.chosen[i], a.cost[i] = text, tokens }

func (a *answer) omit(i int) { a.chosen[i] = "" }

// meta describes the answer with spent_tokens set to spent.
func (a *answer) meta(spent int) ([]string, meta) {
	m := meta{Spent: spent, Omitted: a.extra, Cursor: a.at.cursor, Indexing: a.at.indexing, OmittedURIs: []string{}}
	kept := make([]string, 0, len(a.parts))
	for i, t := range a.chosen {
		if t == "" {
			m.OmittedURIs = append(m.OmittedURIs, a.parts[i].uri)
			m.Omitted++
			m.Truncated = true
			continue
		}
		kept = append(kept, t)
		if t != a.parts[i].text {
			m.Truncated = true // cut to fit
		}
	}
	return kept, m
}

func (a *answer) renderWith(spent int) string {
	kept, m := a.meta(spent)
	return a.render(kept, m)
}

// settle renders with spent_tokens equal to the response's own size, and
// returns it with that size. The number is part of what it counts: from a
// guess, render and count until it stops changing. A number's digits are
// tokens of their own, one per three, so it settles within three rounds;
// settleRounds is a guard.
func (a *answer) settle(guess int) (string, int) {
	spent := guess
	for round := 1; ; round++ {
		out := a.renderWith(spent)
		n := a.countWhole(out)
		if n == spent || round == settleRounds {
			return out, n
		}
		spent = n
	}
}

const settleRounds = 8
