package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// runBinary runs one of the real binaries and returns its stdout; a failure
// is fatal.
func runBinary(t *testing.T, binary string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(binary), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

var (
	generateLine = regexp.MustCompile(`^generate notes=(\d+) commits=(\d+) history=(\d+) took=[0-9.]+s dir=\S+$`)
	catchupLine  = regexp.MustCompile(`^catchup history=(\d+) took=[0-9.]+s$`)
	latencies    = `n=(\d+) p50=([0-9.]+)ms p95=([0-9.]+)ms p99=([0-9.]+)ms max=([0-9.]+)ms rate=[0-9.]+/s`
	procLine     = regexp.MustCompile(`^write proc=(\d+)/(\d+) sync=(on|off) history=(\d+) ` + latencies + `$`)
	totalLine    = regexp.MustCompile(`^write procs=(\d+) sync=(on|off) history=(\d+) ` + latencies +
		` acked=(\d+) commits=(\d+) lost=(-?\d+)$`)
	floorLine = regexp.MustCompile(`^floor sync=(on|off) history=(\d+) ` + latencies + `$`)
	ratioLine = regexp.MustCompile(`^write/floor p50=([0-9.]+)x p99=([0-9.]+)x$`)
)

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkLatencies checks that the percentiles of a line are ordered.
func checkLatencies(t *testing.T, line string, m []string) {
	t.Helper()
	var prev float64
	for _, s := range m {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 || f < prev {
			t.Errorf("latencies out of order or not positive in %q", line)
			return
		}
		prev = f
	}
}

// benchWriteRun runs blackboard-bench write and checks its output: a
// catch-up line, a line per worker when there are several, and the total,
// which must have lost nothing; from one process, the floor probe's line
// and the ratio of the two. It returns the history the run started from.
func benchWriteRun(t *testing.T, dir string, procs, writes, notes int, extra ...string) (history int, out string) {
	t.Helper()
	args := append([]string{"write", "--dir", dir, "--procs", strconv.Itoa(procs),
		"--writes", strconv.Itoa(writes), "--notes", strconv.Itoa(notes)}, extra...)
	out = runBinary(t, benchBinary, args...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := 2
	if procs > 1 {
		want += procs
	} else {
		want += 2
	}
	if len(lines) != want {
		t.Fatalf("write --procs %d printed %d lines, want %d:\n%s", procs, len(lines), want, out)
	}
	if procs == 1 {
		floor, ratio := lines[2], lines[3]
		lines = lines[:2]
		if m := floorLine.FindStringSubmatch(floor); m == nil || atoi(t, m[3]) != writes {
			t.Errorf("floor line %q; want n=%d", floor, writes)
		} else {
			checkLatencies(t, floor, m[4:8])
		}
		if ratioLine.FindStringSubmatch(ratio) == nil {
			t.Errorf("ratio line %q", ratio)
		}
		if refs := fixtures.Git(t, dir, "for-each-ref", "refs/bench"); refs != "" {
			t.Errorf("the floor probe left refs behind:\n%s", refs)
		}
		if left := floorFiles(t, dir); len(left) > 0 {
			t.Errorf("the floor probe left its files behind: %v", left)
		}
	}
	if catchupLine.FindStringSubmatch(lines[0]) == nil {
		t.Errorf("catch-up line %q", lines[0])
	}
	if procs > 1 {
		for i, line := range lines[1 : 1+procs] {
			m := procLine.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("worker line %q", line)
				continue
			}
			if atoi(t, m[1]) != i+1 || atoi(t, m[2]) != procs || atoi(t, m[5]) != writes {
				t.Errorf("worker line %q: want proc=%d/%d n=%d", line, i+1, procs, writes)
			}
			checkLatencies(t, line, m[6:10])
		}
	}
	last := lines[len(lines)-1]
	m := totalLine.FindStringSubmatch(last)
	if m == nil {
		t.Fatalf("total line %q", last)
	}
	checkLatencies(t, last, m[5:9])
	if atoi(t, m[1]) != procs || atoi(t, m[4]) != procs*writes || atoi(t, m[9]) != procs*writes ||
		atoi(t, m[10]) != procs*writes || m[11] != "0" {
		t.Errorf("total line %q: want procs=%d n, acked and commits %d, lost=0", last, procs, procs*writes)
	}
	return atoi(t, m[3]), out
}

// TestGenerateAndWrite runs generate and write at tiny sizes, so the
// maintainers' measurement cannot rot, and checks the generated workspace
// against blackboard-mcp's init and against fsstore's reading of it.
func TestGenerateAndWrite(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "gen")
	opts := fixtures.Options{Workspace: "acme", Notes: 200, Commits: 500, Seed: 3}
	out := runBinary(t, benchBinary, "generate", dir, "--notes", "200", "--commits", "500", "--name", "acme", "--seed", "3")
	if m := generateLine.FindStringSubmatch(strings.TrimSpace(out)); m == nil || m[1] != "200" || m[2] != "500" || m[3] != "501" {
		t.Fatalf("generate printed %q", out)
	}
	checkLikeInit(t, dir)
	checkReadable(t, dir, opts)

	history, _ := benchWriteRun(t, dir, 1, 50, 5)
	if history != opts.Commits+1 {
		t.Errorf("history %d, want %d", history, opts.Commits+1)
	}
	history, _ = benchWriteRun(t, dir, 3, 20, 4)
	if history != opts.Commits+1+50 {
		t.Errorf("history %d, want %d", history, opts.Commits+1+50)
	}
	if got := fixtures.Git(t, dir, "rev-list", "--count", "main"); got != strconv.Itoa(opts.Commits+1+50+60) {
		t.Errorf("rev-list --count main = %s after 110 writes on %d commits", got, opts.Commits+1)
	}
	if got := fixtures.Git(t, dir, "status", "--porcelain"); got != "" {
		t.Errorf("git status after the bench:\n%s", got)
	}
	if got := fixtures.Git(t, dir, "fsck", "--no-progress", "--no-dangling"); got != "" { // the floor probe's commits dangle
		t.Errorf("git fsck after the bench:\n%s", got)
	}
	// On a workspace with fewer notes than asked for, the bench creates its
	// own; --no-sync is passed on to the workers.
	fresh := filepath.Join(t.TempDir(), "fresh")
	runBinary(t, mcpBinary, "init", fresh)
	benchWriteRun(t, fresh, 2, 6, 3, "--no-sync")
	if got := runBinary(t, mcpBinary, "get", "--dir", fresh, "bench/note-5"); !strings.HasPrefix(got, "bb://fresh/bench/note-5 v2\n") {
		t.Errorf("get bench/note-5 after 2 writes:\n%s", got)
	}
}

