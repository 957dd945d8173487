package linemerge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name                 string
		base, branch, person string
		want                 string // "" with ok false: a conflict
	}{
		{"both appended: the branch's line, then the person's",
			"start\n", "start\na1\n", "start\np1\n", "start\na1\np1\n"},
		{"the person changed another line than the agents",
			"one\ntwo\nthree\n", "one\ntwo\nthree\na1\na2\n", "one\ntwo edited\nthree\n", "one\ntwo edited\nthree\na1\na2\n"},
		{"both made the same change: once",
			"x\n", "x\ny\n", "x\ny\n", "x\ny\n"},
		{"only the person changed", "a\nb\n", "a\nb\n", "a\nB\n", "a\nB\n"},
		{"only the branch changed", "a\nb\n", "a\nB\n", "a\nb\n", "a\nB\n"},
		{"both inserted in the middle",
			"a\nz\n", "a\nm1\nz\n", "a\np1\nz\n", "a\nm1\np1\nz\n"},
		{"the front matter moved on, the person appended",
			"---\ndigest: d\nupdated: 1\n---\nstart\n",
			"---\ndigest: d\nupdated: 2\n---\nstart\na1\n",
			"---\ndigest: d\nupdated: 1\n---\nstart\np1\n",
			"---\ndigest: d\nupdated: 2\n---\nstart\na1\np1\n"},
		{"the same line changed differently", "status: draft\n", "status: review\n", "status: done\n", ""},
		{"a line one side removed and the other changed", "a\nb\nc\n", "a\nc\n", "a\nB\nc\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Merge([]byte(tt.base), []byte(tt.branch), []byte(tt.person))
			if tt.want == "" {
				if ok {
					t.Fatalf("Merge = %q, true; want a conflict", got)
				}
				return
			}
			if !ok || string(got) != tt.want {
				t.Fatalf("Merge = %q, %v; want %q, true", got, ok, tt.want)
			}
		})
	}
}

// TestMergeKeepsEveryAddedLine: on random texts where both sides only add
// lines, the merge never conflicts and holds every line of both, each
// side's in its own order.
func TestMergeKeepsEveryAddedLine(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 11))
	for round := range 500 {
		base := make([]string, rnd.IntN(8))
		for i := range base {
			base[i] = fmt.Sprintf("base %d", i)
		}
		branch := insertLines(rnd, base, "agent")
		person := insertLines(rnd, base, "person")
		got, ok := Merge(text(base), text(branch), text(person))
		if !ok {
			t.Fatalf("round %d: conflict merging %q and %q on %q", round, branch, person, base)
		}
		lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
		if len(got) == 0 {
			lines = nil
		}
		if want := len(branch) + len(person) - len(base); len(lines) != want {
			t.Fatalf("round %d: %d lines %q; want %d", round, len(lines), lines, want)
		}
		for _, side := range [][]string{branch, person} {
			if !subsequence(side, lines) {
				t.Fatalf("round %d: %q is not in order in %q", round, side, lines)
			}
		}
	}
}

// TestMergeOfOneSide: a side that did not change takes the other whole,
// and Distance is 0 only between equal texts.
func TestMergeOfOneSide(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 5))
	for round := range 300 {
		base := randomText(rnd)
		other := randomText(rnd)
		if got, ok := Merge(base, base, other); !ok || string(got) != string(other) {
			t.Fatalf("round %d: Merge(base, base, x) = %q, %v; want %q", round, got, ok, other)
		}
		if got, ok := Merge(base, other, base); !ok || string(got) != string(other) {
			t.Fatalf("round %d: Merge(base, x, base) = %q, %v; want %q", round, got, ok, other)
		}
		if got, ok := Merge(base, other, other); !ok || string(got) != string(other) {
			t.Fatalf("round %d: Merge(base, x, x) = %q, %v; want %q", round, got, ok, other)
		}
		if d := Distance(base, other); (d == 0) != (string(base) == string(other)) {
			t.Fatalf("round %d: Distance(%q, %q) = %d", round, base, other, d)
		}
	}
}

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"a\n", "a\n", 0},
		{"a\n", "a\nb\n", 1},
		{"a\nb\n", "a\nB\n", 2},
		{"a\nb\nc\n", "c\n", 2},
		{"a", "a\n", 2},
	}
	for _, tt := range tests {
		if got := Distance([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d; want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func insertLines(rnd *rand.Rand, base []string, who string) []string {
	out := slices.Clone(base)
	for i := range rnd.IntN(4) {
		at := rnd.IntN(len(out) + 1)
		out = slices.Insert(out, at, fmt.Sprintf("%s %d", who, i))
	}
	return out
}

func randomText(rnd *rand.Rand) []byte {
	words := []string{"a", "b", "c", "d"}
	var lines []string
	for range rnd.IntN(6) {
		lines = append(lines, words[rnd.IntN(len(words))])
	}
	return text(lines)
}

func text(lines []string) []byte {
	if len(lines) == 0 {
		return nil
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// subsequence reports whether every line of sub is in lines, in order.
func subsequence(sub, lines []string) bool {
	i := 0
	for _, l := range lines {
		if i < len(sub) && sub[i] == l {
			i++
		}
	}
	return i == len(sub)
}
