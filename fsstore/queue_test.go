package fsstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/pipeline"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// twoClones makes a board with a bare remote and two clones of it, a and b.
func twoClones(t *testing.T) (a, b *Workspace, bare string) {
	t.Helper()
	fixtures.RequireGit(t)
	root := t.TempDir()
	bare = filepath.Join(root, "board.git")
	fixtures.Git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	a = newWorkspace(t, false)
	if err := a.SetRemote(context.Background(), "file://"+bare); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "b")
	if err := Clone(context.Background(), "file://"+bare, dir); err != nil {
		t.Fatal(err)
	}
	return a, openWorkspace(t, dir, false), bare
}

// A write whose push meets another clone's push to a note it does not
// touch is built again on that push, checked again, pushed, and
// acknowledged with the version it was built with; nothing of its first
// build remains. Against a push to the note it writes, it is built again
// and checked again: a conflict.
func TestAWriteMeetsAnotherClonesPush(t *testing.T) {
	t.Run("another note", func(t *testing.T) {
		a, b, bare := twoClones(t)
		builds := countBuilds(t, func() { put(t, b, "t/theirs", 0, "theirs", "from b") }) // pushed first
		res := put(t, a, "t/mine", 0, "mine", "from a")
		if res.Version != 1 {
			t.Errorf("acknowledged as version %d, want 1", res.Version)
		}
		if *builds != 2 {
			t.Errorf("the write was built %d times, want twice (built again on b's push)", *builds)
		}
		log := fixtures.Git(t, bare, "log", "--format=%s", "-2", "main")
		if !strings.HasPrefix(log, "update t/mine v1: mine") || !strings.Contains(log, "update t/theirs v1: theirs") {
			t.Errorf("the remote's last two commits:\n%s\nwant b's write, then a's on it", log)
		}
		if got := readFile(t, a, "t/theirs.md"); !strings.HasSuffix(got, "from b") {
			t.Errorf("a's clone holds %q for b's note", got)
		}
		assertClean(t, a)
	})
	t.Run("the same note", func(t *testing.T) {
		a, b, _ := twoClones(t)
		put(t, a, "t/shared", 0, "shared 1", "1")
		if err := b.FetchRemote(context.Background()); err != nil {
			t.Fatal(err)
		}
		countBuilds(t, func() { put(t, b, "t/shared", 1, "shared 2 by b", "2b") })
		body := "2a"
		_, err := agentView(a).Update(UpdateRequest{URI: "t/shared", Digest: "shared 2 by a", Body: &body, ExpectVersion: ptr(1)})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("a's write over b's: %v, want a conflict", err)
		}
		if got := get(t, a, "t/shared"); got.Version != 2 || !strings.Contains(got.Content, "2b") {
			t.Errorf("a reads v%d %q, want b's version 2", got.Version, got.Content)
		}
		assertClean(t, a)
	})
}

// countBuilds counts the batches built and about to be pushed, and runs
// other (another clone's write, whose own builds
// are not counted) when the first is.
func countBuilds(t *testing.T, other func()) *int {
	builds, inOther := new(int), false
	onSteps(t, func(step string) {
		if step != "built" || inOther {
			return
		}
		if *builds++; *builds == 1 {
			inOther = true
			other()
			inOther = false
		}
	})
	return builds
}

