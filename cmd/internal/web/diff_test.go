package web

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestLineDiffRebuildsBothSides: on random texts, the kept and removed
// lines of a diff are the old text and the kept and added lines the new
// one, and the kept lines are as many as the longest common subsequence
// when it is computed.
func TestLineDiffRebuildsBothSides(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	words := []string{"a", "b", "c", "d", ""}
	text := func() string {
		var lines []string
		for range rng.IntN(30) {
			lines = append(lines, words[rng.IntN(len(words))])
		}
		return strings.Join(lines, "\n")
	}
	for range 2000 {
		a, b := text(), text()
		var old, cur []string
		kept := 0
		for _, l := range lineDiff(a, b) {
			if l.Op == " " {
				kept++
			}
			if l.Op != "+" {
				old = append(old, l.Text)
			}
			if l.Op != "-" {
				cur = append(cur, l.Text)
			}
		}
		if strings.Join(old, "\n") != strings.Join(splitLines(a), "\n") || strings.Join(cur, "\n") != strings.Join(splitLines(b), "\n") {
			t.Fatalf("diff of %q and %q does not rebuild them: %q / %q", a, b, old, cur)
		}
		if want := lcsLength(splitLines(a), splitLines(b)); kept != want {
			t.Fatalf("diff of %q and %q keeps %d lines; %d are common", a, b, kept, want)
		}
	}
}

// lcsLength is the length of the longest common subsequence, by the
// textbook recursion with memory.
func lcsLength(x, y []string) int {
	memo := map[[2]int]int{}
	var f func(i, j int) int
	f = func(i, j int) int {
		if i == len(x) || j == len(y) {
			return 0
		}
		if v, ok := memo[[2]int{i, j}]; ok {
			return v
		}
		v := max(f(i+1, j), f(i, j+1))
		if x[i] == y[j] {
			v = f(i+1, j+1) + 1
		}
		memo[[2]int{i, j}] = v
		return v
	}
	return f(0, 0)
}
