package gitver_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The second program process of TestMixedWritersLoseNothing is this test
// binary started with these variables; see TestMain.
const (
	writerEnv      = "GITVER_TEST_WRITER_DIR"
	writerCountEnv = "GITVER_TEST_WRITER_COUNT"
	writerGoEnv    = "GITVER_TEST_WRITER_GO" // a file whose appearance starts every writer at once
)

// commitLoop makes n commits on the branch through gitver, each adding
// prefix/<i>.md on top of the head it has just read, and retries a commit
// whenever another writer moved the branch first. ack is called with every
// commit once UpdateBranch has acknowledged it.
func commitLoop(r *gitver.Repo, prefix string, n int, ack func(gitver.Hash)) error {
	for i := 0; i < n; {
		head, err := r.Head()
		if err != nil {
			return err
		}
		path := fmt.Sprintf("%s/%d.md", prefix, i)
		blob, err := r.WriteBlob(fmt.Appendf(nil, "%s %d\n", prefix, i))
		if err != nil {
			return err
		}
		sig := gitver.Signature{Name: prefix, Email: prefix + "@blackboard.local", When: time.Now()}
		c, err := r.Commit(gitver.CommitRequest{
			Parent: head, Changes: map[string]gitver.Hash{path: blob}, Author: sig, Message: "add " + path + "\n",
		})
		if err != nil {
			return err
		}
		switch err := r.UpdateBranch(head, c, sig, "commit: add "+path); {
		case err == nil:
			ack(c)
			i++
		case errors.Is(err, gitver.ErrBranchMoved):
		default:
			return err
		}
	}
	return nil
}

