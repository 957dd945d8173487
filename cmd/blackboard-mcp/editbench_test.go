package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestEditBenchmark measures people's edits on a generated board (20,000
// notes unless BLACKBOARD_BENCH_NOTES says otherwise): how long after a save
// agents read the new version, how long a new server takes to answer and to
// commit edits made while none ran (it compares the whole work tree), and a
// CLI write, which compares the whole tree first because it does not watch.
// It prints numbers and asserts nothing about time. BLACKBOARD_BENCH=1 runs
// it.
func TestEditBenchmark(t *testing.T) {
	fixtures.RequireBench(t)
	notes := benchNotesEnv(t, 20000)
	opts := fixtures.Options{Notes: notes, Commits: notes, Workspace: "acme"}
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fixtures.Generate(dir, opts); err != nil {
		t.Fatal(err)
	}
	manifest, err := fixtures.Manifest(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(testBinary, "reindex", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("reindex: %v\n%s", err, out)
	}
	key := func(i int) string { return manifest[(i*7919)%len(manifest)].Key }

	// A CLI write: the whole work tree is compared first. The first one
	// also records every file's stat; the later ones trust it.
	var puts []time.Duration
	for i := range 6 {
		start := time.Now()
		runCLI(t, dir, "put", key(i), "--digest", fmt.Sprintf("cli write %d", i), "--body", "x")
		puts = append(puts, time.Since(start))
	}
	report(t, "notes=%d CLI put (compares the whole tree): first %s, then p50 %s", notes,
		puts[0].Round(time.Millisecond), p50(puts[1:]))

	// Edits while no server runs, then a server starts: it answers at once
	// and commits them in the background.
	offline := key(100)
	writeTree(t, dir, offline+".md", handNote("edited while no server ran", "offline\n"))
	start := time.Now()
	s := startMCPGo(t, dir, "agent")
	answered := time.Since(start)
	eventually(t, "the offline edit is committed", func() bool {
		return s.itemOf(offline).Digest == "edited while no server ran"
	})
	report(t, "notes=%d new server: initialized in %s, offline edit readable after %s", notes,
		answered.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	// Saves while it runs: from the save to an agent reading the version.
	var visible []time.Duration
	for i := range 40 {
		k := key(200 + i)
		v := s.itemOf(k).Version
		start := time.Now()
		writeTree(t, dir, k+".md", handNote(fmt.Sprintf("saved %d", i), "saved\n"))
		for s.itemOf(k).Version != v+1 {
			if time.Since(start) > settleTimeout {
				t.Fatalf("save %d not committed", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
		visible = append(visible, time.Since(start))
	}
	report(t, "notes=%d save to readable version (debounce 150 ms included): p50 %s p95 %s max %s", notes,
		p50(visible), p95(visible), pct(visible, 100))
	s.closeClean()
}
