package watch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/watch"
)

// patience bounds every wait for a batch: generous, so that a loaded machine
// makes the suite slower, never red.
const patience = 5 * time.Second

// harness is one Watcher on a fresh tree, with the batches it delivered.
type harness struct {
	t       *testing.T
	root    string
	w       *watch.Watcher
	batches chan watch.Batch
	markers int
}

// start watches root with a short debounce unless opts says otherwise. The
// Watcher is closed when the test ends.
func start(t *testing.T, root string, opts watch.Options) *harness {
	t.Helper()
	if opts.Debounce == 0 {
		opts.Debounce = 50 * time.Millisecond
	}
	if opts.MaxDelay == 0 {
		opts.MaxDelay = time.Second
	}
	opts.Logf = t.Logf
	h := &harness{t: t, root: root, batches: make(chan watch.Batch, 1000)}
	w, err := watch.Start(root, opts, func(b watch.Batch) { h.batches <- b })
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// seen is the union of the batches received so far.
type seen struct {
	count   map[string]int // path -> how many batches reported it
	rescan  bool
	batches []watch.Batch
}

func (s *seen) add(b watch.Batch) {
	if s.count == nil {
		s.count = make(map[string]int)
	}
	for _, p := range b.Paths {
		s.count[p]++
	}
	s.rescan = s.rescan || b.Rescan
	s.batches = append(s.batches, b)
}

func (s *seen) paths() []string {
	return slices.Sorted(maps.Keys(s.count))
}

// until collects batches until done says enough, failing the test after patience.
func (h *harness) until(what string, done func(*seen) bool) *seen {
	h.t.Helper()
	s := &seen{}
	deadline := time.After(patience)
	for !done(s) {
		select {
		case b := <-h.batches:
			s.add(b)
		case <-deadline:
			h.t.Fatalf("no %s after %v; batches: %+v", what, patience, s.batches)
		}
	}
	return s
}

// settle returns everything reported for the changes made so far. It writes a
// marker file and waits for it: inotify keeps events in order and every earlier
// path is due no later than the marker, so by the time the marker is reported
// nothing earlier is still pending. The marker is left out of the result.
func (h *harness) settle() *seen {
	h.t.Helper()
	h.markers++
	marker := fmt.Sprintf("zz-marker-%d.md", h.markers)
	write(h.t, filepath.Join(h.root, marker), "marker")
	s := h.until("report of "+marker, func(s *seen) bool { return s.count[marker] > 0 })
	delete(s.count, marker)
	return s
}

// want fails unless exactly the paths in want were reported, with the Rescan wanted.
func (s *seen) want(t *testing.T, rescan bool, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := s.paths(); !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q (batches %+v)", got, want, s.batches)
	}
	if s.rescan != rescan {
		t.Errorf("Rescan = %v, want %v (batches %+v)", s.rescan, rescan, s.batches)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tree makes a workspace with the given files, each holding its own name.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		write(t, filepath.Join(root, filepath.FromSlash(f)), f+"\n")
	}
	return root
}

func TestInPlaceWrite(t *testing.T) {
	root := tree(t, "note.md", "topic/other.md")
	h := start(t, root, watch.Options{})
	write(t, filepath.Join(root, "note.md"), "changed\n")
	write(t, filepath.Join(root, "topic", "other.md"), "changed\n")
	h.settle().want(t, false, "note.md", "topic/other.md")
}

func TestTempFileRenamedOver(t *testing.T) {
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{})
	for _, temp := range []string{".note.md.tmpXYZ", "note.md.tmp"} {
		t.Run(temp, func(t *testing.T) {
			write(t, filepath.Join(root, temp), "saved through "+temp+"\n")
			must(t, os.Rename(filepath.Join(root, temp), filepath.Join(root, "note.md")))
			h.settle().want(t, false, "note.md")
		})
	}
}

// TestVimSave replays what vim does on :w with its default backupcopy=auto.
func TestVimSave(t *testing.T) {
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{})
	note := filepath.Join(root, "note.md")
	write(t, filepath.Join(root, "4913"), "")
	must(t, os.Remove(filepath.Join(root, "4913")))
	must(t, os.Rename(note, note+"~"))
	write(t, note, "saved by vim\n")
	must(t, os.Chmod(note, 0o600))
	must(t, os.Remove(note+"~"))
	h.settle().want(t, false, "note.md")
}

