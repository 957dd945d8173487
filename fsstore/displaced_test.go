package fsstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/people"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
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
	if people.WriterMayHold(probe) {
		t.Skip("this file system takes no leases: every displaced file is kept, as before")
	}
	os.Remove(probe)
	put(t, w, "t/held", 0, "held", "one\n")
	// The person opens the note in the instant after the write looked
	// whether anyone holds it open for writing: the write swaps its file in,
	// and the person's is the one displaced.
	opened := openAtUnheld(t, w, "t/held.md")
	put(t, w, "t/held", 1, "held, v2", "two\n")
	opened()
	for v := range 10 {
		put(t, w, "t/busy", v, fmt.Sprintf("busy v%d", v+1), fmt.Sprintf("%d\n", v))
	}
	kept := func(note string) int {
		entries, _ := os.ReadDir(filepath.Join(w.Dir(), ".git", mover.DisplacedDir, "t", note))
		return len(entries)
	}
	if kept("busy.md") == 0 || kept("held.md") != 1 {
		t.Fatalf("right after the writes: %d kept for t/busy, %d for t/held; want some, and 1", kept("busy.md"), kept("held.md"))
	}
	time.Sleep(people.DisplacedQuiet + 100*time.Millisecond)
	put(t, w, "t/other", 0, "another note", "x\n") // a write looks at the kept files
	if n := kept("busy.md"); n != 0 {
		t.Errorf("%d files displaced from t/busy, held by no one, are still kept a second later", n)
	}
	if n := kept("held.md"); n != 1 {
		t.Errorf("the file held open for writing is kept %d times, want 1", n)
	}
}

// A note's file that a process holds open for writing when a write comes
// is not replaced: the write is committed, and the file stays the
// person's, to be compared once they close it.
func TestFileHeldForWritingIsNotReplaced(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/held", 0, "held", "one\n")
	file := filepath.Join(w.Dir(), "t", "held.md")
	held, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h, known := worktree.HeldForWriting(mustOpen(t, file)); !known {
		held.Close()
		t.Skip("this file system takes no leases: a held file is told by a quiet moment")
	} else if !h {
		t.Fatal("a file open for writing is not told held")
	}
	before := readFile(t, w, "t/held.md")
	put(t, w, "t/held", 1, "held, v2", "two\n")
	if got := readFile(t, w, "t/held.md"); got != before {
		t.Errorf("the held file was replaced: it holds %q", got)
	}
	if _, err := held.WriteString("the person's line\n"); err != nil {
		t.Fatal(err)
	}
	if rep := commitEdits(t, w); len(rep.Unsettled) != 1 || rep.Commit != "" {
		t.Errorf("a file still held for writing was committed: %+v", rep)
	}
	held.Close()
	commitEdits(t, w)
	if n := get(t, w, "t/held"); n.Content != "two\nthe person's line\n" || n.Version != 3 {
		t.Errorf("after the person closed the file: v%d %q; want v3 with the agent's text and the person's line", n.Version, n.Content)
	}
	assertClean(t, w)
}

// A person appends through a handle opened before a write replaced the
// note's file, and meanwhile reads the note into an editor: the buffer
// lacks their appended line, which is in the kept file only. While the
// program puts that line into the note, they save the buffer by rename.
// The save is merged with a version that holds the line: taken for an
// edit of the branch's version, it would drop the line from every version.
func TestSaveOfABufferReadBeforeDisplacedTextIsTaken(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	opened := openAtUnheld(t, w, "t/log.md")
	appendLine(t, w, "t/log", "the agent's")
	held := opened()
	if _, err := held.WriteString("through the old handle\n"); err != nil {
		t.Fatal(err)
	}
	held.Close()
	buffer := readFile(t, w, "t/log.md") // the agent's version, without the person's line
	time.Sleep(people.DisplacedQuiet + 100*time.Millisecond)
	saved := false
	stop := onSteps(t, func(step string) {
		if step != "exchanged" || saved {
			return
		}
		saved = true
		writeFile(t, w, "t/log.md.swp", buffer+"saved from the buffer\n")
		if err := w.root.Rename("t/log.md.swp", "t/log.md"); err != nil {
			t.Error(err)
		}
	})
	if err := w.Repair(); err != nil { // the kept file is looked at
		t.Fatal(err)
	}
	stop()
	if !saved {
		t.Fatal("the kept file's text was not put into the note")
	}
	commitEdits(t, w)
	want := "start\nthe agent's\nthrough the old handle\nsaved from the buffer\n"
	if n := get(t, w, "t/log"); n.Content != want {
		t.Errorf("note = v%d %q; want %q", n.Version, n.Content, want)
	}
	assertClean(t, w)
}

// openAtUnheld has a person open the file at p (workspace-relative) for
// appending in the instant after the next write looked whether anyone holds
// it open for writing, so that the write displaces the person's file. The
// returned function ends the watch and returns the person's handle, closed
// at the test's end; it fails the test when the write never got there.
func openAtUnheld(t *testing.T, w *Workspace, p string) (opened func() *os.File) {
	t.Helper()
	var held *os.File
	t.Cleanup(func() {
		if held != nil {
			held.Close()
		}
	})
	stop := onSteps(t, func(step string) {
		if step == "unheld" && held == nil {
			var err error
			if held, err = os.OpenFile(filepath.Join(w.Dir(), filepath.FromSlash(p)), os.O_WRONLY|os.O_APPEND, 0); err != nil {
				t.Error(err)
			}
		}
	})
	return func() *os.File {
		t.Helper()
		stop()
		if held == nil {
			t.Fatalf("the person's handle on %s was not opened during the write", p)
		}
		return held
	}
}

func mustOpen(t *testing.T, file string) *os.File {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
