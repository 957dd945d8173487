package tools

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// TestTableRowsFromSummaries: a table of summary fields is made from the
// index alone; each row is the row the note's file gives, for every subset
// of those fields, on notes of every kind, linked or not.
func TestTableRowsFromSummaries(t *testing.T) {
	_, ws := newTestServer(t)
	v := ws.As(fsstore.OpenCaller("tester"))
	var uris []string
	for i := range 12 {
		body := fmt.Sprintf("Finding %d: the cache hit rate fell.", i)
		req := fsstore.UpdateRequest{URI: fmt.Sprintf("bb://acme/ops/n%d", i), Digest: fmt.Sprintf("Finding %d\twith a tab", i), Body: &body}
		if i%4 == 1 {
			req.Kind = "decision"
		}
		if i%3 == 0 {
			req.Body, req.Columns, req.Rows = nil, []string{"region", "p99"}, [][]string{{"eu-west", "120"}}
		}
		res, err := v.Update(req)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, res.URI)
	}
	for i, rel := range []string{"supersedes", "contradicts", "derived_from", "supersedes"} {
		if _, err := v.Link(uris[i+4], rel, []string{uris[i]}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for f := range summaryFields {
		names = append(names, f)
	}
	slices.Sort(names)
	rng := rand.New(rand.NewPCG(26, 9))
	sums, _, err := v.Summaries(uris)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		fields := slices.Clone(names)
		rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
		fields = fields[:rng.IntN(len(fields)+1)]
		for _, r := range sums {
			n, err := v.Get(r.URI, false)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := tableRow(summaryView(r.Summary), fields).text, tableRow(n, fields).text; got != want {
				t.Fatalf("fields %q: the row from the summary is\n%q\nfrom the note\n%q", fields, got, want)
			}
		}
	}
}
