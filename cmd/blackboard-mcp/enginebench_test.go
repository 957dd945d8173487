package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestEngineAgentsBench measures eight agents on one board (100,000 notes
// unless BLACKBOARD_BENCH_NOTES says otherwise; BLACKBOARD_BENCH_DIR keeps
// the generated board to reuse), through real stdio clients, with the
// board's engine and with a whole server per agent (serve --no-engine),
// side by side in one run, two rounds each, alternating:
//   - the memory of every blackboard-mcp process of the board together
//     (RSS and PSS), settled after each agent read, and of one relay;
//   - writes a second of one agent, then of eight agents at once, each
//     writing notes of its own with expect_version, durable, and the
//     ratio.
//
// It prints numbers and asserts nothing about them. Run it with
// BLACKBOARD_BENCH=1.
func TestEngineAgentsBench(t *testing.T) {
	fixtures.RequireBench(t)
	notes := benchNotesEnv(t, 100000)
	dir := os.Getenv("BLACKBOARD_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "big")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		start := time.Now()
		if err := fixtures.Generate(dir, fixtures.Options{Notes: notes, Commits: notes, Workspace: "big"}); err != nil {
			t.Fatal(err)
		}
		report(t, "generate notes=%d: %s", notes, time.Since(start).Round(time.Millisecond))
	}
	if out, err := exec.Command(testBinary, "reindex", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("reindex: %v\n%s", err, out)
	}
	const agents = 8
	run := time.Now().Format("150405") // the notes written are new on a board kept from an earlier run
	for round := 1; round <= 2; round++ {
		for _, mode := range []struct {
			name  string
			flags []string
		}{{"engine", nil}, {"alone", []string{"--no-engine"}}} {
			sessions := make([]*session, agents)
			for i := range sessions {
				sessions[i] = startServer(t, serverOpts{dir: dir, agent: fmt.Sprintf("bench-%d", i), flags: mode.flags, durable: true})
			}
			for _, s := range sessions {
				s.ok("list_keys", map[string]any{"limit": 100})
				s.ok("search_keys", map[string]any{"q": "cache"})
			}
			time.Sleep(3 * time.Second)
			rss, pss, relay := boardMemory(t, dir)
			one := writeRate(sessions[:1], fmt.Sprintf("%s-%s-r%d-one", run, mode.name, round))
			all := writeRate(sessions, fmt.Sprintf("%s-%s-r%d-all", run, mode.name, round))
			report(t, "round %d, %s: %d agents' processes together RSS %d MB, PSS %d MB (smallest RSS %d MB); writes/s one agent %.0f, eight %.0f (%.2fx)",
				round, mode.name, agents, rss>>10, pss>>10, relay>>10, one, all, all/one)
			for _, s := range sessions {
				s.closeClean()
			}
			engineStopped(t, dir)
		}
	}
}

// writeRate has the agents write notes of their own for 4 s, each with the
// right expect_version, and returns the writes a second they made
// together.
func writeRate(agents []*session, prefix string) float64 {
	const length = 4 * time.Second
	var writes atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(length)
	for i, s := range agents {
		wg.Go(func() {
			for n := 0; time.Now().Before(deadline); n++ {
				res := s.call("update_state", map[string]any{"uri": fmt.Sprintf("bench/%s-%d-%d", prefix, i, n), "digest": "bench write",
					"body": "x", "expect_version": 0})
				if res.isError {
					s.t.Errorf("bench write: %s", res.text)
					return
				}
				writes.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(writes.Load()) / length.Seconds()
}

// boardMemory is the memory, in KB, of every process whose command line
// names dir (the board's relays and engine, or its servers): resident (RSS;
// the pages of the program's file every process maps are counted in each),
// proportional (PSS: those shared pages divided among the processes that
// map them), and the smallest RSS of them (a relay, where there is an
// engine).
func boardMemory(t *testing.T, dir string) (rss, pss, smallest int) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	field := func(file, name string) int {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, name+":"); ok {
				kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
				return kb
			}
		}
		return 0
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		proc := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir+"\x00")) || !bytes.Contains(cmdline, []byte("blackboard-mcp")) {
			continue
		}
		kb := field(filepath.Join(proc, "status"), "VmRSS")
		rss += kb
		pss += field(filepath.Join(proc, "smaps_rollup"), "Pss")
		if smallest == 0 || kb < smallest {
			smallest = kb
		}
	}
	return rss, pss, smallest
}
