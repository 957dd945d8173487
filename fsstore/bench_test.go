package fsstore

import (
	"strconv"
	"testing"
)

// BenchmarkUpdate measures one compare-and-swap write through the whole
// write path (durable unless -short), on a board of 200 notes.
func BenchmarkUpdate(b *testing.B) {
	w := newWorkspace(b, !testing.Short())
	versions := make([]int, 200)
	for i := range versions {
		put(b, w, "bench/n"+strconv.Itoa(i), 0, "note", "body")
		versions[i] = 1
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(versions)
		body := "body " + strconv.Itoa(i)
		res, err := w.Update(UpdateRequest{URI: "bench/n" + strconv.Itoa(k), Digest: "note " + strconv.Itoa(i), Body: &body, ExpectVersion: &versions[k]})
		if err != nil {
			b.Fatal(err)
		}
		versions[k] = res.Version
	}
}
