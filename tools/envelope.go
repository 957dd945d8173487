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
func fit(budget int, parts []part, extraOmitted, cursor int, render renderer) (string, error) {
	base := meta{Omitted: extraOmitted, Cursor: cursor, OmittedURIs: []string{}}
	// What the envelope costs with every item omitted: the least any answer
	// needs. A budget below it cannot be honoured honestly.
	worst := base
	for _, p := range parts {
		worst.OmittedURIs = append(worst.OmittedURIs, p.uri)
	}
	worst.Omitted += len(parts)
	worst.Truncated, worst.Spent = len(parts) > 0, budget
	floor := CountTokens(render(nil, worst))
	if floor > budget {
		return "", invalid("budget_tokens %d is too small to even name the %d addresses; give at least %d", budget, len(parts), floor)
	}
	kept := make([]string, 0, len(parts))
	m := base
	m.Spent = budget
	room := budget - CountTokens(render(nil, m))
	const slack = 2 // a separator may cost a token where parts join
	// naming[i] is what naming parts[i:] in omitted_uris would cost: room is
	// kept for it, should none of them fit.
	naming := make([]int, len(parts)+1)
	for i := len(parts) - 1; i >= 0; i-- {
		naming[i] = naming[i+1] + CountTokens(strconv.Quote(parts[i].uri)) + 1
	}
	for i, p := range parts {
		reserve := naming[i+1]
		cost := p.tokens + slack
		switch {
		case cost <= room-reserve:
			kept = append(kept, p.text)
			room -= cost
		case p.shrink != nil && room-reserve-slack > 24:
			if t, ok := p.shrink(room - reserve - slack); ok {
				kept = append(kept, t)
				room -= CountTokens(t) + slack
				m.Truncated = true
				continue
			}
			fallthrough
		default:
			m.OmittedURIs = append(m.OmittedURIs, p.uri)
			m.Omitted++
			m.Truncated = true
			room -= naming[i] - naming[i+1]
		}
	}
	for {
		out := settle(kept, m, render)
		if CountTokens(out) <= budget || len(kept) == 0 {
			return out, nil
		}
		// The estimate was a token or two short: give up the last item.
		last := len(kept) - 1
		kept = kept[:last]
		m.OmittedURIs = append(m.OmittedURIs, lastKeptURI(parts, kept, m))
		m.Omitted++
		m.Truncated = true
	}
}

// lastKeptURI names the item just dropped: the parts not omitted, in order.
func lastKeptURI(parts []part, kept []string, m meta) string {
	omitted := map[string]int{}
	for _, u := range m.OmittedURIs {
		omitted[u]++
	}
	n := 0
	for _, p := range parts {
		if omitted[p.uri] > 0 {
			omitted[p.uri]--
			continue
		}
		if n == len(kept) {
			return p.uri
		}
		n++
	}
	return ""
}

// settle renders with spent_tokens equal to the response's own size: the
// number is part of what it counts, so iterate until it stops changing.
func settle(kept []string, m meta, render renderer) string {
	m.Spent = 0
	out := render(kept, m)
	for range 4 {
		n := CountTokens(out)
		if n == m.Spent {
			break
		}
		m.Spent = n
		out = render(kept, m)
	}
	return out
}
