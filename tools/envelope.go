package tools

import (
	"strconv"
	"strings"
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
	tokens int
	// shrink, when set, returns a smaller text of at most maxTokens (a body
	// cut to fit), or false when nothing useful fits.
	shrink func(maxTokens int) (string, bool)
}

func newPart(uri, text string, shrink func(int) (string, bool)) part {
	return part{uri: uri, text: text, tokens: CountTokens(text), shrink: shrink}
}

// meta is the envelope around the items.
type meta struct {
	Spent       int      `json:"spent_tokens"`
	Truncated   bool     `json:"truncated"`
	Omitted     int      `json:"omitted"`
	OmittedURIs []string `json:"omitted_uris"`
	Cursor      int      `json:"cursor"`
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
	mb, _ := marshal(m)
	b.Write(mb[1:]) // the meta fields, without their opening brace
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
		mb, _ := marshal(m)
		b.WriteString("# ")
		b.Write(mb)
		return b.String()
	}
}

// fit chooses the items that fit in budget tokens, in order, and renders the
// response. An item that does not fit is omitted and named; one that can
// shrink (a long body) is cut to the room left. extraOmitted counts matches
// left out before budgeting (over a listing's limit). The response's size in
// tokens is exact and never over budget, and spent_tokens is that size.
//
// A first pass prices items by their own token counts; the exact size of
// the rendered answer then decides: items are given up from the end while it
// is over budget, and omitted items are tried again while there is room.
func fit(budget int, parts []part, extraOmitted, cursor int, render renderer) (string, error) {
	a := answer{parts: parts, chosen: make([]string, len(parts)), extra: extraOmitted, cursor: cursor, render: render}
	if floor := CountTokens(a.renderWith(budget)); floor > budget {
		return "", invalid("budget_tokens %d is too small to even name the %d addresses; give at least %d", budget, len(parts), floor)
	}
	const slack = 2 // a separator may cost a token where parts join
	// naming[i] is what naming parts[i:] in omitted_uris would cost: room is
	// kept for it, should none of them fit.
	naming := make([]int, len(parts)+1)
	for i := len(parts) - 1; i >= 0; i-- {
		naming[i] = naming[i+1] + CountTokens(strconv.Quote(parts[i].uri)) + 1
	}
	room := budget - CountTokens(a.renderWith(budget)) + naming[0]
	for i, p := range parts {
		avail := room - naming[i+1]
		switch {
		case p.tokens+slack <= avail:
			a.chosen[i] = p.text
		case p.shrink != nil && avail-slack > 24:
			if t, ok := p.shrink(avail - slack); ok {
				a.chosen[i] = t
			}
		}
		if a.chosen[i] != "" {
			room -= CountTokens(a.chosen[i]) + slack
		} else {
			room -= naming[i] - naming[i+1]
		}
	}
	out := a.settle()
	for n := CountTokens(out); n > budget; n = CountTokens(out) {
		// Priced a token or two short: give up the last item kept.
		last := -1
		for i := range a.chosen {
			if a.chosen[i] != "" {
				last = i
			}
		}
		if last < 0 {
			break
		}
		a.chosen[last] = ""
		out = a.settle()
	}
	for i, p := range parts {
		// Omitted items may fit after all, exactly counted.
		if a.chosen[i] != "" {
			continue
		}
		a.chosen[i] = p.text
		if try := a.settle(); CountTokens(try) <= budget {
			out = try
			continue
		}
		a.chosen[i] = ""
		if spare := budget - CountTokens(out); p.shrink != nil && spare > 24 {
			if t, ok := p.shrink(spare - slack); ok {
				a.chosen[i] = t
				if try := a.settle(); CountTokens(try) <= budget {
					out = try
					continue
				}
				a.chosen[i] = ""
			}
		}
	}
	return a.settle(), nil
}

// answer is a read being fitted: for each part, the text chosen for it, or ""
// when it is omitted.
type answer struct {
	parts         []part
	chosen        []string
	extra, cursor int
	render        renderer
}

// meta describes the answer with spent_tokens set to spent.
func (a *answer) meta(spent int) ([]string, meta) {
	m := meta{Spent: spent, Omitted: a.extra, Cursor: a.cursor, OmittedURIs: []string{}}
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

// settle renders with spent_tokens equal to the response's own size: the
// number is part of what it counts, so iterate until it stops changing.
func (a *answer) settle() string {
	out := a.renderWith(0)
	spent := 0
	for range 4 {
		n := CountTokens(out)
		if n == spent {
			break
		}
		spent = n
		out = a.renderWith(spent)
	}
	return out
}
