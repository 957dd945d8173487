package main

import (
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestMCPBench measures the tools as an agent meets them: mcp-go's client
// over real stdio against the real binary, with durability on (no
// --no-sync), on a generated board of 10,000 notes whose index is built
// beforehand by `reindex`. It prints callLatencies (p50, p99) and the token cost
// of a team catch-up on a 200-note board, and judges none of it: the SPEC's
// targets (section 11) are for people to compare against. It runs only with
// BLACKBOARD_BENCH=1:
//
//	BLACKBOARD_BENCH=1 go test ./cmd/blackboard-mcp -run TestMCPBench -v -count=1 -timeout 30m
func TestMCPBench(t *testing.T) {
	fixtures.RequireBench(t)
	report := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		t.Log(line)
		fmt.Println(line)
	}

	t.Run("latency", func(t *testing.T) {
		const notes = 10000
		dir := filepath.Join(t.TempDir(), "acme")
		opts := fixtures.Options{Workspace: "acme", Notes: notes, Seed: 7}
		start := time.Now()
		if err := fixtures.Generate(dir, opts); err != nil {
			t.Fatal(err)
		}
		manifest, err := fixtures.Manifest(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		report("mcp-bench board notes=%d commits=%d generated in %s", notes, notes+1, time.Since(start).Round(time.Millisecond))
		start = time.Now()
		runBinaryEnv(t, "reindex", "--dir", dir)
		report("mcp-bench reindex took %s", time.Since(start).Round(time.Millisecond))

		start = time.Now()
		s := startServer(t, serverOpts{dir: dir, agent: "bench", durable: true}) // durable: no --no-sync
		report("mcp-bench start+initialize took %s", time.Since(start).Round(time.Millisecond))
		start = time.Now()
		ctx, cancel := contextWithTimeout()
		if _, err := s.listTools(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		report("mcp-bench first tools/list took %s", time.Since(start).Round(time.Microsecond))

		rng := rand.New(rand.NewPCG(7, 11))
		pickURIs := func(n int) []string {
			out := make([]string, 0, n)
			for _, i := range rng.Perm(len(manifest))[:n] {
				out = append(out, manifest[i].Key)
			}
			return out
		}

		// update_state with the right expect_version, round-robin over 20
		// notes whose versions the manifest gives.
		targets := manifest[:20]
		versions := make([]int, len(targets))
		for i, n := range targets {
			versions[i] = n.Version
		}
		writes := measure(t, 300, func(i int) {
			k := i % len(targets)
			w := s.write(map[string]any{"uri": targets[k].Key, "digest": fmt.Sprintf("Bench write %d", i),
				"body": fmt.Sprintf("## Measurement %d\n\nThe p99 held at %d ms.\n", i, 100+i%50), "expect_version": versions[k]})
			if w.Version != versions[k]+1 {
				t.Fatalf("write %d of %s: version %d, want %d", i, targets[k].Key, w.Version, versions[k]+1)
			}
			versions[k] = w.Version
		})
		report("mcp-bench update_state (expect_version, durable) %s", writes)

		reads := measure(t, 300, func(int) {
			if e := s.get(pickURIs(20), "digest", 0); len(e.Items) != 20 {
				t.Fatalf("get_state of 20 digests kept %d (omitted %q)", len(e.Items), e.OmittedURIs)
			}
		})
		report("mcp-bench get_state 20 digests %s", reads)

		topic := strings.SplitN(manifest[0].Key, "/", 2)[0]
		lists := measure(t, 200, func(int) {
			if e := parseEnvelope(t, s.ok("list_keys", map[string]any{"topic": topic}), 2000); len(e.Items) == 0 {
				t.Fatalf("list_keys %s is empty", topic)
			}
		})
		report("mcp-bench list_keys topic=%s %s", topic, lists)

		words := measure(t, 200, func(int) {
			if e := parseEnvelope(t, s.ok("search_keys", map[string]any{"q": "latency"}), 2000); len(e.Items) == 0 {
				t.Fatal("search_keys latency found nothing")
			}
		})
		report("mcp-bench search_keys word=latency %s", words)

		const ident = "deploy-v9.4.2-hotfix"
		s.write(map[string]any{"uri": "incidents/bench-hotfix", "digest": "Rollback of the bench hotfix", "expect_version": 0,
			"body": "Rolled back " + ident + " after the cache regression."})
		ids := measure(t, 200, func(int) {
			e := parseEnvelope(t, s.ok("search_keys", map[string]any{"q": ident}), 2000)
			if len(e.Items) == 0 || e.Items[0].URI != uri("incidents/bench-hotfix") {
				t.Fatalf("search_keys %s = %q; want its note first", ident, e.uris())
			}
		})
		report("mcp-bench search_keys identifier=%s %s", ident, ids)
		s.closeClean()
	})

	t.Run("catch-up tokens", func(t *testing.T) {
		dir, _, ident, topic, twenty := catchUpBoard(t, 200)
		s := startServer(t, serverOpts{dir: dir, agent: "bench", durable: true})

		type step struct{ name, text string }
		var steps []step
		listText := s.ok("list_keys", map[string]any{"topic": topic})
		steps = append(steps, step{"list_keys topic=" + topic, listText})
		steps = append(steps, step{"get_state 20 digests", s.ok("get_state", map[string]any{"uris": twenty})})
		searchText := s.ok("search_keys", map[string]any{"q": ident})
		steps = append(steps, step{"search_keys " + ident, searchText})
		// The two notes read in full: the search's top hit and the newest
		// of the topic.
		var full []string
		if e := parseEnvelope(t, searchText, 2000); len(e.Items) > 0 {
			full = append(full, e.Items[0].URI)
		}
		for _, it := range parseEnvelope(t, listText, 2000).Items {
			if len(full) == 2 {
				break
			}
			if !slices.Contains(full, it.URI) {
				full = append(full, it.URI)
			}
		}
		// Whole notes, as a catch-up reads them: a budget that cuts nothing.
		steps = append(steps, step{"get_state 2 full", s.ok("get_state", map[string]any{"uris": full, "mode": "full", "budget_tokens": 20000})})
		s.closeClean()

		total := 0
		for _, st := range steps {
			n := countTokens(t, st.text)
			total += n
			e := parseEnvelope(t, st.text, 20000)
			report("mcp-bench catch-up notes=200 %-28s %5d tokens (items=%d truncated=%v omitted=%d)",
				st.name, n, len(e.Items), e.Truncated, e.Omitted)
		}
		report("mcp-bench catch-up notes=200 total %d tokens (read in full: %s)", total, strings.Join(full, " "))
	})
}

// callLatencies are the durations of n calls.
type callLatencies []time.Duration

func (l callLatencies) String() string {
	s := slices.Clone(l)
	slices.Sort(s)
	q := func(p int) time.Duration { return s[min(len(s)-1, len(s)*p/100)] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
	return fmt.Sprintf("n=%d p50=%s p99=%s max=%s", len(s), ms(q(50)), ms(q(99)), ms(s[len(s)-1]))
}

// measure runs fn n times, after a few unmeasured warm-up calls, and returns
// each call's duration.
func measure(t *testing.T, n int, fn func(i int)) callLatencies {
	t.Helper()
	for i := range 3 {
		fn(-1 - i + 3*n) // warm-up calls use indexes the measured ones never reach
	}
	out := make(callLatencies, 0, n)
	for i := range n {
		start := time.Now()
		fn(i)
		out = append(out, time.Since(start))
	}
	return out
}

// catchUpBoard is the 200-note board both catch-up measurements run on, with
// what the catch-up asks for: an identifier from the digests (a version, else
// a note's leaf), a topic, and twenty addresses.
func catchUpBoard(t *testing.T, notes int) (dir string, manifest []fixtures.Note, ident, topic string, twenty []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "acme")
	opts := fixtures.Options{Workspace: "acme", Notes: notes, Seed: 7}
	if err := fixtures.Generate(dir, opts); err != nil {
		t.Fatal(err)
	}
	manifest, err := fixtures.Manifest(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	runBinaryEnv(t, "reindex", "--dir", dir)
	version := regexp.MustCompile(`\b\d+\.\d+\.\d+\b`)
	for _, n := range manifest {
		if m := version.FindString(n.Digest); m != "" {
			ident = m
			break
		}
	}
	if ident == "" {
		ident = path.Base(manifest[len(manifest)/2].Key)
	}
	topic = strings.SplitN(manifest[0].Key, "/", 2)[0]
	for _, n := range manifest[:20] {
		twenty = append(twenty, n.Key)
	}
	return dir, manifest, ident, topic, twenty
}
