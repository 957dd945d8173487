package index

import (
	"fmt"
	"testing"
)

// Stems stems as the index does, keeps what it stemmed, and takes more
// words at once than a statement may hold.
func TestStems(t *testing.T) {
	words := []string{"heating", "heated", "heat", "flutter", "running", "connections", "café"}
	for i := range 2*stemBatch + 10 {
		words = append(words, fmt.Sprintf("w%dz", i))
	}
	for round := range 2 { // then from what Stems keeps
		got, err := Stems(words)
		if err != nil {
			t.Fatal(err)
		}
		for w, want := range map[string]string{"heating": "heat", "heated": "heat", "heat": "heat", "flutter": "flutter",
			"running": "run", "connections": "connect", "café": "cafe", "w2009z": "w2009z"} {
			if got[w] != want {
				t.Errorf("round %d: stem of %q is %q, want %q", round, w, got[w], want)
			}
		}
		if len(got) != len(words) {
			t.Errorf("round %d: %d stems for %d words", round, len(got), len(words))
		}
	}
}
