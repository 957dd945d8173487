package fsstore

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
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
	ageNotes(t, w)
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	paths, _, ok := w.people.RescanUnlocked()
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
	paths, _, ok = w.people.RescanUnlocked()
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

// TestRescanMissesNoEdit: on random work (a person's saves, additions,
// deletions, touches that change nothing, commits by hand the index has
// not seen, tool writes, looks committed or not), every file whose content
// differs from the branch's head is among those the look without the lock
// names: the comparison under the lock sees all it would have seen of the
// whole tree.
func TestRescanMissesNoEdit(t *testing.T) {
	w := newWorkspace(t, false)
	rng := rand.New(rand.NewPCG(26, 12))
	for round := range 60 {
		key := fmt.Sprintf("research/n%d", rng.IntN(12))
		file := filepath.Join(w.Dir(), key+".md")
		switch rng.IntN(7) {
		case 0: // no expect_version: whatever a person did to the note first
			body := fmt.Sprint(round)
			if _, err := agentView(w).Update(UpdateRequest{URI: key, Digest: "by a tool", Body: &body}); err != nil {
				t.Fatal(err)
			}
		case 1:
			writeFile(t, w, key+".md", fmt.Sprintf("---\ndigest: by hand %d\n---\nbody\n", round))
		case 2:
			_ = os.Remove(file)
		case 3: // touched, content unchanged
			now := time.Now()
			_ = os.Chtimes(file, now, now)
		case 4: // committed by hand, behind the index's back
			writeFile(t, w, key+".md", fmt.Sprintf("---\ndigest: committed by hand %d\n---\nbody\n", round))
			fixtures.Git(t, w.Dir(), "add", "-A", "research")
			fixtures.GitOutput(t, w.Dir(), "commit", "-qm", "by hand")
		case 5:
			if _, err := w.CommitEdits(); err != nil {
				t.Fatal(err)
			}
		default: // an hour old: stats trusted and recorded at the next look
			hourAgo := time.Now().Add(-time.Hour)
			_ = os.Chtimes(file, hourAgo, hourAgo)
		}
		named, _, ok := w.people.RescanUnlocked()
		if !ok {
			continue // the whole tree is compared under the lock
		}
		for _, p := range differFromHead(t, w) {
			if !slices.Contains(named, p) {
				t.Fatalf("round %d: %s differs from the head, and the look named only %q", round, p, named)
			}
		}
	}
}

// differFromHead lists the note files whose content on disk is not the
// branch head's, by hashing every one.
func differFromHead(t *testing.T, w *Workspace) []string {
	t.Helper()
	head := map[string]string{}
	for _, line := range strings.Split(fixtures.Git(t, w.Dir(), "ls-tree", "-r", "HEAD"), "\n") {
		if meta, p, ok := strings.Cut(line, "\t"); ok && strings.HasSuffix(p, ".md") && strings.Contains(p, "/") {
			head[p] = strings.Fields(meta)[2]
		}
	}
	var out []string
	seen := map[string]bool{}
	_ = filepath.WalkDir(w.Dir(), func(abs string, d fs.DirEntry, err error) error {
		p := w.Rel(abs)
		if err != nil || d.IsDir() || strings.HasPrefix(p, ".") || !strings.HasSuffix(p, ".md") || !strings.Contains(p, "/") {
			return nil
		}
		seen[p] = true
		b, err := os.ReadFile(abs)
		if err == nil && gitver.BlobHash(b).String() != head[p] {
			out = append(out, p)
		}
		return nil
	})
	for p := range head {
		if !seen[p] {
			out = append(out, p)
		}
	}
	return out
}

// TestWholeTreeLookWithoutTheLock: after the index is built anew (a board
// cloned without one, an index of an older schema, reindex), no file has
// a recorded stat, and the look at the whole work tree reads every file.
// It reads them without the write lock, which another process holds
// meanwhile, and records their stats, so that the next look names none;
// a file a person changed is still named, and committed as theirs.
func TestWholeTreeLookWithoutTheLock(t *testing.T) {
	w := newWorkspace(t, false)
	for i := range 40 {
		put(t, w, fmt.Sprintf("research/n%d", i), 0, "note", "body")
	}
	ageNotes(t, w)
	if _, err := w.Reindex(nil); err != nil {
		t.Fatal(err)
	}
	if paths, _, ok := w.people.RescanUnlocked(); !ok || len(paths) < 40 {
		t.Fatalf("after a rebuild, the look names %d files (ok %v), want every note's", len(paths), ok)
	}
	// Another process holds the write lock for the whole look.
	other, err := os.OpenFile(filepath.Join(w.Dir(), filepath.FromSlash(note.LockFile)), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		w.FilesChanged(nil, true)
		_, err := w.CommitEdits()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the look at the whole tree waits for the write lock")
	}
	if paths, _, ok := w.people.RescanUnlocked(); !ok || len(paths) != 0 {
		t.Fatalf("the next look names %q (ok %v), want none: the stats were recorded", paths, ok)
	}
	if err := unix.Flock(int(other.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	writeFile(t, w, "research/n5.md", "---\ndigest: by hand\n---\nbody\n")
	w.FilesChanged(nil, true)
	rep, err := w.CommitEdits()
	if err != nil || len(rep.Edits) != 1 {
		t.Fatalf("a person's change after the look: %+v, %v", rep, err)
	}
	assertClean(t, w)
}

// ageNotes makes every note file an hour old: its stat is then trusted,
// and recorded by the next look (a file changed within the last second
// may yet change unseen).
func ageNotes(t *testing.T, w *Workspace) {
	t.Helper()
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
}
