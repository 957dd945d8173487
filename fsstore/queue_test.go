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

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
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

// A write built on the pending writes meets another clone's push to a note
// it does not touch: the chain is rebased on that push and pushed again,
// the write not built again, and acknowledged with the version it was
// built with. Against a push to the note it writes, it is built again and
// checked again: a conflict.
func TestPendingWritesAreRebasedOnAnotherClonesPush(t *testing.T) {
	t.Run("another note", func(t *testing.T) {
		a, b, bare := twoClones(t)
		builds := countBuilds(t, func() { put(t, b, "t/theirs", 0, "theirs", "from b") }) // pushed first
		res := put(t, a, "t/mine", 0, "mine", "from a")
		if res.Version != 1 {
			t.Errorf("acknowledged as version %d, want 1", res.Version)
		}
		if *builds != 1 {
			t.Errorf("the write was built %d times, want once (rebased, not built again)", *builds)
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

// countBuilds counts the writes built on the pending writes and about to
// be published, and runs other (another clone's write, whose own builds
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

// A pending commit that changed a note's blob file alone (a second write of
// one digest by one agent within a second: the note's file is the same) is
// a version of the note, as the derived index counts it; counted as none, a
// write built on it would pass its expect_version check on a stale version
// and give that version a second time.
func TestPendingNoteCountsAChangeOfTheBlobFileAlone(t *testing.T) {
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
		head, err := w.b.repo.Head()
		if err != nil {
			return err
		}
		content := []byte("second " + large)
		pending, err := w.b.repo.Commit(gitver.CommitRequest{Parent: head, Author: w.b.agentSignature("other"), Message: "update t/big v2",
			Changes: map[string]gitver.Hash{blobFile: gitver.BlobHash(content)}, Blobs: [][]byte{content}})
		if err != nil {
			return err
		}
		n, err := (&writeTx{q: w.pipe, head: head, base: pending, tip: pending}).pendingNote("t/big")
		if err != nil {
			return err
		}
		if n.Version != 2 {
			t.Errorf("the note after a pending change of its blob file alone is at v%d, want v2", n.Version)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The publisher of a group of writes brings the derived index to the
// branch it moved, in the same hold of the write lock. Left to whoever
// reads next, every watching process would catch it up at once, each
// waiting for the others' index transactions, the next write's build among
// them.
func TestGroupPublisherCatchesTheIndexUp(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "first", "first body")
	before := readFile(t, w, "t/a.md")
	var pending gitver.Hash
	err := w.lock.with(func() error {
		head, err := w.b.repo.Head()
		if err != nil {
			return err
		}
		content := []byte(strings.ReplaceAll(before, "first", "second"))
		if pending, err = w.b.repo.Commit(gitver.CommitRequest{Parent: head, Author: w.b.agentSignature("other"),
			Message: "update t/a v2: second", Changes: map[string]gitver.Hash{"t/a.md": gitver.BlobHash(content)},
			Blobs: [][]byte{content}}); err != nil {
			return err
		}
		return w.pipe.pending.save(pending)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.pipe.publishPending(nil); err != nil {
		t.Fatal(err)
	}
	if head, err := w.b.repo.Head(); err != nil || head != pending {
		t.Fatalf("the branch is at %v (%v), want the pending write %v", head, err, pending)
	}
	if indexed, _, err := w.b.idx.Head(); err != nil || indexed != pending {
		t.Errorf("the derived index is at %v (%v) once the group is published, want %v", indexed, err, pending)
	}
}

// The pending writes' record is written over in place, the same file
// every time: no file is made or freed per write. A reader that meets it
// half written (a torn read, as one without the write lock may) reads it
// again until it is whole; one that stays damaged names no pending writes;
// one an earlier version renamed into place reads as it did.
func TestPendingRecordInPlace(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	p := filepath.Join(w.b.repo.GitDir(), pendingName)
	tip := gitver.BlobHash([]byte("a commit, as far as the record cares"))
	read := func() (gitver.Hash, []string) {
		t.Helper()
		got, packs, err := w.pipe.pending.read()
		if err != nil {
			t.Fatal(err)
		}
		return got, packs
	}

	if err := w.pipe.pending.save(tip, "p1", "p2", "p3"); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.pipe.pending.save(tip, "p4"); err != nil { // shorter: what is left of the longer one is no part of it
		t.Fatal(err)
	}
	if got, packs := read(); got != tip || !slices.Equal(packs, []string{"p4"}) {
		t.Errorf("read %v %v, want %v [p4]", got, packs, tip)
	}
	if err := w.pipe.pending.save(gitver.ZeroHash); err != nil {
		t.Fatal(err)
	}
	if got, packs := read(); !got.IsZero() || len(packs) != 0 {
		t.Errorf("no pending writes read as %v %v", got, packs)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the record was replaced by a new file")
	}

	// Torn: the header of a new record over the body of the old one, until
	// its writer finishes.
	whole := pendingRecord(tip.String() + "\np5\n")
	torn := whole[:strings.Index(whole, "\n")+1] + strings.Repeat("x", len(whole))
	if err := os.WriteFile(p, []byte(torn), 0o644); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		time.Sleep(5 * time.Millisecond)
		wrote <- os.WriteFile(p, []byte(whole), 0o644)
	}()
	if got, packs := read(); got != tip || !slices.Equal(packs, []string{"p5"}) {
		t.Errorf("read %v %v once the record was whole, want %v [p5]", got, packs, tip)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}

	// Damaged for good (zeros after a power failure): nothing is pending.
	if err := os.WriteFile(p, make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(); !got.IsZero() {
		t.Errorf("a damaged record names %v", got)
	}

	// An earlier version's file.
	if err := os.WriteFile(p, []byte(tip.String()+"\np6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, packs := read(); got != tip || !slices.Equal(packs, []string{"p6"}) {
		t.Errorf("an earlier version's file read as %v %v", got, packs)
	}
}

// A writer of another process that is building its write (its shared
// flock on buildingName, taken here through a file of its own) makes a
// publisher wait for it to join, maxBuildersWait at most.
func TestWritersWaitForOthersBuilding(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	other, err := os.OpenFile(filepath.Join(w.b.repo.GitDir(), buildingName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := flock(other, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}

	defer func(was time.Duration) { maxBuildersWait = was }(maxBuildersWait)
	maxBuildersWait = time.Minute
	waited := make(chan struct{})
	go func() {
		w.pipe.pub.waitForBuilders()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("the publisher did not wait for the writer building")
	case <-time.After(50 * time.Millisecond):
	}
	if err := flock(other, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher still waits once the writer has built")
	}

	maxBuildersWait = 20 * time.Millisecond
	if err := flock(other, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	defer time.AfterFunc(10*time.Second, func() { _ = flock(other, unix.LOCK_UN) }).Stop() // a hang becomes a failure
	began := time.Now()
	w.pipe.pub.waitForBuilders()
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the publisher waited %v for a writer that never finished, past maxBuildersWait", d)
	}
}

// A publisher waits for the others' builds before it takes the publish
// lock, not while it holds it: the writers of the last group learn through
// that lock that their writes are on the branch, and go on to their next
// writes, which then join.
func TestPublisherWaitsWithoutThePublishLock(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a body")
	gitDir := w.b.repo.GitDir()
	builder, err := os.OpenFile(filepath.Join(gitDir, buildingName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer builder.Close()
	lastGroup, err := os.OpenFile(filepath.Join(gitDir, publishLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lastGroup.Close()

	defer func(was time.Duration) { maxBuildersWait = was }(maxBuildersWait)
	maxBuildersWait = time.Minute
	w.pipe.pub.lastChain.Store(3) // its last push carried other processes' writes
	w.pipe.pub.lastAt.Store(time.Now().UnixNano())
	if err := flock(builder, unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	published := make(chan error, 1)
	go func() {
		_, _, err := w.pipe.publishPending(nil)
		published <- err
	}()
	time.Sleep(20 * time.Millisecond) // past batchLinger: waiting for the builder now
	select {
	case err := <-published:
		t.Fatalf("published (%v) while another process was building", err)
	default:
	}
	if err := flock(lastGroup, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatalf("the publish lock is held while the publisher waits for builds: %v", err)
	}
	if err := flock(lastGroup, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := flock(builder, unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher still waits once the build is done")
	}
}

// buildPendingWrite builds one write of uri on the pending writes of w and
// records it there, as a writer of a group does before the publish; it
// returns the write, as its queue holds it.
func buildPendingWrite(t *testing.T, w *Workspace, uri, digest string) *queuedWrite {
	t.Helper()
	addr, err := w.b.parseAddress(uri)
	if err != nil {
		t.Fatal(err)
	}
	body := digest + "\n"
	req := UpdateRequest{URI: uri, Digest: digest, Body: &body}
	q := &queuedWrite{op: "update", uri: uri, unfinished: func(error) {}}
	q.attempt = func(tx *writeTx) error {
		_, err := agentView(w).updateLocked(tx, "update", addr, digest, nil, "", &req)
		return err
	}
	err = w.lock.with(func() error {
		defer w.b.repo.DropStaged()
		var built builtTip
		var err error
		if q.mine, _, err = w.pipe.buildPending(q.op, q.uri, q.attempt, &built); err != nil {
			return err
		}
		sha, err := w.b.repo.WriteStaged()
		if err != nil {
			return err
		}
		return w.pipe.pending.save(built.tip, append(w.b.repo.StillPending(w.pipe.pending.packs()), sha)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// A writer whose publish failed answers what git holds: refused, its write
// is dropped from the pending writes first, so that another process's
// publisher, which read the chain before, never puts it on the branch;
// acknowledged (with the failure as a warning) when another publisher put
// it there already.
func TestRefusedWriteIsNeverPublished(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	other := openWorkspace(t, w.Dir(), false) // another process's publisher
	failed := errors.New("the publish failed")

	refused := buildPendingWrite(t, w, "t/refused", "refused write")
	w.pipe.settleRefused([]*queuedWrite{refused}, failed)
	if !errors.Is(refused.err, failed) {
		t.Fatalf("the write whose publish failed was answered %v, want refused", refused.err)
	}
	if acked, _, err := other.pipe.publishPending(nil); err != nil || acked {
		t.Fatalf("another publisher after the refusal: acked %v, %v", acked, err)
	}
	if log := fixtures.Git(t, w.Dir(), "log", "--format=%s"); strings.Contains(log, "refused write") {
		t.Fatalf("a refused write is in git:\n%s", log)
	}

	var warned error
	published := buildPendingWrite(t, w, "t/published", "published write")
	published.unfinished = func(err error) { warned = err }
	if _, _, err := other.pipe.publishPending(nil); err != nil {
		t.Fatal(err)
	}
	w.pipe.settleRefused([]*queuedWrite{published}, failed)
	if published.err != nil || !errors.Is(warned, failed) {
		t.Fatalf("a write another publisher put on the branch was answered %v (warning %v), want acknowledged with a warning", published.err, warned)
	}
	if log := fixtures.Git(t, w.Dir(), "log", "--format=%s"); !strings.Contains(log, "published write") {
		t.Fatalf("the published write is not in git:\n%s", log)
	}
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

// A batch waits for the writers writing now, not only for as many as the
// last batch held: a writer counts while it wrote within activeWindow.
func TestWritersWritingNowAreCounted(t *testing.T) {
	var wq writeQueue
	for _, w := range []string{"a", "b", "c", "a"} {
		wq.wrote(w)
	}
	if got := wq.writing(); got != 3 {
		t.Errorf("three writers wrote just now; counted %d", got)
	}
	wq.lastWrote["b"] = time.Now().Add(-2 * activeWindow)
	if got := wq.writing(); got != 2 {
		t.Errorf("one writer stopped; counted %d writing, want 2", got)
	}
	if _, kept := wq.lastWrote["b"]; kept {
		t.Error("a writer that stopped is still remembered")
	}
}

// TestAddedUpIsTheChainsDiff: for random chains of commits (files added,
// changed, deleted and brought back to what they held), what a batch's
// move and derived index take as the chain's changes, added up from each
// commit's, is what git's trees give from the chain's parent to its tip.
func TestAddedUpIsTheChainsDiff(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	repo := w.b.repo
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
		want, err := w.b.changedSince(start, parent)
		if err != nil {
			t.Fatal(err)
		}
		if got := addedUp(diffs); !slices.Equal(got, want) {
			t.Fatalf("round %d: added up %v; git's trees give %v", round, got, want)
		}
	}
}