// TestSedInPlace: GNU sed -i writes a temporary "sedXXXXXX" beside the file and
// renames it over. The temporary name is not one editors' conventions mark, so
// it may be reported as well; the receiver finds nothing there.
func TestSedInPlace(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed on this machine")
	}
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{})
	cmd := exec.Command("sed", "-i", "s/note/edited note/", "note.md")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sed: %v: %s", err, out)
	}
	s := h.settle()
	if s.count["note.md"] == 0 {
		t.Errorf("note.md not reported; got %q", s.paths())
	}
	for _, p := range s.paths() {
		if p != "note.md" && !strings.HasPrefix(p, "sed") {
			t.Errorf("reported %q, which is neither note.md nor sed's temporary file", p)
		}
	}
	if s.rescan {
		t.Errorf("Rescan after sed -i; batches %+v", s.batches)
	}
	t.Logf("sed -i reported %q", s.paths())
}

func TestNewDirectoryThenFile(t *testing.T) {
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{})
	// Written right after mkdir, before the watcher can have added a watch
	// on a/b: only the scan of the new directory can find it.
	write(t, filepath.Join(root, "a", "b", "c.md"), "new\n")
	h.settle().want(t, false, "a/b/c.md")

	// The new directories are watched from now on.
	write(t, filepath.Join(root, "a", "b", "c.md"), "changed\n")
	write(t, filepath.Join(root, "a", "b", "d.md"), "new\n")
	write(t, filepath.Join(root, "a", "e.md"), "new\n")
	h.settle().want(t, false, "a/b/c.md", "a/b/d.md", "a/e.md")
}

// TestManyNewDirectories makes folders with a note inside faster than the
// watcher can add their watches, as a script or a git checkout does.
func TestManyNewDirectories(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{})
	cmd := exec.Command("sh", "-c", `for i in 1 2 3 4 5 6 7 8 9 10; do mkdir -p d$i/sub/deeper && echo new > d$i/sub/deeper/c.md; done`)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh: %v: %s", err, out)
	}
	var want []string
	for i := 1; i <= 10; i++ {
		want = append(want, fmt.Sprintf("d%d/sub/deeper/c.md", i))
	}
	h.settle().want(t, false, want...)
}

func TestMoveFile(t *testing.T) {
	root := tree(t, "old.md", "topic/keep.md")
	h := start(t, root, watch.Options{})
	must(t, os.Rename(filepath.Join(root, "old.md"), filepath.Join(root, "topic", "new.md")))
	h.settle().want(t, false, "old.md", "topic/new.md")
}

func TestMoveFolder(t *testing.T) {
	root := tree(t, "notes/a.md", "notes/sub/b.md", "other.md")
	h := start(t, root, watch.Options{})
	must(t, os.Rename(filepath.Join(root, "notes"), filepath.Join(root, "archive")))
	h.settle().want(t, true, "archive/a.md", "archive/sub/b.md")

	// inotify would keep naming events in the moved folder by its old name if
	// its watches were kept.
	write(t, filepath.Join(root, "archive", "sub", "b.md"), "changed\n")
	write(t, filepath.Join(root, "archive", "c.md"), "new\n")
	h.settle().want(t, false, "archive/c.md", "archive/sub/b.md")
}

func TestMoveFolderIn(t *testing.T) {
	root := tree(t, "note.md")
	outside := tree(t, "drafts/x.md", "drafts/deep/y.md")
	h := start(t, root, watch.Options{})
	must(t, os.Rename(filepath.Join(outside, "drafts"), filepath.Join(root, "drafts")))
	h.settle().want(t, false, "drafts/deep/y.md", "drafts/x.md")

	write(t, filepath.Join(root, "drafts", "deep", "y.md"), "changed\n")
	h.settle().want(t, false, "drafts/deep/y.md")
}

func TestRemoveFile(t *testing.T) {
	root := tree(t, "note.md", "topic/gone.md")
	h := start(t, root, watch.Options{})
	must(t, os.Remove(filepath.Join(root, "note.md")))
	must(t, os.Remove(filepath.Join(root, "topic", "gone.md")))
	h.settle().want(t, false, "note.md", "topic/gone.md")
}

