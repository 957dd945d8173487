package web

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// graph draws a note's neighbourhood as an SVG, on the server, so that it
// shows without JavaScript: the note in the middle, the notes it links to
// on the right, the notes linking to it on the left, each edge named by its
// relation; contradicts and supersedes stand out. Every label is escaped.
func graph(center string, out, in []fsstore.Link) template.HTML {
	if len(out)+len(in) == 0 {
		return ""
	}
	const w, rowH, top, gap = 960.0, 52.0, 24.0, 105.0
	rows := max(len(out), len(in), 1)
	h := top*2 + rowH*float64(rows-1)
	mid := h / 2
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="graph" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="links of %s">`,
		w, h, w, h, template.HTMLEscapeString(center))
	node := func(x, y float64, uri, class string) {
		key := shortOf(uri)
		fmt.Fprintf(&b, `<a href="/n/%s"><text x="%.0f" y="%.0f" class="%s">%s</text></a>`,
			template.HTMLEscapeString(key), x, y, class, template.HTMLEscapeString(truncate(key, 34)))
	}
	edge := func(x1, y1, x2, y2 float64, rel string) {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="rel-%s"/>`, x1, y1, x2, y2, template.HTMLEscapeString(rel))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="rel rel-%s">%s</text>`, (x1+x2)/2, (y1+y2)/2-4,
			template.HTMLEscapeString(rel), template.HTMLEscapeString(rel))
	}
	side := func(links []fsstore.Link, x float64, peer func(fsstore.Link) string) {
		links = slices.Clone(links)
		slices.SortFunc(links, func(a, b fsstore.Link) int { return strings.Compare(a.Rel+peer(a), b.Rel+peer(b)) })
		for i, l := range links {
			y := top + rowH*float64(i) + (h-2*top-rowH*float64(len(links)-1))/2
			if x < w/2 {
				edge(x+gap, y, w/2-gap, mid, l.Rel)
			} else {
				edge(w/2+gap, mid, x-gap, y, l.Rel)
			}
			node(x, y+4, peer(l), "peer")
		}
	}
	side(in, 120, func(l fsstore.Link) string { return l.Src })
	side(out, w-120, func(l fsstore.Link) string { return l.Dst })
	node(w/2, mid+4, center, "center")
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built above from escaped labels and numbers
}

// shortOf is an address's short form: topic/key, without bb://board/.
func shortOf(uri string) string {
	_, key, _ := strings.Cut(strings.TrimPrefix(uri, "bb://"), "/")
	return key
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
