package fsstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestRescanNamesWhatMayDiffer: the look at the whole work tree made
// without the write lock names the files a person changed, added or
// deleted, and those the branch changed since the index's commit, and not
// the others: only they are compared under the lock. The edits are then
// committed as a look under the lock commits them.
func TestRescanNamesWhatMayDiffer(t *testing.T) {
	w := newWorkspace(t, false)
	for i := range 30 {
		put(t, w, fmt.Sprintf("research/n%d", i), 0, "note", "body")
	}
	// Files an hour old: their stats are trusted, and recorded by the
	// first look (one within the last seconds may yet change unseen).
	hourAgo := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(w.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") && !strings.Contains(p, ".git") {
			err = os.Chtimes(p, hourAgo, hourAgo)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	paths, _, ok := w.rescanUnlocked()
	if !ok || len(paths) != 0 {
		t.Fatalf("an untouched tree: paths %q, ok %v", paths, ok)
	}
	writeFile(t, w, "research/n3.md", "---\ndigest: edited by hand\n---\nnew body\n")
	writeFile(t, w, "research/added.md", "---\ndigest: added by hand\n---\nbody\n")
	if err := os.Remove(filepath.Join(w.Dir(), "research", "n7.md")); err != nil {
		t.Fatal(err)
	}
	// A commit the index has not seen: its file is on disk as committed.
	writeFile(t, w, "research/n9.md", "---\ndigest: committed by hand\n---\nbody\n")
	fixtures.Git(t, w.Dir(), "commit", "-qm", "by hand", "--", "research/n9.md")
	paths, _, ok = w.rescanUnlocked()
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if want := []string{"research/added.md", "research/n3.md", "research/n7.md", "research/n9.md"}; !ok || !slices.Equal(paths, want) {
		t.Fatalf("paths %q (ok %v), want %q", paths, ok, want)
	}
	w.FilesChanged(nil, true)
	rep, err := w.CommitEdits()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(rep.Edits); got != 3 {
		t.Errorf("committed %d edits (%v), want the 3 a person made", got, rep.Lines())
	}
	for _, uri := range []string{"research/n3", "research/added"} {
		if _, err := agentView(w).Get(uri, false); err != nil {
			t.Errorf("%s after the rescan: %v", uri, err)
		}
	}
	if _, err := agentView(w).Get("research/n7", false); err == nil {
		t.Error("research/n7 is still there after a person deleted it")
	}
}
