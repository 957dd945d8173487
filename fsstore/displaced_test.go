package fsstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// Files displaced by writes are kept only while some process holds them
// open for writing: a second after, those no one holds are let go, so the
// kept files (walked under the write lock) do not pile up with the writes
// of the last ten minutes. One a process holds stays.
func TestDisplacedFilesNoOneHoldsAreLetGo(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	probe := filepath.Join(w.Dir(), ".blackboard", "lease-probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if w.people.writerMayHold(probe) {
		t.Skip("this file system takes no leases: every displaced file is kept, as before")
	}
	os.Remove(probe)
	put(t, w, "t/held", 0, "held", "one\n")
	held, err := os.OpenFile(filepath.Join(w.Dir(), "t", "held.md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	put(t, w, "t/held", 1, "held, v2", "two\n")
	for v := range 10 {
		put(t, w, "t/busy", v, fmt.Sprintf("busy v%d", v+1), fmt.Sprintf("%d\n", v))
	}
	kept := func(note string) int {
		entries, _ := os.ReadDir(filepath.Join(w.Dir(), ".git", displacedDir, "t", note))
		return len(entries)
	}
	if kept("busy.md") == 0 || kept("held.md") != 1 {
		t.Fatalf("right after the writes: %d kept for t/busy, %d for t/held; want some, and 1", kept("busy.md"), kept("held.md"))
	}
	time.Sleep(displacedQuiet + 100*time.Millisecond)
	put(t, w, "t/other", 0, "another note", "x\n") // a write looks at the kept files
	if n := kept("busy.md"); n != 0 {
		t.Errorf("%d files displaced from t/busy, held by no one, are still kept a second later", n)
	}
	if n := kept("held.md"); n != 1 {
		t.Errorf("the file held open for writing is kept %d times, want 1", n)
	}
}
