package health

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The cycles health names are cycles of the waits, and every note on one
// is named: on random graphs, against reachability computed the long way
// (a note is on a cycle when it reaches itself).
func TestCyclesOnRandomGraphs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 46))
	for round := range 300 {
		n := 1 + rng.IntN(9)
		waits := map[string][]string{}
		name := func(i int) string { return fmt.Sprintf("t/%d", i) }
		for range rng.IntN(2 * n) {
			a, b := name(rng.IntN(n)), name(rng.IntN(n))
			if !slices.Contains(waits[a], b) {
				waits[a] = append(waits[a], b)
			}
		}
		reaches := func(from, to string) bool {
			seen := map[string]bool{}
			next := slices.Clone(waits[from])
			for len(next) > 0 {
				v := next[len(next)-1]
				next = next[:len(next)-1]
				if v == to {
					return true
				}
				if !seen[v] {
					seen[v] = true
					next = append(next, waits[v]...)
				}
			}
			return false
		}
		named := map[string]int{} // the group each named note's cycle stands for
		for c, cycle := range cycles(waits) {
			for i, v := range cycle {
				if w := cycle[(i+1)%len(cycle)]; !slices.Contains(waits[v], w) {
					t.Fatalf("round %d: cycle %v: %s does not wait on %s (waits %v)", round, cycle, v, w, waits)
				}
			}
			for v := range waits {
				if reaches(v, cycle[0]) && reaches(cycle[0], v) {
					if prev, ok := named[v]; ok && prev != c {
						t.Fatalf("round %d: %s in two groups named (waits %v)", round, v, waits)
					}
					named[v] = c
				}
			}
		}
		for i := range n {
			v := name(i)
			if _, ok := named[v]; reaches(v, v) != ok {
				t.Fatalf("round %d: %s reaches itself: %v, yet named: %v (waits %v, cycles %v)", round, v, reaches(v, v), ok, waits, cycles(waits))
			}
		}
	}
}