// checkLikeInit compares a generated workspace with one `init` makes: the
// same repository settings, workspace files and first commit.
func checkLikeInit(t *testing.T, dir string) {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "ref")
	runBinary(t, mcpBinary, "init", ref, "--name", "acme")
	for _, p := range []string{".blackboard/config.yaml", ".blackboard/.gitignore", ".git/HEAD", ".git/config", ".git/description",
		note.StateNote + ".md"} {
		want, err := os.ReadFile(filepath.Join(ref, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil {
			t.Error(err)
			continue
		}
		// The state note says when it was made; everything else is equal.
		updated := regexp.MustCompile(`(?m)^updated: .*$`)
		if g, w := updated.ReplaceAll(got, nil), updated.ReplaceAll(want, nil); !bytes.Equal(g, w) {
			t.Errorf("%s differs from init's:\n%s\ninit's:\n%s", p, got, want)
		}
	}
	first := []string{"log", "--max-parents=0", "--format=%an <%ae>%n%B%n%cn", "--name-status", "main"}
	if got, want := fixtures.Git(t, dir, first...), fixtures.Git(t, ref, first...); got != want {
		t.Errorf("first commit:\n%s\ninit's:\n%s", got, want)
	}
}

// checkReadable opens the generated workspace with fsstore (which builds
// its derived index from the history) and reads every note, expecting the
// versions and digests the generator says it wrote; the real blackboard-mcp
// reads a few too.
func checkReadable(t *testing.T, dir string, opts fixtures.Options) {
	t.Helper()
	notes, err := fixtures.Manifest(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if cursor, err := w.Cursor(); err != nil || cursor != opts.Commits+1 {
		t.Errorf("cursor %d (%v), want %d", cursor, err, opts.Commits+1)
	}
	var probes []fixtures.Note
	for i, n := range notes {
		v, err := w.As(fsstore.OpenCaller("checker")).Get(n.Key, true)
		if err != nil {
			t.Errorf("get %s: %v", n.Key, err)
			continue
		}
		if v.Version != n.Version || v.Digest != n.Digest || v.Problem != "" {
			t.Errorf("get %s: v%d %q (problem %q), want v%d %q", n.Key, v.Version, v.Digest, v.Problem, n.Version, n.Digest)
		}
		if n.Table != (len(v.Columns) > 0) || n.Table && !strings.HasPrefix(v.Content, strings.Join(v.Columns, "\t")+"\n") {
			t.Errorf("get %s: columns %q, content %.60q; table=%v", n.Key, v.Columns, v.Content, n.Table)
		}
		if n.Blob != "" && (v.Bytes <= note.BlobThreshold || len(v.Content) != v.Bytes) {
			t.Errorf("get %s: out of line, %d bytes read of %d", n.Key, len(v.Content), v.Bytes)
		}
		if i < 3 || n.Blob != "" && len(probes) < 6 {
			probes = append(probes, n)
		}
	}
	for _, n := range probes {
		got, _, _ := strings.Cut(runBinary(t, mcpBinary, "get", "--dir", dir, n.Key), "\n")
		if want := "bb://acme/" + n.Key + " v" + strconv.Itoa(n.Version); got != want {
			t.Errorf("blackboard-mcp get %s: %q, want %q", n.Key, got, want)
		}
	}
}

// TestBenchFull is the full write measurement. It runs only with
// BLACKBOARD_BENCH=1, takes many minutes, and prints numbers without judging
// them (go test -v -run TestBenchFull -timeout 90m ./cmd/blackboard-bench):
// boards of 1,000 notes with 1,000 and 100,000 commits of history, and the
// SPEC's 100,000 notes with 100,000 commits, each written by 1, 4 and 8
// processes.
func TestBenchFull(t *testing.T) {
	fixtures.RequireBench(t)
	const total = 1000 // writes per run, shared among its processes
	for _, board := range []struct{ notes, commits int }{{1000, 1000}, {1000, 100000}, {100000, 100000}} {
		dir := filepath.Join(t.TempDir(), "board")
		out := runBinary(t, benchBinary, "generate", dir, "--notes", strconv.Itoa(board.notes),
			"--commits", strconv.Itoa(board.commits), "--name", "acme")
		t.Log(strings.TrimSpace(out))
		for _, procs := range []int{1, 4, 8} {
			_, out := benchWriteRun(t, dir, procs, total/procs, 20)
			t.Logf("notes=%d\n%s", board.notes, strings.TrimSpace(out))
		}
	}
}

// floorFiles lists the floor probe's note files in the work tree at dir
// (git passes over them: they are named as the program's temporary files).
func floorFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if strings.Contains(d.Name(), floorFile) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// looseObjects counts the loose objects of the repository at dir.
func looseObjects(t *testing.T, dir string) int {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "??", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// Every floor commit writes all a commit of new content must: a probe run
// again on the same notes writes its blob, trees and commit again, and
// does not find them left by the last run (a floor that skipped them was
// cheaper than any commit can be). Its note files lie beside the notes.
func TestFloorProbeWritesEveryObject(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	notes := []string{"t/n1", "t/n2", "t/n3"}
	for run := range 2 {
		p, err := newFloorProbe(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		before := looseObjects(t, dir)
		if _, err := probeNotes(p, notes, 0, len(notes)); err != nil {
			t.Fatal(err)
		}
		// A blob, the trees of t/ and of the root, and a commit a note.
		if got := looseObjects(t, dir) - before; got != 4*len(notes) {
			t.Errorf("run %d wrote %d objects for %d floor commits, want %d", run, got, len(notes), 4*len(notes))
		}
		if got := floorFiles(t, dir); len(got) != len(notes) || filepath.Base(filepath.Dir(got[0])) != "t" {
			t.Errorf("run %d: the probe's note files are %v, want 3 in t/", run, got)
		}
		if err := p.close(); err != nil {
			t.Fatal(err)
		}
	}
	if left := floorFiles(t, dir); len(left) > 0 {
		t.Errorf("files left after close: %v", left)
	}
}

// TestReadThroughMCP runs the read bench on a small generated board: every
// figure is printed, through MCP and in this process, and the writes it
// made are on the branch.
func TestReadThroughMCP(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "gen")
	runBinary(t, benchBinary, "generate", dir, "--notes", "300", "--commits", "300", "--name", "acme", "--seed", "5")
	out := runBinary(t, benchBinary, "read", "--dir", dir, "--server", mcpBinary, "--rounds", "2", "--writes", "5")
	for _, want := range []string{"read board=gen notes=", "list_keys", "limit 100 table", "get_state 20 digests",
		"search_keys cache hit rate fell", "update_state p99", "a new server's first answer", "server memory settled / peak",
		"first server on a copy: memory settled / peak"} {
		if !strings.Contains(out, want) {
			t.Errorf("read printed no %q:\n%s", want, out)
		}
	}
	if got := fixtures.Git(t, dir, "rev-list", "--count", "main"); got != "311" {
		t.Errorf("rev-list --count main = %s after 10 writes on 301 commits", got)
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".bench-copy-*")); len(matches) > 0 {
		t.Errorf("the copy of the board is left behind: %v", matches)
	}
}

// TestReadBeside runs the read bench of two servers side by side (here
// the same build twice): every call has a row of both, and neither
// server's copy of the board is left behind.
func TestReadBeside(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "gen")
	runBinary(t, benchBinary, "generate", dir, "--notes", "200", "--commits", "200", "--name", "acme", "--seed", "7")
	out := runBinary(t, benchBinary, "read", "--dir", dir, "--server", mcpBinary, "--beside", mcpBinary,
		"--turns", "2", "--rounds", "2", "--writes", "3")
	for _, want := range []string{"turns=2", "B/A p50", "limit 100 table", "get_state 20 digests", "update_state (3 writes a turn)",
		"a new server's first answer (list_keys), last turn", "server memory settled / peak, last turn"} {
		if !strings.Contains(out, want) {
			t.Errorf("read --beside printed no %q:\n%s", want, out)
		}
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".bench-beside-*")); len(matches) > 0 {
		t.Errorf("the copies of the board are left behind: %v", matches)
	}
}

// TestWriteWithPagesOpen runs the write bench with pages of the board open
// in every other run: both runs print their figures and their ratio, every
// page ends on the board's last cursor, and no write is lost.
func TestWriteWithPagesOpen(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "gen")
	runBinary(t, benchBinary, "generate", dir, "--notes", "200", "--commits", "200", "--name", "acme", "--seed", "3")
	out := runBinary(t, benchBinary, "write", "--dir", dir, "--procs", "3", "--writes", "8", "--notes", "4",
		"--pages", "5", "--runs", "2", "--server", mcpBinary)
	for _, want := range []string{"run=1 procs=3 pages=0 ", "run=2 procs=3 pages=5 converged=", "pages=5/none rate=",
		"acked=48 commits=48 lost=0"} {
		if !strings.Contains(out, want) {
			t.Errorf("write with pages printed no %q:\n%s", want, out)
		}
	}
	if m := regexp.MustCompile(`moves=(\d+) fetches=(\d+)`).FindStringSubmatch(out); m == nil || atoi(t, m[1]) == 0 || atoi(t, m[2]) == 0 {
		t.Errorf("the open pages saw no move, or fetched nothing:\n%s", out)
	}
}
