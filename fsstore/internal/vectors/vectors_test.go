package vectors

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/meaning"
)

// The nearest vectors of the set are those a sort of every vector gives,
// within the scope, on random vectors.
func TestNearestAgreesWithASort(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 1))
	var vs set
	vs.slot = map[string]int{}
	for i := range 500 {
		var v meaning.Vector
		for d := range v {
			v[d] = int8(rng.IntN(255) - 127)
		}
		key := fmt.Sprintf("%s/n%d", []string{"a", "b", "c"}[i%3], i)
		vs.slot[key] = len(vs.keys)
		vs.keys = append(vs.keys, key)
		vs.vecs = append(vs.vecs, v)
	}
	for round := range 50 {
		var q meaning.Vector
		for d := range q {
			q[d] = int8(rng.IntN(255) - 127)
		}
		scope := index.Scope{}
		if round%2 == 1 {
			scope.Prefixes = []string{"b"}
		}
		k := 1 + rng.IntN(40)
		type kd struct {
			key string
			dot int32
		}
		var all []kd
		for i, v := range vs.vecs {
			if scope.Contains(vs.keys[i]) {
				all = append(all, kd{vs.keys[i], meaning.Dot(&q, &v)})
			}
		}
		sort.SliceStable(all, func(i, j int) bool { return all[i].dot > all[j].dot })
		got := vs.nearest(&q, k, scope)
		if len(got) != min(k, len(all)) {
			t.Fatalf("round %d: %d nearest, want %d", round, len(got), min(k, len(all)))
		}
		for i, n := range got {
			if want := meaning.Cosine(all[i].dot); n.Cosine != want {
				t.Fatalf("round %d: nearest %d has cosine %v, want %v", round, i, n.Cosine, want)
			}
		}
		if !slices.IsSortedFunc(got, func(a, b Near) int {
			switch {
			case a.Cosine > b.Cosine:
				return -1
			case a.Cosine < b.Cosine:
				return 1
			}
			return 0
		}) {
			t.Fatalf("round %d: not nearest first", round)
		}
	}
}
