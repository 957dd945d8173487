package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// TestReadBenchmark measures reads on a board of 100,000 notes and 100,000
// commits (SPEC section 11): search by term frequency and identifier, list,
// 20 digests, a new process's first answer, a full reindex, the index size.
// It prints numbers and asserts nothing about time. Run it with
// BLACKBOARD_BENCH=1 (BLACKBOARD_BENCH_NOTES changes the size;
// BLACKBOARD_BENCH_DIR keeps the generated workspace there, to reuse).
func TestReadBenchmark(t *testing.T) {
	fixtures.RequireBench(t)
	notes := benchNotesEnv(t, 100000)
	opts := fixtures.Options{Notes: notes, Commits: notes, Workspace: "big"}
	dir := os.Getenv("BLACKBOARD_BENCH_DIR")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "big")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		start := time.Now()
		if err := fixtures.Generate(dir, opts); err != nil {
			t.Fatal(err)
		}
		report(t, "generate notes=%d commits=%d: %s", notes, notes, time.Since(start).Round(time.Millisecond))
	}
	manifest, err := fixtures.Manifest(dir, opts)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if out, err := exec.Command(testBinary, "reindex", "--dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("reindex: %v\n%s", err, out)
	}
	report(t, "reindex (new process, %d commits): %s", notes+1, time.Since(start).Round(time.Millisecond))
	size := int64(0)
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(filepath.Join(dir, ".blackboard", "index.db"+suffix)); err == nil {
			size += fi.Size()
		}
	}
	report(t, "index size: %.1f MB", float64(size)/1e6)

	var firstGet, toolsList []time.Duration
	for range 7 {
		start := time.Now()
		if out, err := exec.Command(testBinary, "get", "--dir", dir, manifest[len(manifest)/2].Key).CombinedOutput(); err != nil {
			t.Fatalf("get: %v\n%s", err, out)
		}
		firstGet = append(firstGet, time.Since(start))
		toolsList = append(toolsList, timeToolsList(t, dir))
	}
	report(t, "new process, get one note: p50 %s", p50(firstGet))
	report(t, "new server process, initialize + tools/list answered: p50 %s", p50(toolsList))

	w, err := fsstore.Open(dir, fsstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	key := manifest[notes/3].Key
	leaf := key[strings.LastIndexByte(key, '/')+1:]
	rare := rareWord(manifest)
	for _, q := range []struct{ name, q string }{
		{"common term", "the"},
		{"mid term", "cache"},
		{"rare term", rare},
		{"two terms", "cache regression"},
		{"phrase", `"error budget"`},
		{"prefix", "regress*"},
		{"identifier", leaf},
		{"identifier, version", "2.4.7"},
	} {
		var d []time.Duration
		hits := 0
		for range 30 {
			start := time.Now()
			h, _, err := asAgent(w).Search(q.q, "", 10)
			if err != nil {
				t.Fatal(err)
			}
			d = append(d, time.Since(start))
			hits = len(h)
		}
		report(t, "search %-20s %-22q p50 %8s p95 %8s (%d hits shown)", q.name, q.q, p50(d), p95(d), hits)
	}
	topic := strings.SplitN(manifest[0].Key, "/", 2)[0]
	var list, digests []time.Duration
	uris := make([]string, 20)
	for i := range uris {
		uris[i] = manifest[i*(notes/20)].Key
	}
	for range 50 {
		start := time.Now()
		if _, err := asAgent(w).List(fsstore.ListOptions{Topic: topic, Limit: 20}); err != nil {
			t.Fatal(err)
		}
		list = append(list, time.Since(start))
		start = time.Now()
		if _, _, err := asAgent(w).Summaries(uris); err != nil {
			t.Fatal(err)
		}
		digests = append(digests, time.Since(start))
	}
	report(t, "list a topic (20 of them): p50 %s p95 %s", p50(list), p95(list))
	report(t, "get 20 digests: p50 %s p95 %s", p50(digests), p95(digests))
}

// timeToolsList starts a server process and times initialize and tools/list.
func timeToolsList(t *testing.T, dir string) time.Duration {
	t.Helper()
	cmd := exec.Command(testBinary, "serve", "--dir", dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()
	_, _ = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `{"jsonrpc":"2.0","id":2,`) {
			return time.Since(start)
		}
	}
	t.Fatal("no tools/list answer")
	return 0
}

// benchNotesEnv is the board size a benchmark uses: BLACKBOARD_BENCH_NOTES,
// else def.
func benchNotesEnv(t *testing.T, def int) int {
	t.Helper()
	n := os.Getenv("BLACKBOARD_BENCH_NOTES")
	if n == "" {
		return def
	}
	if _, err := fmt.Sscan(n, &def); err != nil {
		t.Fatalf("BLACKBOARD_BENCH_NOTES=%q: %v", n, err)
	}
	return def
}

func report(t *testing.T, format string, args ...any) {
	t.Logf(format, args...)
	fmt.Printf(format+"\n", args...)
}

func p50(d []time.Duration) time.Duration { return pct(d, 50) }
func p95(d []time.Duration) time.Duration { return pct(d, 95) }

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100].Round(10 * time.Microsecond)
}

// rareWord is a word of the digests that occurs in only a few of them.
func rareWord(notes []fixtures.Note) string {
	count := map[string]int{}
	for _, n := range notes {
		seen := map[string]bool{}
		for _, w := range strings.FieldsFunc(strings.ToLower(n.Digest), func(r rune) bool {
			return r < 'a' || r > 'z'
		}) {
			if len(w) > 4 && !seen[w] {
				seen[w] = true
				count[w]++
			}
		}
	}
	best, bestN := "", len(notes)+1
	for w, n := range count {
		if n >= 2 && (n < bestN || n == bestN && w < best) {
			best, bestN = w, n
		}
	}
	return best
}
