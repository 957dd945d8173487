package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestRemoteBench measures a board on a git remote as agents meet it, through
// the real binary and mcp-go's client over stdio, with durability on, over
// file:// and over git's smart HTTP server: a write's latency beside the same
// write on a board without a remote, in the same run; four clones with four
// writers each (16 server processes, or 4 servers of 4 agents each) writing
// at once for a few seconds; a
// new server on a clone of a 10,000-note board answering its first call. It
// prints numbers and judges none of them. It runs only with
// BLACKBOARD_BENCH=1:
//
//	BLACKBOARD_BENCH=1 go test ./cmd/blackboard-mcp -run TestRemoteBench -v -count=1 -timeout 30m
func TestRemoteBench(t *testing.T) {
	fixtures.RequireBench(t)
	report := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		fmt.Println(line)
	}
	serve := func(t *testing.T, dir, agent string) *session {
		return startServer(t, serverOpts{dir: dir, agent: agent, durable: true}) // durable: no --no-sync
	}
	writes := func(t *testing.T, s *session, prefix string, n int) callLatencies {
		return measure(t, n, func(i int) {
			s.write(map[string]any{"uri": fmt.Sprintf("%s/n%d", prefix, i+10), "digest": "d", "body": "x", "expect_version": 0})
		})
	}
	for _, transport := range []string{"file", "http"} {
		t.Run(transport, func(t *testing.T) {
			_, _, first := boardWithRemoteOver(t, transport)
			local := filepath.Join(t.TempDir(), "local")
			runCLI(t, local, "init")
			withRemote, without := serve(t, first, "bench"), serve(t, local, "bench")
			for round := range 2 { // interleaved, so both meet the same machine
				report("remote-bench %s round %d: write with a remote %s; without %s", transport, round,
					writes(t, withRemote, fmt.Sprintf("r%d", round), 100), writes(t, without, fmt.Sprintf("r%d", round), 100))
			}
			withRemote.closeClean()
			without.closeClean()
		})
		// Four clones, four writers each: as four server processes per
		// clone (one stdio server per agent), and as one server per clone
		// that four agents share (serve --http on each machine), where
		// writes that meet are batched into one push.
		for _, shape := range []struct {
			name            string
			serversPerClone int
		}{{"4x4 processes", 4}, {"4x4 shared server", 1}} {
			t.Run(transport+"/"+shape.name, func(t *testing.T) {
				url, _, first := boardWithRemoteOver(t, transport)
				clones := withClones(t, url, first, 3)
				var writers []*session
				for i, dir := range clones {
					var mine []*session
					for j := range shape.serversPerClone {
						mine = append(mine, serve(t, dir, fmt.Sprintf("agent-%d-%d", i, j)))
					}
					for j := range 4 {
						writers = append(writers, mine[j%len(mine)])
					}
				}
				const span = 8 * time.Second
				var acked, conflicts atomic.Int64
				var firstRefusal atomic.Value
				var wg sync.WaitGroup
				start := time.Now()
				for k, s := range writers {
					wg.Go(func() {
						for n := 0; time.Since(start) < span; n++ {
							res := s.call("update_state", map[string]any{"uri": fmt.Sprintf("w%d/n%d", k, n), "digest": "d", "body": "x", "expect_version": 0})
							if res.isError {
								conflicts.Add(1)
								firstRefusal.CompareAndSwap(nil, res.text)
								continue
							}
							acked.Add(1)
						}
					})
				}
				wg.Wait()
				took := time.Since(start)
				report("remote-bench %s 4 clones x 4 writers, %s: %d writes acknowledged in %s = %.1f/s (%d refused)", transport,
					shape.name, acked.Load(), took.Round(time.Millisecond), float64(acked.Load())/took.Seconds(), conflicts.Load())
				if why := firstRefusal.Load(); why != nil {
					report("remote-bench first refusal: %s", why)
				}
				seen := map[*session]bool{}
				for _, s := range writers {
					if !seen[s] {
						seen[s] = true
						s.closeClean()
					}
				}
				pushes := 0
				for _, dir := range clones {
					pushes += ownPushes(t, dir)
				}
				report("remote-bench %s 4 clones x 4 writers, %s: %d pushes landed, %.1f writes a push", transport,
					shape.name, pushes, float64(acked.Load())/float64(max(pushes, 1)))
			})
		}
	}
	t.Run("new server on a clone of 10000 notes", func(t *testing.T) {
		const notes = 10000
		root := t.TempDir()
		bare := filepath.Join(root, "board.git")
		fixtures.Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
		dir := filepath.Join(root, "acme")
		if err := fixtures.Generate(dir, fixtures.Options{Workspace: "acme", Notes: notes, Seed: 7}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		runCLI(t, dir, "remote", "set", "file://"+bare)
		report("remote-bench attaching a board of %d notes (pushing it) took %s", notes, time.Since(start).Round(time.Millisecond))
		clone := filepath.Join(root, "clone")
		start = time.Now()
		cloneBoard(t, "file://"+bare, clone)
		report("remote-bench cloning it (and building its index) took %s", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		s := serve(t, clone, "bench")
		ctx, cancel := contextWithTimeout()
		defer cancel()
		if _, err := s.listTools(ctx); err != nil {
			t.Fatal(err)
		}
		report("remote-bench a new server on the clone answered tools/list %s after it started", time.Since(start).Round(time.Millisecond))
		// It is still comparing the fresh clone's 10,000 files in the
		// background (no stat of them is known yet); how fast a server
		// stops then is not measured here.
		_ = s.close()
	})
}

// ownPushes counts the pushes of a clone's own writes that landed: its
// branch's moves onto them, each one push (the reflog's "blackboard: commit
// N writes",
// or a lone write's subject), and not its moves onto what other clones
// pushed or the rescues of its history.
func ownPushes(t *testing.T, dir string) int {
	n := 0
	for _, reason := range strings.Split(fixtures.Git(t, dir, "reflog", "show", "--format=%gs", "refs/heads/main"), "\n") {
		own, ok := strings.CutPrefix(reason, "blackboard: ")
		if ok && !strings.HasPrefix(own, "fast-forward") && !strings.HasPrefix(own, "rebuild") &&
			!strings.HasPrefix(own, "keep") && !strings.HasPrefix(own, "bring back") {
			n++
		}
	}
	return n
}
