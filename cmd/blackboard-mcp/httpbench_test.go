package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestHTTPWriteBench measures one serve --http (durable) shared by agents:
// one agent writing alone, then eight at once, each to its own notes. It
// prints the rates and their ratio and judges nothing. It runs only with
// BLACKBOARD_BENCH=1:
//
//	BLACKBOARD_BENCH=1 go test ./cmd/blackboard-mcp -run TestHTTPWriteBench -v -count=1
func TestHTTPWriteBench(t *testing.T) {
	fixtures.RequireBench(t)
	dir := filepath.Join(t.TempDir(), "acme")
	runCLI(t, dir, "init")
	s := startHTTP(t, serverOpts{dir: dir, agent: "bench", durable: true})
	rate := func(agents, writes int, round string) (float64, callLatencies) {
		clients := make([]*session, agents)
		for i := range clients {
			clients[i], _ = s.mcpGoHTTP(t, true)
		}
		var mu sync.Mutex
		var lat callLatencies
		var wg sync.WaitGroup
		start := time.Now()
		for i, c := range clients {
			wg.Go(func() {
				for n := range writes {
					began := time.Now()
					c.write(map[string]any{"uri": fmt.Sprintf("%s/a%d/n%d", round, i, n), "digest": "d", "body": "x", "expect_version": 0})
					mu.Lock()
					lat = append(lat, time.Since(began))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return float64(agents*writes) / time.Since(start).Seconds(), lat
	}
	for round := range 2 { // in turns, so both meet the same machine
		one, lat1 := rate(1, 200, fmt.Sprintf("one%d", round))
		eight, lat8 := rate(8, 50, fmt.Sprintf("eight%d", round))
		line := fmt.Sprintf("http-bench round %d: 1 agent %.1f writes/s (%s); 8 agents %.1f writes/s (%s); ratio %.2fx",
			round, one, lat1, eight, lat8, eight/one)
		t.Log(line)
		fmt.Println(line)
	}
}
