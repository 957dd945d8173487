package fsstore

import (
	"strconv"
	"testing"
	"time"
)

// BenchmarkUpdate measures one compare-and-swap write through the whole
// write path (durable unless -short), on a board of 200 notes, and reports
// the time each step of the write took (µs/op per step).
func BenchmarkUpdate(b *testing.B) {
	w := newWorkspace(b, !testing.Short())
	versions := make([]int, 200)
	for i := range versions {
		put(b, w, "bench/n"+strconv.Itoa(i), 0, "note", "body")
		versions[i] = 1
	}
	steps := map[string]time.Duration{}
	var last time.Time
	crashPoint = func(step string) {
		steps[step] += time.Since(last)
		last = time.Now()
	}
	defer func() { crashPoint = nil }()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := i % len(versions)
		body := "body " + strconv.Itoa(i)
		last = time.Now()
		res, err := agentView(w).Update(UpdateRequest{URI: "bench/n" + strconv.Itoa(k), Digest: "note " + strconv.Itoa(i), Body: &body, ExpectVersion: &versions[k]})
		if err != nil {
			b.Fatal(err)
		}
		steps["done"] += time.Since(last)
		versions[k] = res.Version
	}
	// Each step's time is measured from the previous step; "built" (the
	// write built, edits and repairs included) from the start of the
	// write, "done" after "index".
	for _, s := range []string{"built", "journal", "objects", "branch", "files", "gitindex", "index", "done"} {
		b.ReportMetric(float64(steps[s].Microseconds())/float64(b.N), s+"-µs/op")
	}
}