// On a board without a remote, writes that come while another is being
// committed are committed together: each its own commit, checked against
// its own expect_version, the branch moved once for the group. Racing
// writers of one note: exactly one wins each version.
func TestLocalWritesCommittedTogether(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, true) // durable: the group's objects are synced once
	const writers, each, versions = 12, 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*each+64)
	for i := range writers {
		wg.Go(func() {
			for n := range each {
				body := fmt.Sprintf("writer %d write %d", i, n)
				res, err := agentView(w).Update(UpdateRequest{URI: fmt.Sprintf("g/w%d", i), Digest: body, Body: &body, ExpectVersion: ptr(n)})
				switch {
				case err != nil:
					errs <- err
				case res.Version != n+1:
					errs <- fmt.Errorf("writer %d: write %d acknowledged as version %d", i, n, res.Version)
				}
			}
		})
	}
	// Eight racers for each version of one note, each with content of its
	// own (a write of what the note holds already is no new version).
	var wins [versions]atomic.Int32
	for r := range 8 {
		wg.Go(func() {
			for v := 0; v < versions; {
				body := fmt.Sprintf("racer %d for version %d", r, v+1)
				res, err := agentView(w).Update(UpdateRequest{URI: "g/contended", Digest: body, Body: &body, ExpectVersion: ptr(v)})
				switch {
				case err == nil && res.Version == v+1:
					wins[v].Add(1)
					v++
				case err == nil:
					errs <- fmt.Errorf("racer %d: expect_version %d acknowledged as version %d", r, v, res.Version)
					return
				case !errors.Is(err, ErrConflict):
					errs <- err
					return
				default:
					n, err := agentView(w).Get("g/contended", false)
					if err != nil {
						errs <- err
						return
					}
					v = n.Version
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for v := range wins {
		if got := wins[v].Load(); got != 1 {
			t.Errorf("version %d of the contended note: %d writers won it, want 1", v+1, got)
		}
	}
	log := strings.Split(strings.TrimSpace(fixtures.Git(t, w.Dir(), "log", "--format=%s")), "\n")
	if got := len(log); got != 1+writers*each+versions {
		t.Errorf("%d commits, want the init commit and %d writes, each its own", got, writers*each+versions)
	}
	reflog := fixtures.Git(t, w.Dir(), "reflog", "--format=%gs", "main")
	if !regexp.MustCompile(`blackboard: commit ([2-9]|[1-9][0-9]+) writes`).MatchString(reflog) {
		t.Errorf("the branch never moved for a group of writes:\n%s", reflog)
	}
	if st := fixtures.Git(t, w.Dir(), "status", "--porcelain"); st != "" {
		t.Errorf("git status after the writes:\n%s", st)
	}
	fixtures.Git(t, w.Dir(), "fsck", "--no-progress", "--strict")
}

// A commit of a batch's chain that changed a note's blob file alone (a
// second write of one digest by one agent within a second: the note's file
// is the same) is a version of the note, as the derived index counts it;
// counted as none, a write built on it would pass its expect_version check
// on a stale version and give that version a second time.
func TestChainNoteCountsAChangeOfTheBlobFileAlone(t *testing.T) {
	w := newWorkspace(t, false)
	large := strings.Repeat("large ", 3000)
	if _, err := agentView(w).Update(UpdateRequest{URI: "t/big", Digest: "d", Body: ptr("first " + large), ExpectVersion: ptr(0)}); err != nil {
		t.Fatal(err)
	}
	var blobFile string
	for _, f := range strings.Fields(fixtures.Git(t, w.Dir(), "ls-files", "t")) {
		if f != "t/big.md" {
			blobFile = f
		}
	}
	if blobFile == "" {
		t.Fatal("the large write left no blob file")
	}
	err := w.lock.with(func() error {
		head, err := w.repo.Head()
		if err != nil {
			return err
		}
		content := []byte("second " + large)
		earlier, err := w.repo.Commit(gitver.CommitRequest{Parent: head, Author: w.agentSignature("other"), Message: "update t/big v2",
			Changes: map[string]gitver.Hash{blobFile: gitver.BlobHash(content)}, Blobs: [][]byte{content}})
		if err != nil {
			return err
		}
		n, err := w.pipe.TxAt(head, earlier).ChainNote("t/big")
		if err != nil {
			return err
		}
		if n.Version != 2 {
			t.Errorf("the note after an earlier write of the batch changed its blob file alone is at v%d, want v2", n.Version)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A write on a clone with a remote brings the derived index to the branch
// it moved, in the same hold of the write lock. Left to whoever reads
// next, every reader would catch it up at once, each waiting for the
// others' index transactions, the next write's build among them.
func TestPushedWriteCatchesTheIndexUp(t *testing.T) {
	a, _, bare := twoClones(t)
	put(t, a, "t/a", 0, "first", "first body")
	pushed := strings.TrimSpace(fixtures.Git(t, bare, "rev-parse", "main"))
	if head, err := a.repo.Head(); err != nil || head.String() != pushed {
		t.Fatalf("the branch is at %v (%v), want the pushed write %s", head, err, pushed)
	}
	if indexed, _, err := a.idx.Head(); err != nil || indexed.String() != pushed {
		t.Errorf("the derived index is at %v (%v) once the write is pushed, want %s", indexed, err, pushed)
	}
}

// A write whose push fails (the remote is gone) is refused, and nothing of
// it is left to be pushed later: once the remote is back, the next write
// pushes itself alone, and the refused write is in no clone's history.
func TestRefusedWriteIsNeverPushed(t *testing.T) {
	a, b, bare := twoClones(t)
	put(t, a, "t/first", 0, "first", "1")
	away := bare + ".away"
	if err := os.Rename(bare, away); err != nil {
		t.Fatal(err)
	}
	body := "refused"
	_, err := agentView(a).Update(UpdateRequest{URI: "t/refused", Digest: "refused write", Body: &body, ExpectVersion: ptr(0)})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a write while the remote is gone: %v, want unavailable", err)
	}
	if err := os.Rename(away, bare); err != nil {
		t.Fatal(err)
	}
	put(t, a, "t/second", 0, "second", "2")
	if err := b.FetchRemote(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{bare, a.Dir(), b.Dir()} {
		if log := fixtures.Git(t, dir, "log", "--format=%s", "main"); strings.Contains(log, "refused write") {
			t.Errorf("the refused write is in %s's history:\n%s", dir, log)
		}
	}
	if log := fixtures.Git(t, bare, "log", "--format=%s", "main"); !strings.Contains(log, "update t/second v1") {
		t.Errorf("the write after the remote came back is not on it:\n%s", log)
	}
	assertClean(t, a)
}

// A group's writes are built one on another, and the branch moves under
// the round when a person's edit of the next write's note is committed
// first: that write and those after it are built on the person's commit,
// and the ones before are no longer in the chain that is published. Each
// is acknowledged only once git holds it.
func TestGroupWritesBuiltAcrossAPersonsCommitAllLand(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	const writers, each = 4, 10
	for i := range writers {
		body := "start\n"
		if _, err := agentView(w).Update(UpdateRequest{URI: fmt.Sprintf("g/w%d", i), Digest: "log", Body: &body, ExpectVersion: ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	var acked sync.Map // line -> note
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			for n := range each {
				line := fmt.Sprintf("w%d-%d", i, n)
				text := line + "\n"
				res, err := agentView(w).Update(UpdateRequest{URI: fmt.Sprintf("g/w%d", i), Digest: "log", AppendText: &text})
				if err != nil {
					t.Errorf("append %s: %v", line, err)
					return
				}
				acked.Store(line, res.Version)
			}
		})
	}
	// A person appends to the notes' files meanwhile, by hand: each build
	// commits their edit of its note first.
	person := make(chan struct{})
	go func() {
		defer close(person)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			f, err := os.OpenFile(filepath.Join(w.Dir(), "g", fmt.Sprintf("w%d.md", n%writers)), os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				fmt.Fprintf(f, "p-%d\n", n)
				f.Close()
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	<-person
	history := fixtures.Git(t, w.Dir(), "log", "-p", "--format=", "--", "g")
	acked.Range(func(k, v any) bool {
		if !strings.Contains(history, "+"+k.(string)+"\n") {
			t.Errorf("acknowledged append %s (version %d) is in no commit", k, v)
		}
		return true
	})
}

// TestAddedUpIsTheChainsDiff: for random chains of commits (files added,
// changed, deleted and brought back to what they held), what a batch's
// move and derived index take as the chain's changes, added up from each
// commit's, is what git's trees give from the chain's parent to its tip.
func TestAddedUpIsTheChainsDiff(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	repo := w.repo
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 11))
	paths := []string{"a/x.md", "a/y.md", "a.md", "b/c/z.md", "b/c.md", "b-c.md"}
	var blobs []gitver.Hash
	for _, content := range []string{"one\n", "two\n", "three\n"} {
		h, err := repo.WriteBlob([]byte(content))
		if err != nil {
			t.Fatal(err)
		}
		blobs = append(blobs, h)
	}
	parent, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		start := parent
		var diffs [][]gitver.PathChange
		for range 1 + rng.IntN(6) {
			changes := map[string]gitver.Hash{}
			for range 1 + rng.IntN(3) {
				h := gitver.ZeroHash
				if rng.IntN(4) > 0 {
					h = blobs[rng.IntN(len(blobs))]
				}
				changes[paths[rng.IntN(len(paths))]] = h
			}
			c, err := repo.Commit(gitver.CommitRequest{Parent: parent, Changes: changes, Author: gitver.Signature{Name: "t", Email: "t@example.com", When: time.Now()}, Message: "m\n"})
			if err != nil {
				t.Fatal(err)
			}
			info, err := repo.ReadCommit(c)
			if err != nil {
				t.Fatal(err)
			}
			diff, err := repo.Changes(info)
			if err != nil {
				t.Fatal(err)
			}
			diffs = append(diffs, diff)
			parent = c
		}
		want, err := w.hist.ChangedSince(start, parent)
		if err != nil {
			t.Fatal(err)
		}
		if got := pipeline.AddedUp(diffs); !slices.Equal(got, want) {
			t.Fatalf("round %d: added up %v; git's trees give %v", round, got, want)
		}
	}
}

// A clone that has not fetched yet answers a write's expect_version
// against what the remote holds, where the write counts: the version
// another clone pushed is no conflict, once the clone follows it.
func TestAStaleCloneChecksAgainstTheRemote(t *testing.T) {
	a, b, _ := twoClones(t)
	put(t, a, "t/n", 0, "first, from a", "1")
	body := "2"
	res, err := agentView(b).Update(UpdateRequest{URI: "t/n", Digest: "second, from b", Body: &body, ExpectVersion: ptr(1)})
	if err != nil {
		t.Fatalf("b's write at version 1, which the remote holds: %v", err)
	}
	if res.Version != 2 {
		t.Errorf("acknowledged as version %d, want 2", res.Version)
	}
	assertClean(t, b)
}