func TestRemoveFolder(t *testing.T) {
	root := tree(t, "notes/a.md", "notes/sub/b.md", "other.md")
	h := start(t, root, watch.Options{})
	must(t, os.RemoveAll(filepath.Join(root, "notes")))
	s := h.settle()
	if !s.rescan {
		t.Errorf("no Rescan after rm -rf of a folder; batches %+v", s.batches)
	}
	for _, p := range s.paths() {
		if !strings.HasPrefix(p, "notes/") {
			t.Errorf("reported %q, outside the removed folder", p)
		}
	}

	// A folder made again under the same name is watched again.
	write(t, filepath.Join(root, "notes", "sub", "b.md"), "again\n")
	h.settle().want(t, false, "notes/sub/b.md")
	write(t, filepath.Join(root, "notes", "sub", "b.md"), "changed\n")
	h.settle().want(t, false, "notes/sub/b.md")
}

func TestRapidWritesAreDebounced(t *testing.T) {
	const debounce = 500 * time.Millisecond
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{Debounce: debounce, MaxDelay: time.Minute})
	const writes = 50
	began := time.Now()
	for i := range writes {
		write(t, filepath.Join(root, "note.md"), fmt.Sprintf("version %d\n", i))
	}
	elapsed := time.Since(began)
	s := h.settle()
	s.want(t, false, "note.md")
	// A path is reported only after it stayed quiet for a whole debounce, so
	// the writes can have been cut into at most this many reports.
	if limit := 1 + int(elapsed/debounce); s.count["note.md"] > limit {
		t.Errorf("%d writes in %v gave %d reports of note.md, want at most %d", writes, elapsed, s.count["note.md"], limit)
	}
}