// runWriterProcess is the body of the second program process: it waits for
// the start signal, commits through gitver with fsync on, and prints every
// acknowledged commit on its own line.
func runWriterProcess(dir string) int {
	n, err := strconv.Atoi(os.Getenv(writerCountEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for _, err := os.Stat(os.Getenv(writerGoEnv)); err != nil; _, err = os.Stat(os.Getenv(writerGoEnv)) {
		time.Sleep(5 * time.Millisecond)
	}
	r, err := gitver.Open(dir, gitver.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if err := commitLoop(r, "proc", n, func(h gitver.Hash) { fmt.Fprintln(out, h) }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// cliWriter is the C git CLI committing the way a script or an editor
// plugin does: build a tree from the current head in a private index, make a
// commit on it, and move the branch only if it still points to that head
// (`git update-ref <ref> <new> <old>`, a compare-and-swap under the same
// lock file), retrying when the swap fails. It prints each acknowledged
// commit.
const cliWriter = `
set -u
until [ -e "$GO" ]; do sleep 0.005; done
i=0
while [ "$i" -lt "$N" ]; do
	old=$(git rev-parse --verify refs/heads/main) || exit 1
	GIT_INDEX_FILE="$IDX" git read-tree "$old" || exit 1
	blob=$(echo "cli $i" | git hash-object -w --stdin) || exit 1
	GIT_INDEX_FILE="$IDX" git update-index --add --cacheinfo "100644,$blob,cli/$i.md" || exit 1
	tree=$(GIT_INDEX_FILE="$IDX" git write-tree) || exit 1
	new=$(echo "add cli/$i.md" | git commit-tree "$tree" -p "$old") || exit 1
	if git update-ref -m "commit: add cli/$i.md" refs/heads/main "$new" "$old" 2>/dev/null; then
		echo "$new"
		i=$((i+1))
	fi
done
`

// TestMixedWritersLoseNothing races three kinds of writers on one branch:
// two goroutines of this process sharing one Repo, a second process of this
// program, and a shell loop of the C git CLI, 100 commits each side. Every
// writer builds on the head it read and moves the branch by compare-and-swap
// under refs/heads/main.lock. Afterwards every acknowledged commit is on the
// first-parent chain of the branch, the chain holds nothing else, the final
// tree holds every file any writer added with its content (no writer built on
// a head that another then overwrote), no lock is left, and git fsck is clean.
func TestMixedWritersLoseNothing(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel() // most of its time is spent in other processes
	const perSide = 100
	r, dir := newRepo(t)
	root := commitAndMove(t, r, "root", map[string]string{"README.md": "mixed writers\n"})
	start := filepath.Join(t.TempDir(), "go")

	var cliOut, procOut, cliErr, procErr bytes.Buffer
	cli := exec.Command("sh", "-c", cliWriter)
	cli.Dir = dir
	cli.Env = append(fixtures.PersonEnv(), "GO="+start, "N="+strconv.Itoa(perSide), "IDX="+filepath.Join(t.TempDir(), "index"))
	cli.Stdout, cli.Stderr = &cliOut, &cliErr
	proc := exec.Command(os.Args[0], "-test.run=^$")
	proc.Env = append(os.Environ(), writerEnv+"="+dir, writerCountEnv+"="+strconv.Itoa(perSide), writerGoEnv+"="+start)
	proc.Stdout, proc.Stderr = &procOut, &procErr
	for _, cmd := range []*exec.Cmd{cli, proc} {
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", cmd.Path, err)
		}
	}
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var inProcess []gitver.Hash
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = commitLoop(r, fmt.Sprintf("go%d", g), perSide/2, func(h gitver.Hash) {
				mu.Lock()
				inProcess = append(inProcess, h)
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	for g, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", g, err)
		}
	}
	if err := cli.Wait(); err != nil {
		t.Errorf("git CLI writer: %v\n%s", err, cliErr.String())
	}
	if err := proc.Wait(); err != nil {
		t.Errorf("second program process: %v\n%s", err, procErr.String())
	}
	if t.Failed() {
		t.FailNow()
	}

	acked := map[string][]string{"this process": hashStrings(inProcess),
		"second process": strings.Fields(procOut.String()), "git CLI": strings.Fields(cliOut.String())}
	chain := strings.Fields(fixtures.GitOutput(t, dir, "rev-list", "--first-parent", "main"))
	onChain := make(map[string]bool, len(chain))
	for _, h := range chain {
		onChain[h] = true
	}
	total := 0
	for side, hashes := range acked {
		if len(hashes) != perSide {
			t.Errorf("%s acknowledged %d commits, want %d", side, len(hashes), perSide)
		}
		total += len(hashes)
		lost := 0
		for _, h := range hashes {
			if !onChain[h] {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("%s: %d of %d acknowledged commits are not on the first-parent chain of main", side, lost, len(hashes))
		}
	}
	if got, want := len(chain), total+1; got != want {
		t.Errorf("git rev-list --first-parent main lists %d commits, want %d (every acknowledged commit and the root)", got, want)
	}
	if got := chain[len(chain)-1]; got != root.String() {
		t.Errorf("first commit of the chain = %s, want the root %s", got, root)
	}
	if got := strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-list", "--count", "--merges", "main")); got != "0" {
		t.Errorf("git rev-list --merges --count main = %s, want 0", got)
	}

	want := map[string]string{"README.md": "100644 blob " + gitver.BlobHash([]byte("mixed writers\n")).String()}
	for _, prefix := range []string{"go0", "go1", "proc", "cli"} {
		n := perSide
		if strings.HasPrefix(prefix, "go") {
			n = perSide / 2
		}
		for i := range n {
			want[fmt.Sprintf("%s/%d.md", prefix, i)] = "100644 blob " + gitver.BlobHash(fmt.Appendf(nil, "%s %d\n", prefix, i)).String()
		}
	}
	if d := diffMaps(lsTree(t, dir, "main"), want); d != "" {
		t.Errorf("the final tree is not the union of every writer's files:\n%s", d)
	}
	if _, err := os.Stat(r.LockPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is left behind (stat: %v)", r.LockPath(), err)
	}
	fsck(t, dir)
	t.Logf("first-parent chain of %d commits; the writer changed %d times along it", len(chain), sideSwitches(t, dir))
}

func hashStrings(hs []gitver.Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

// sideSwitches counts how often consecutive commits of main come from
// different writers: a measure of how much the writers really interleaved.
func sideSwitches(t testing.TB, dir string) int {
	authors := strings.Split(strings.TrimSpace(fixtures.GitOutput(t, dir, "log", "--first-parent", "--format=%an", "main")), "\n")
	n := 0
	for i := 1; i < len(authors); i++ {
		if authors[i] != authors[i-1] {
			n++
		}
	}
	return n
}
