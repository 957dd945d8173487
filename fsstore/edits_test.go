package fsstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/people"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/watch"
)

// noteText is a note file as a person would write it.
func noteText(digest, body string) string {
	return "---\ndigest: " + digest + "\n---\n" + body
}

// onSteps calls fn at each step of the writes, until the returned stop is
// called or the test ends: a person acting at a precise moment of a write.
func onSteps(t *testing.T, fn func(step string)) (stop func()) {
	t.Helper()
	crashPoint = fn
	stop = func() { crashPoint = nil }
	t.Cleanup(stop)
	return stop
}

// atStep calls fn the first time a write reaches step; a test whose writes
// never reach it fails, for it tested nothing of what it names.
func atStep(t *testing.T, step string, fn func()) {
	t.Helper()
	done := false
	onSteps(t, func(s string) {
		if s == step && !done {
			done = true
			fn()
		}
	})
	t.Cleanup(func() {
		if !done {
			t.Errorf("no write reached the step %q", step)
		}
	})
}

func commitEdits(t *testing.T, w *Workspace) *EditReport {
	t.Helper()
	rep, err := w.CommitEdits()
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func opsOf(rep *EditReport) string {
	var s []string
	for _, e := range rep.Edits {
		op := e.Op + " " + e.Key
		if e.From != "" {
			op = "move " + e.From + " " + e.Key
		}
		s = append(s, op)
	}
	return strings.Join(s, ", ")
}

// Every kind of change a person makes by hand is committed in one commit,
// authored by them, and agents read it at its new version.
func TestPersonsEditsAreCommitted(t *testing.T) {
	fixtures.RequireGit(t)
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	w := newWorkspace(t, false)
	put(t, w, "t/edited", 0, "before", "old body\n")
	put(t, w, "t/gone", 0, "to delete", "x\n")
	put(t, w, "t/moved", 0, "travels", "moving body\n")

	writeFile(t, w, "t/edited.md", noteText("after the edit", "new body\n"))
	writeFile(t, w, "t/deep/new/note.md", noteText("written by hand", "zebra quagga\n"))
	writeFile(t, w, "t/broken.md", "---\ndigest: [unclosed\n---\nbody\n")
	if err := os.Remove(filepath.Join(w.Dir(), "t/gone.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(w.Dir(), "t/moved.md"), filepath.Join(w.Dir(), "t/arrived.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, w, "t/notes.txt~", "an editor's backup: no address names it")

	rep := commitEdits(t, w)
	if got, want := opsOf(rep), "move t/moved t/arrived, create t/broken, create t/deep/new/note, edit t/edited, delete t/gone"; got != want {
		t.Errorf("edits = %s\nwant    %s", got, want)
	}
	if rep.Author != "human" || rep.Commit == "" {
		t.Errorf("report = %+v", rep)
	}
	if got := fixtures.Git(t, w.Dir(), "log", "-1", "--format=%an|%s"); got != "human|edit 5 notes by hand" {
		t.Errorf("last commit = %q", got)
	}
	if n := get(t, w, "t/edited"); n.Version != 2 || n.Digest != "after the edit" || n.Content != "new body\n" {
		t.Errorf("edited = %+v", n)
	}
	if n := get(t, w, "t/arrived"); n.Version != 1 || n.Content != "moving body\n" {
		t.Errorf("moved = %+v", n)
	}
	for _, gone := range []string{"t/gone", "t/moved"} {
		if _, err := agentView(w).Get(gone, false); !errors.Is(err, ErrNotFound) {
			t.Errorf("get %s after it left: %v", gone, err)
		}
	}
	if hits, _, err := agentView(w).Search("quagga", "", 5); err != nil || len(hits) != 1 || hits[0].URI != "bb://acme/t/deep/new/note" {
		t.Errorf("search = %+v, %v", hits, err)
	}
	// Unreadable front matter is committed as it is; reads say what is
	// wrong, listing and search still show it.
	n, err := agentView(w).Get("t/broken", true)
	if err != nil || !strings.Contains(n.Problem, "front matter") || n.Version != 1 {
		t.Errorf("broken note = %+v, %v", n, err)
	}
	l, err := agentView(w).List(ListOptions{Topic: "t", ByName: true, Limit: 50})
	if err != nil || !listed(l, "bb://acme/t/broken") {
		t.Errorf("listing misses the broken note: %+v, %v", l, err)
	}
	if hits, _, _ := agentView(w).Search("broken", "", 5); len(hits) == 0 {
		t.Error("search misses the broken note's address")
	}
	os.Remove(filepath.Join(w.Dir(), "t/notes.txt~"))
	assertClean(t, w)

	// Nothing changed since: nothing to commit, and no new commit.
	if rep := commitEdits(t, w); rep.Commit != "" || len(rep.Edits) != 0 {
		t.Errorf("second pass committed %+v", rep)
	}
}

func listed(l *Listing, uri string) bool {
	for _, n := range l.Notes {
		if n.URI == uri {
			return true
		}
	}
	return false
}

// A person who deletes a note's blob file is told, and agents reading the
// note are too; nothing is dropped silently.
func TestDeletedBlobFileIsReported(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/big", 0, "large", strings.Repeat("a long line of text\n", 1000))
	if err := os.Remove(filepath.Join(w.Dir(), "t/big.blob.md")); err != nil {
		t.Fatal(err)
	}
	rep := commitEdits(t, w)
	if len(rep.Edits) != 1 || !strings.Contains(rep.Edits[0].Problem, "t/big.blob.md was deleted") {
		t.Fatalf("report = %+v", rep.Edits)
	}
	n := get(t, w, "t/big")
	if !strings.Contains(n.Problem, "t/big.blob.md") || n.Version != 2 {
		t.Errorf("read = %+v", n)
	}
	assertClean(t, w)
}

// A person's save landing after a write compared the file, and before the
// write put its own file in place, is kept and committed on top: the write
// never replaces it unseen.
func TestSaveDuringAWriteIsKept(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "first", "one\n")
	person := noteText("saved by a person mid-write", "theirs\n")
	atStep(t, "branch", func() {
		writeFile(t, w, "t/k.md", person)
	})
	res := put(t, w, "t/k", 1, "agent", "mine\n")
	if res.Version != 2 {
		t.Fatalf("write = %+v", res)
	}
	if got := readFile(t, w, "t/k.md"); got != person {
		t.Fatalf("the person's save was replaced:\n%s", got)
	}
	// git is told the file differs from its index entry.
	if st := fixtures.Git(t, w.Dir(), "status", "--porcelain"); st != "M t/k.md" {
		t.Errorf("git status = %q", st)
	}
	rep := commitEdits(t, w)
	if opsOf(rep) != "edit t/k" {
		t.Fatalf("edits = %s", opsOf(rep))
	}
	n := get(t, w, "t/k")
	if n.Version != 3 || n.Content != "theirs\n" {
		t.Errorf("after = %+v", n)
	}
	if got := fixtures.Git(t, w.Dir(), "log", "--format=%s", "--", "t/k.md"); !strings.Contains(got, "update t/k v2: agent") {
		t.Errorf("the agent's write is not in history:\n%s", got)
	}
	assertClean(t, w)
}

// A new file a person creates while a write creates the same note stays.
func TestCreateDuringACreateIsKept(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	person := noteText("made by hand", "hand\n")
	atStep(t, "branch", func() {
		writeFile(t, w, "t/new.md", person)
	})
	put(t, w, "t/new", 0, "agent", "machine\n")
	if got := readFile(t, w, "t/new.md"); got != person {
		t.Fatalf("file = %q", got)
	}
	commitEdits(t, w)
	if n := get(t, w, "t/new"); n.Version != 2 || n.Content != "hand\n" {
		t.Errorf("after = %+v", n)
	}
	assertClean(t, w)
}

// With a watcher, writes commit only the paths it reported (cheap); without
// one, every write compares the whole work tree.
func TestWritesCommitReportedEdits(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a\n")
	put(t, w, "t/b", 0, "b", "b\n")

	writeFile(t, w, "t/b.md", noteText("b by hand", "b2\n"))
	put(t, w, "t/a", 1, "a2", "a2\n") // no watcher: the whole tree
	if n := get(t, w, "t/b"); n.Version != 2 {
		t.Errorf("without a watcher, b = v%d", n.Version)
	}

	w.SetWatched(true)
	writeFile(t, w, "t/b.md", noteText("b again", "b3\n"))
	put(t, w, "t/a", 2, "a3", "a3\n")
	if n := get(t, w, "t/b"); n.Version != 2 {
		t.Errorf("an unreported edit was found: b = v%d", n.Version)
	}
	w.FilesChanged([]string{"t/b.md"}, false)
	put(t, w, "t/a", 3, "a4", "a4\n")
	if n := get(t, w, "t/b"); n.Version != 3 || n.Content != "b3\n" {
		t.Errorf("a reported edit was not committed: %+v", n)
	}
	// The program's own files, reported as changed, are no edits.
	w.FilesChanged([]string{"t/a.md", "t/b.md"}, true)
	if rep := commitEdits(t, w); rep.Commit != "" {
		t.Errorf("echo committed: %+v", rep)
	}
	assertClean(t, w)
}

// While git is in the middle of an operation, edits wait.
func TestEditsWaitForGit(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a\n")
	fixtures.Git(t, w.Dir(), "checkout", "-q", "-b", "elsewhere")
	writeFile(t, w, "t/a.md", noteText("on another branch", "x\n"))
	_, err := w.CommitEdits()
	if !errors.Is(err, ErrWorkTreeBusy) || !strings.Contains(err.Error(), "elsewhere is checked out") {
		t.Fatalf("err = %v", err)
	}
	fixtures.Git(t, w.Dir(), "checkout", "-q", "t/a.md")
	fixtures.Git(t, w.Dir(), "checkout", "-q", "main")
	if rep := commitEdits(t, w); rep.Commit != "" {
		t.Errorf("committed %+v", rep)
	}
}

// A process killed at any step of committing a person's edits leaves them
// either uncommitted, to be committed by the next process, or committed: the
// person's files are never touched, and git ends up holding exactly them.
func TestCrashWhileCommittingEdits(t *testing.T) {
	fixtures.RequireGit(t)
	for _, step := range []string{"journal", "objects", "branch", "files", "gitindex", "index"} {
		t.Run(step, func(t *testing.T) {
			w := newWorkspace(t, true)
			put(t, w, "t/a", 0, "a", "a\n")
			put(t, w, "t/gone", 0, "gone", "gone\n")
			edits := map[string]string{
				"t/a.md":       noteText("a by hand", "person's a\n"),
				"t/new/one.md": noteText("new by hand", "person's new\n"),
			}
			for p, c := range edits {
				writeFile(t, w, p, c)
			}
			if err := os.Remove(filepath.Join(w.Dir(), "t/gone.md")); err != nil {
				t.Fatal(err)
			}
			runKilled(t, "edits", w.Dir(), "BB_CRASH_AT="+step, "BB_DURABLE=1")
			w.Close()
			w = openWorkspace(t, w.Dir(), true)
			commitEdits(t, w)
			for p, c := range edits {
				if got := readFile(t, w, p); got != c {
					t.Errorf("%s changed on disk:\n%s", p, got)
				}
				if got := fixtures.Git(t, w.Dir(), "show", "HEAD:"+p); got+"\n" != c {
					t.Errorf("HEAD:%s = %q", p, got)
				}
			}
			if _, err := agentView(w).Get("t/gone", false); !errors.Is(err, ErrNotFound) {
				t.Errorf("deleted note: %v", err)
			}
			if n := get(t, w, "t/a"); n.Version != 2 {
				t.Errorf("t/a at v%d, want 2 (one commit of the edit)", n.Version)
			}
			fixtures.Git(t, w.Dir(), "fsck", "--strict", "--no-dangling")
			assertClean(t, w)
		})
	}
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A watching workspace commits a person's save by itself, and stops cleanly.
func TestWatchCommitsSaves(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a\n")
	writeFile(t, w, "t/offline.md", noteText("before watching", "x\n"))
	var logged []string
	var mu sync.Mutex
	ws := w.Watch(WatchOptions{Debounce: 20 * time.Millisecond, Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	waitFor(t, "the offline edit is committed", func() bool {
		n, err := agentView(w).Get("t/offline", false)
		return err == nil && n.Version == 1
	})
	writeFile(t, w, "t/a.md", noteText("saved while watched", "b\n"))
	waitFor(t, "the save is committed", func() bool { return get(t, w, "t/a").Version == 2 })
	writeFile(t, w, "t/last.md", noteText("saved just before stopping", "c\n"))
	ws.Stop()
	ws.Stop() // twice is fine
	// Stop commits what the watcher has seen; a save it had not seen yet is
	// found by the next comparison (here a process without a watcher).
	commitEdits(t, w)
	if n := get(t, w, "t/last"); n.Version != 1 {
		t.Errorf("a save made just before Stop was lost: %+v", n)
	}
	assertClean(t, w)
	mu.Lock()
	defer mu.Unlock()
	if len(logged) > 0 {
		t.Errorf("logged: %q", logged)
	}
}

// Without inotify (out of instances), the workspace polls the whole tree
// instead, says so, and every write compares the whole tree first.
func TestWatchFallsBackToPolling(t *testing.T) {
	fixtures.RequireGit(t)
	startWatcher = func(string, watch.Options, func(watch.Batch)) (*watch.Watcher, error) {
		return nil, errors.New("too many open files")
	}
	defer func() { startWatcher = watch.Start }()
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a\n")
	var logged []string
	var mu sync.Mutex
	ws := w.Watch(WatchOptions{PollEvery: 50 * time.Millisecond, Logf: func(f string, a ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(f, a...))
		mu.Unlock()
	}})
	defer ws.Stop()
	writeFile(t, w, "t/a.md", noteText("found by polling", "b\n"))
	waitFor(t, "polling commits the save", func() bool { return get(t, w, "t/a").Version == 2 })
	mu.Lock()
	if len(logged) != 1 || !strings.Contains(logged[0], "cannot watch the work tree (too many open files); comparing it every 50ms") {
		t.Errorf("logged: %q", logged)
	}
	mu.Unlock()
	assertClean(t, w)
}

// A note file emptied a moment ago looks like an in-place save caught
// between its truncation and its write: it is not committed yet. Emptied for
// good, it is.
func TestHalfSavedFileWaits(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a\n")
	writeFile(t, w, "t/a.md", "")
	rep := commitEdits(t, w)
	if rep.Commit != "" || len(rep.Unsettled) != 1 {
		t.Fatalf("an emptied file was committed at once: %+v", rep)
	}
	// The write lands: one version, with the whole save.
	writeFile(t, w, "t/a.md", noteText("whole save", "x\n"))
	commitEdits(t, w)
	if n := get(t, w, "t/a"); n.Version != 2 || n.Digest != "whole save" {
		t.Errorf("t/a = %+v", n)
	}
	// Emptied and left so.
	writeFile(t, w, "t/a.md", "")
	old := time.Now().Add(-people.EmptyGrace)
	if err := os.Chtimes(filepath.Join(w.Dir(), "t/a.md"), old, old); err != nil {
		t.Fatal(err)
	}
	commitEdits(t, w)
	if n := get(t, w, "t/a"); n.Version != 3 || n.Problem == "" {
		t.Errorf("an empty file left alone is not committed: %+v", n)
	}
	assertClean(t, w)
}

// A Markdown file no address can name is reported, not silently ignored.
func TestMisnamedNoteIsReported(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	w.SetWatched(true)
	writeFile(t, w, "Research/Cache Notes.md", noteText("x", "y\n"))
	writeFile(t, w, "research/Latency.md", noteText("x", "y\n"))
	writeFile(t, w, "README.md", "a read-me\n")
	w.FilesChanged([]string{"Research/Cache Notes.md", "research/Latency.md", "README.md"}, false)
	rep := commitEdits(t, w)
	got := strings.Join(rep.Skipped, "\n")
	for _, want := range []string{"Research/Cache Notes.md is not a note (", "research/Latency.md is not a note: a note's file name is its address in lower case; rename it research/latency.md"} {
		if !strings.Contains(got, want) {
			t.Errorf("skipped:\n%s\nwant %q", got, want)
		}
	}
	if strings.Contains(got, "README") || rep.Commit != "" {
		t.Errorf("report = %+v", rep)
	}
}

// The watcher's first look at changed files (is the file what the branch
// holds?) runs without the write lock and writes nothing: when the derived
// index is behind the branch, here after a person's commit, it reads the
// branch's blobs from git instead of catching the index up, which every
// watching process would do at once.
func TestEchoCheckReadsGitWhileTheIndexLags(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a body")
	put(t, w, "t/b", 0, "b", "b body")
	indexed, _, err := w.idx.Head()
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, w, "t/a.md", strings.Replace(readFile(t, w, "t/a.md"), "a body", "a body, committed by hand", 1))
	fixtures.Git(t, w.Dir(), "commit", "--quiet", "-am", "a by hand")
	writeFile(t, w, "t/b.md", strings.Replace(readFile(t, w, "t/b.md"), "b body", "b body, saved", 1))

	changed, err := w.people.ChangedPaths([]string{"t/a.md", "t/b.md"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"t/b.md"}) {
		t.Errorf("changed files %q, want the saved one alone: the committed one is what the branch holds", changed)
	}
	if now, _, err := w.idx.Head(); err != nil || now != indexed {
		t.Errorf("the derived index moved from %v to %v (%v) in the check", indexed, now, err)
	}
}

// leaseHeld reports whether some server holds the watch lease of the
// board at dir: the test's own try to take it fails.
func leaseHeld(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".git", watchLease), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return true
	}
	_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// One server of a board watches it; another stands by, watching nothing,
// and takes over when the first is killed: every save of a person is
// committed once, whichever server is up.
func TestOneServerWatchesABoard(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/a", 0, "a", "a\n")
	dir := w.Dir()

	first := worker(t, "watchonly", dir, "BB_ID=first")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = first.Wait() // killed, below or at the end
		close(exited)
	}()
	defer func() {
		_ = first.Process.Kill()
		<-exited
	}()
	waitFor(t, "the first server holds the watch lease", func() bool { return leaseHeld(t, dir) })

	standby := w.Watch(WatchOptions{Debounce: 20 * time.Millisecond})
	defer standby.Stop()
	time.Sleep(3 * leaseRetry / 2) // at least one more try to take the lease
	standby.mu.Lock()
	watcher, lease := standby.watcher, standby.lease
	standby.mu.Unlock()
	if watcher != nil || lease != nil {
		t.Fatal("a second server watches the board beside the first")
	}

	writeFile(t, w, "t/a.md", noteText("saved while the first server watches", "b\n"))
	waitFor(t, "the first server commits the save", func() bool { return get(t, w, "t/a").Version == 2 })

	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	writeFile(t, w, "t/a.md", noteText("saved once the first server died", "c\n"))
	waitFor(t, "the standing-by server takes over and commits the save", func() bool { return get(t, w, "t/a").Version == 3 })
	standby.mu.Lock()
	lease = standby.lease
	standby.mu.Unlock()
	if lease == nil {
		t.Fatal("the save was committed, but not by the server that took over")
	}

	writeFile(t, w, "t/b.md", noteText("a new note", "d\n"))
	waitFor(t, "the new watcher commits a new note", func() bool {
		n, err := agentView(w).Get("t/b", false)
		return err == nil && n.Version == 1
	})
	standby.Stop()
	if leaseHeld(t, dir) {
		t.Error("the lease is still held after the watching server stopped")
	}
	subjects := fixtures.Git(t, dir, "log", "--format=%s", "--", "t/a.md")
	if n := strings.Count(subjects, "\n") + 1; n != 3 {
		t.Errorf("t/a.md has %d commits, want 3 (the agent's and one for each save):\n%s", n, subjects)
	}
	if v := get(t, w, "t/a").Version; v != 3 {
		t.Errorf("t/a at v%d, want the 3 that git counts", v)
	}
	assertClean(t, w)
}