func TestContinuousWritesReportedWithinMaxDelay(t *testing.T) {
	root := tree(t, "note.md")
	h := start(t, root, watch.Options{Debounce: 200 * time.Millisecond, MaxDelay: 600 * time.Millisecond})
	deadline := time.Now().Add(patience)
	for i := 0; ; i++ {
		// Each write comes long before the debounce ends: only MaxDelay lets
		// the path through while the writes go on.
		write(t, filepath.Join(root, "note.md"), fmt.Sprintf("version %d\n", i))
		select {
		case b := <-h.batches:
			if slices.Contains(b.Paths, "note.md") {
				return
			}
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("a path written continuously was not reported after %v", patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHiddenAndTemporaryNamesIgnored(t *testing.T) {
	root := tree(t, "note.md", ".git/HEAD", ".git/objects/ab/cdef", ".blackboard/index.db")
	h := start(t, root, watch.Options{})
	for _, f := range []string{
		".git/HEAD", ".git/objects/ab/0123", ".git/refs/heads/main", // inside a folder there at Start
		".blackboard/index.db",
		".new-hidden/inside.md", ".new-hidden/deep/inside.md", // a hidden folder made now
		".note.md.swp", ".note.md.swx", ".#note.md", ".note.md.tmp123",
		"note.md~", "4913", "note.md.tmp", "note.swp", "note.swx",
	} {
		write(t, filepath.Join(root, filepath.FromSlash(f)), "ignored\n")
	}
	must(t, os.Remove(filepath.Join(root, "4913")))
	must(t, os.RemoveAll(filepath.Join(root, ".new-hidden")))
	h.settle().want(t, false)
}

// TestSymlinkToFolderNotFollowed: the link is a name in the tree, reported as
// any file is; what lies behind it is not watched.
func TestSymlinkToFolderNotFollowed(t *testing.T) {
	root := tree(t, "note.md")
	outside := tree(t, "x.md")
	h := start(t, root, watch.Options{})
	must(t, os.Symlink(outside, filepath.Join(root, "link")))
	h.settle().want(t, false, "link")
	write(t, filepath.Join(outside, "x.md"), "changed behind the link\n")
	write(t, filepath.Join(outside, "y.md"), "new behind the link\n")
	h.settle().want(t, false)
}

func TestStartOnALinkedFolderTree(t *testing.T) {
	outside := tree(t, "linked/x.md")
	root := tree(t, "note.md")
	must(t, os.Symlink(filepath.Join(outside, "linked"), filepath.Join(root, "linked")))
	h := start(t, root, watch.Options{})
	write(t, filepath.Join(outside, "linked", "x.md"), "changed behind the link\n")
	h.settle().want(t, false)
}

func TestCloseWaitsForRunningFn(t *testing.T) {
	root := tree(t, "note.md")
	entered := make(chan struct{})
	release := make(chan struct{})
	var returned atomic.Bool
	var once sync.Once
	w, err := watch.Start(root, watch.Options{Debounce: 50 * time.Millisecond, Logf: t.Logf}, func(watch.Batch) {
		once.Do(func() { close(entered) })
		<-release
		returned.Store(true)
	})
	must(t, err)
	write(t, filepath.Join(root, "note.md"), "changed\n")
	select {
	case <-entered:
	case <-time.After(patience):
		t.Fatal("fn was never called")
	}

	closed := make(chan error, 1)
	go func() { closed <- w.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while fn was still running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		must(t, err)
	case <-time.After(patience):
		t.Fatal("Close did not return after fn did")
	}
	if !returned.Load() {
		t.Error("Close returned before fn did")
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestFlush(t *testing.T) {
	root := tree(t, "note.md")
	var running, calls atomic.Int32
	batches := make(chan watch.Batch, 100)
	// A debounce no test waits for: only Flush can deliver.
	w, err := watch.Start(root, watch.Options{Debounce: time.Hour, MaxDelay: time.Hour, Logf: t.Logf}, func(b watch.Batch) {
		running.Add(1)
		calls.Add(1)
		time.Sleep(50 * time.Millisecond) // a slow commit, which Flush must wait for
		batches <- b
		running.Add(-1)
	})
	must(t, err)
	defer w.Close()
	ctx := context.Background()

	must(t, w.Flush(ctx))
	if n := calls.Load(); n != 0 {
		t.Errorf("Flush with nothing pending called fn %d times", n)
	}

	write(t, filepath.Join(root, "note.md"), "changed\n")
	write(t, filepath.Join(root, "new.md"), "new\n")
	got := &seen{}
	deadline := time.Now().Add(patience)
	// The events reach the Watcher a moment after the writes; a Flush before
	// that finds nothing pending.
	for got.count["note.md"] == 0 || got.count["new.md"] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Flush did not deliver note.md and new.md within %v; got %+v", patience, got.batches)
		}
		must(t, w.Flush(ctx))
		if n := running.Load(); n != 0 {
			t.Fatal("Flush returned while fn was still handling the flushed paths")
		}
		for len(batches) > 0 {
			got.add(<-batches)
		}
		time.Sleep(10 * time.Millisecond)
	}
	got.want(t, false, "new.md", "note.md")

	must(t, w.Close())
	if err := w.Flush(ctx); !errors.Is(err, watch.ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
}

func TestFlushHonoursContext(t *testing.T) {
	root := tree(t, "note.md")
	release := make(chan struct{})
	w, err := watch.Start(root, watch.Options{Debounce: 10 * time.Millisecond, Logf: t.Logf}, func(watch.Batch) { <-release })
	must(t, err)
	defer w.Close()
	defer close(release)
	write(t, filepath.Join(root, "note.md"), "changed\n")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// fn never returns while the context lasts, so Flush can only end through it.
	for {
		err := w.Flush(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			return
		}
		must(t, err)
	}
}

func TestStartFailsClearly(t *testing.T) {
	root := tree(t, "note.md")
	for name, path := range map[string]string{
		"missing": filepath.Join(root, "missing"),
		"a file":  filepath.Join(root, "note.md"),
	} {
		t.Run(name, func(t *testing.T) {
			w, err := watch.Start(path, watch.Options{}, func(watch.Batch) {})
			if err == nil {
				w.Close()
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the folder", err)
			}
		})
	}
}

// TestNoInotifyOrGoroutineLeak starts and closes, or fails to start, more
// Watchers than the per-user limit of inotify instances: one kept open by
// mistake would make a later Start fail.
func TestNoInotifyOrGoroutineLeak(t *testing.T) {
	root := tree(t, "note.md", "topic/a.md")
	before := runtime.NumGoroutine()
	for i := range 150 {
		if _, err := watch.Start(filepath.Join(root, "missing"), watch.Options{}, func(watch.Batch) {}); err == nil {
			t.Fatal("Start on a missing folder succeeded")
		}
		w, err := watch.Start(root, watch.Options{}, func(watch.Batch) {})
		if err != nil {
			t.Fatalf("Start number %d: %v", i+1, err)
		}
		must(t, w.Close())
	}
	// Goroutines that were told to end may take a moment to be gone.
	deadline := time.Now().Add(patience)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before, %d after closing every Watcher", before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
