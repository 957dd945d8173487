package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// A collection small enough to score by hand: each question's word is in
// its judged documents alone, so search finds them first, and the figures
// are known.
func TestSearchScoresACollection(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	files := map[string]string{
		"tiny.all.4": ".I 1\n.T\nxylophage in swept wings .\n.W\nthe xylophage of swept wings at transonic speed .\n" +
			".I 2\n.T\nboundary layer transition .\n.W\nthe boundary layer on a flat plate .\n" +
			".I 3\n.T\nheat transfer in hypersonic flow .\n.W\nablation of a blunt body .\n" +
			".I 4\n.T\nwing flutter and its control .\n.W\nflutter suppression, and a xylophage .\n",
		"tiny.qry": ".I 001\n.W\nxylophage\n.I 002\n.W\nablation\n",
		// Question 1: documents 1 and 4, alike (gain 3), and 2 judged of no
		// interest; question 2: document 3 (gain 4). Each question's word is
		// in its documents alone.
		"tinyqrel": "1 1 2\n1 4 2\n1 2 -1\n2 3 1\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := runBinary(t, benchBinary, "search", dir, "--server", mcpBinary, "--beside", mcpBinary, "--limit", "2", "--cues")
	if !regexp.MustCompile(`search collection=tiny documents=4 questions=2 judged=2 cut=2`).MatchString(out) {
		t.Fatalf("search printed:\n%s", out)
	}
	rows := regexp.MustCompile(`(?m)^\S+blackboard-mcp\s+-\s+([0-9.]+)\s+([0-9.]+)\s+\S+ms\s+\S+ms$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("search printed %d rows of builds, want 2:\n%s", len(rows), out)
	}
	// Then --server again with each cue off in turn, each once, and with
	// every cue off.
	for _, cue := range append(slices.Clone(fsstore.SearchCues), "every cue") {
		if n := len(regexp.MustCompile(`(?m)^\S+blackboard-mcp\s+`+cue+`\s+[0-9.]+\s+[0-9.]+\s`).FindAllString(out, -1)); n != 1 {
			t.Errorf("the row with %s off is there %d times:\n%s", cue, n, out)
		}
	}
	// Both questions find all they can within the cut, in the best order:
	// nDCG 1 and recall 1 each.
	for _, r := range rows {
		ndcg, _ := strconv.ParseFloat(r[1], 64)
		recall, _ := strconv.ParseFloat(r[2], 64)
		if ndcg != 1 || recall != 1 {
			t.Errorf("nDCG %v, recall %v; want 1 and 1:\n%s", ndcg, recall, out)
		}
	}
}

// scoreAnswer against figures worked out by hand.
func TestScoreAnswer(t *testing.T) {
	grades := map[string]int{"1": 4, "4": 1, "2": 0, "7": 3}
	for _, c := range []struct {
		found        []string
		cut          int
		ndcg, recall float64
	}{
		{[]string{"1", "7", "4"}, 3, 1, 1},
		{[]string{"4", "2", "1"}, 3, (1 + 4/2.0) / (4 + 3/math.Log2(3) + 1/2.0), 2 / 3.0},
		{[]string{"2", "9"}, 2, 0, 0},
		{[]string{"7", "1", "4"}, 2, (3 + 4/math.Log2(3)) / (4 + 3/math.Log2(3)), 2 / 3.0},
	} {
		ndcg, recall := scoreAnswer(c.found, grades, c.cut)
		if math.Abs(ndcg-c.ndcg) > 1e-9 || math.Abs(recall-c.recall) > 1e-9 {
			t.Errorf("%v at %d: nDCG %v recall %v; want %v and %v", c.found, c.cut, ndcg, recall, c.ndcg, c.recall)
		}
	}
}
