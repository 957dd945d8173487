package watch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestErrorRescansAndRewatches hands the real fsnotify watcher's Errors channel
// the overflow the kernel reports when its queue is full, which a test cannot
// provoke without changing the machine's limits.
func TestErrorRescansAndRewatches(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "notes", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	batches := make(chan Batch, 100)
	w, err := Start(root, Options{Debounce: 50 * time.Millisecond, Logf: t.Logf}, func(b Batch) { batches <- b })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	w.notify.Errors <- fsnotify.ErrEventOverflow
	waitFor(t, batches, "a batch with Rescan", func(b Batch) bool { return b.Rescan })

	// Every folder is watched again, exactly once.
	if err := os.WriteFile(filepath.Join(root, "notes", "sub", "x.md"), []byte("after the overflow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := waitFor(t, batches, "notes/sub/x.md", func(b Batch) bool { return slices.Contains(b.Paths, "notes/sub/x.md") })
	if b.Rescan {
		t.Errorf("a second Rescan: %+v", b)
	}
}

func waitFor(t *testing.T, batches <-chan Batch, what string, ok func(Batch) bool) Batch {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case b := <-batches:
			if ok(b) {
				return b
			}
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

func TestIgnoredFile(t *testing.T) {
	for name, want := range map[string]bool{
		"note.md":         false,
		"4913.md":         false,
		"sed4AbC9x":       false,
		"notes.tmp.md":    false,
		"note.md~":        true,
		"4913":            true,
		".note.md.swp":    true,
		".note.md.swx":    true,
		".#note.md":       true,
		".note.md.tmpXYZ": true,
		"note.md.tmp":     true,
		"note.swp":        true,
		"note.swx":        true,
		".gitignore":      true,
	} {
		if got := ignoredFile(name); got != want {
			t.Errorf("ignoredFile(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestHiddenPath(t *testing.T) {
	for rel, want := range map[string]bool{
		"note.md":              false,
		"topic/note.md":        false,
		"a.b/c.md":             false,
		".git":                 true,
		".git/objects/ab/cd":   true,
		"topic/.hidden/x.md":   true,
		"topic/.note.md.swp":   true,
		"topic/sub.dir/x.md":   false,
		".blackboard/index.db": true,
	} {
		if got := hiddenPath(rel); got != want {
			t.Errorf("hiddenPath(%q) = %v, want %v", rel, got, want)
		}
	}
}

func TestOutOfWatchesSaysWhatToRaise(t *testing.T) {
	err := watchError("workspace", "workspace/topic", syscall.ENOSPC)
	if !strings.Contains(err.Error(), "fs.inotify.max_user_watches") {
		t.Errorf("error %q does not say which limit to raise", err)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("error %q does not unwrap to ENOSPC", err)
	}
}
