package gitver_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// isSplit reports whether dir's index file links a shared index, and the
// shared index files there are.
func isSplit(t testing.TB, dir string) (bool, []string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	shared, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
	return bytes.Contains(data, []byte("link\x00\x00")), shared
}

// headIndex is what `git ls-files -s` lists when the index holds HEAD's tree.
func headIndex(t testing.TB, dir string) map[string]string {
	t.Helper()
	want := map[string]string{}
	for p, v := range lsTree(t, dir, "HEAD") {
		mode, blob, _ := strings.Cut(strings.Replace(v, " blob ", " ", 1), " ")
		want[p] = mode + " " + blob + " 0"
	}
	return want
}

// TestUpdateIndexKeepsSplitIndex proves an index git split, with the
// entries a person's git put in its index file (replaced, deleted and added
// next to the shared index), is read, kept split and written so that git
// reads the same entries the program meant: git status is clean, ls-files
// lists HEAD's tree, and a person's next commit keeps the program's files.
func TestUpdateIndexKeepsSplitIndex(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name  string
		setup [][]string
	}{
		{"split by git, nothing since", [][]string{{"update-index", "--split-index"}}},
		{"split, then a person's changes in the index file", [][]string{
			{"update-index", "--split-index"},
			{"rm", "--quiet", "notes/d2/f002.md"},
			{"add", "person.md", "notes/d3/f003.md"},
			{"commit", "--quiet", "-m", "a person's changes"},
		}},
		{"split, and a path deleted and added again", [][]string{
			{"update-index", "--split-index"},
			{"rm", "--quiet", "--cached", "notes/d4/f004.md"},
			{"add", "notes/d4/f004.md"},
		}},
		{"split in index version 3 with an intent-to-add entry", [][]string{
			{"update-index", "--index-version", "3"},
			{"update-index", "--split-index"},
			{"add", "--intent-to-add", "pending.md"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := personRepo(t, personFiles(40))
			writeFile(t, dir, "person.md", "a person's note\n")
			writeFile(t, dir, "notes/d3/f003.md", "note 3, edited by a person\n")
			writeFile(t, dir, "pending.md", "not yet added\n")
			for _, args := range tt.setup {
				fixtures.Git(t, dir, args...)
			}
			if split, _ := isSplit(t, dir); !split {
				t.Fatal("setup: git did not split the index")
			}
			fixtures.Git(t, dir, "add", "-A")
			fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "the person's work, committed")
			wantIntent := strings.Contains(tt.name, "intent-to-add")
			if wantIntent {
				fixtures.Git(t, dir, "rm", "--quiet", "--cached", "pending.md")
				fixtures.Git(t, dir, "commit", "--quiet", "-m", "pending not yet")
				fixtures.Git(t, dir, "add", "--intent-to-add", "pending.md")
			}

			r := openRepo(t, dir)
			writes := []map[string]string{
				{"notes/d1/f001.md": "changed by an agent\n", "agent/new.md": "new\n", "notes/d5/f005.md": ""},
				{"notes/d1/f001.md": "changed again\n", "notes/d4/f004.md": "agent's 4\n", "agent/new.md": "", "0.md": "first\n"},
			}
			for i, w := range writes {
				plumbWrite(t, r, fmt.Sprintf("agent %d", i), w)
				want := headIndex(t, dir)
				status := ""
				if wantIntent {
					want["pending.md"] = "100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0"
					status = " A pending.md\n"
				}
				if d := diffMaps(lsFiles(t, dir), want); d != "" {
					t.Errorf("after write %d, git ls-files -s against HEAD:\n%s", i, d)
				}
				if got := fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all"); got != status {
					t.Errorf("after write %d, git status = %q, want %q", i, got, status)
				}
				if split, _ := isSplit(t, dir); !split {
					t.Errorf("after write %d the index is no longer split", i)
				}
				if i == 0 {
					fixtures.Git(t, dir, "status", "--porcelain") // git refreshes and rewrites it, split
				}
			}
			writeFile(t, dir, "other.md", "a person's next note\n")
			fixtures.Git(t, dir, "add", "other.md")
			fixtures.Git(t, dir, "commit", "--quiet", "-m", "a person adds other.md")
			if got, want := fixtures.GitOutput(t, dir, "diff-tree", "-r", "--name-status", "HEAD~1", "HEAD"), "A\tother.md\n"; got != want {
				t.Errorf("the person's commit changed:\n%swant only:\n%s", got, want)
			}
			if got := fixtures.GitOutput(t, dir, "show", "HEAD:notes/d1/f001.md"); got != "changed again\n" {
				t.Errorf("HEAD:notes/d1/f001.md = %q after the person's commit", got)
			}
			fsck(t, dir)
		})
	}
}

// TestUpdateIndexSplitsAsConfigured proves the program honours git's
// core.splitIndex: true splits even a small index, and every write keeps git
// reading the right entries while the index file holds more and more of
// them; past splitIndex.maxPercentChange a new shared index is written and
// the old one, once expired, removed; false makes the index whole again.
func TestUpdateIndexSplitsAsConfigured(t *testing.T) {
	fixtures.RequireGit(t)
	dir := personRepo(t, personFiles(60))
	fixtures.Git(t, dir, "config", "core.splitIndex", "true")
	fixtures.Git(t, dir, "config", "splitIndex.maxPercentChange", "10")
	fixtures.Git(t, dir, "config", "splitIndex.sharedIndexExpire", "now")
	r := openRepo(t, dir)

	var firstShared []string
	for i := range 12 {
		plumbWrite(t, r, fmt.Sprintf("agent %d", i), map[string]string{
			fmt.Sprintf("notes/d%d/f%03d.md", i%7, i): fmt.Sprintf("note %d by an agent\n", i),
			fmt.Sprintf("agent/a%02d.md", i):          "added\n",
		})
		split, shared := isSplit(t, dir)
		if !split || len(shared) != 1 {
			t.Fatalf("after write %d: split %v, shared indexes %q; want split on one shared index", i, split, shared)
		}
		if i == 0 {
			firstShared = shared
		}
		if d := diffMaps(lsFiles(t, dir), headIndex(t, dir)); d != "" {
			t.Fatalf("after write %d, git ls-files -s against HEAD:\n%s", i, d)
		}
		assertClean(t, dir)
	}
	if _, shared := isSplit(t, dir); shared[0] == firstShared[0] {
		t.Errorf("24 of 84 entries changed, over 10%%, and the shared index is still %s", filepath.Base(shared[0]))
	}

	// A shared index removed under a process that holds it: its next write
	// puts one back before the index file names it.
	_, shared := isSplit(t, dir)
	if err := os.Remove(shared[0]); err != nil {
		t.Fatal(err)
	}
	plumbWrite(t, r, "after the shared index went", map[string]string{"agent/again.md": "again\n"})
	if split, shared := isSplit(t, dir); !split || len(shared) != 1 {
		t.Fatalf("after the shared index was removed: split %v, shared %q", split, shared)
	}
	assertClean(t, dir)

	fixtures.Git(t, dir, "config", "core.splitIndex", "false")
	plumbWrite(t, r, "whole again", map[string]string{"agent/last.md": "last\n"})
	if split, _ := isSplit(t, dir); split {
		t.Error("core.splitIndex=false and the index is still split")
	}
	if d := diffMaps(lsFiles(t, dir), headIndex(t, dir)); d != "" {
		t.Errorf("whole again, git ls-files -s against HEAD:\n%s", d)
	}
	assertClean(t, dir)
	fsck(t, dir)
}

// largeBoard is a person's repository of 10,000 committed notes in 50
// topics, its index as git left it: large enough for the board to split it.
func largeBoard(t *testing.T) string {
	t.Helper()
	files := map[string]string{}
	for i := range 10_000 {
		files[fmt.Sprintf("t%02d/n%05d.md", i%50, i)] = fmt.Sprintf("note %d\n", i)
	}
	return personRepo(t, files)
}

// TestUpdateIndexSplitsALargeBoard proves an index of 10,000 entries is
// split by the program's write without any config: the index file it writes
// then is a few kilobytes instead of a megabyte, and git reads it whole.
func TestUpdateIndexSplitsALargeBoard(t *testing.T) {
	fixtures.RequireGit(t)
	if testing.Short() {
		t.Skip("writes 10,000 files")
	}
	dir := largeBoard(t)
	r := openRepo(t, dir)
	plumbWrite(t, r, "agent", map[string]string{"t07/n00007.md": "by an agent\n", "t99/new.md": "new\n"})
	if split, shared := isSplit(t, dir); !split || len(shared) != 1 {
		t.Fatalf("10,002 entries: split %v, shared %q; want the index split", split, shared)
	}
	plumbWrite(t, r, "agent again", map[string]string{"t08/n00008.md": "by an agent\n"})
	fi, err := os.Stat(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4096 {
		t.Errorf("the index file is %d bytes after two writes; want the changes alone", fi.Size())
	}
	if got, want := strings.Count(fixtures.GitOutput(t, dir, "ls-files"), "\n"), 10_001; got != want {
		t.Errorf("git ls-files lists %d paths, want %d", got, want)
	}
	assertClean(t, dir)
}

// TestUpdateIndexBoundsTheIndexFile proves that, splitIndex.maxPercentChange
// unset, the index file of a large board never holds more than 2,000
// entries: past them the write makes a new shared index, well before git's
// 20%. A shared index replaced is removed at a later one once untouched for
// a minute, and not before; with maxPercentChange set, git's share alone
// decides.
func TestUpdateIndexBoundsTheIndexFile(t *testing.T) {
	fixtures.RequireGit(t)
	if testing.Short() {
		t.Skip("writes 10,000 files")
	}
	dir := largeBoard(t)
	r := openRepo(t, dir)
	batch := func(name string, n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s/n%04d.md", name, i)] = name + "\n"
		}
		return m
	}
	sharedNow := func(when string) string {
		t.Helper()
		if split, _ := isSplit(t, dir); !split {
			t.Fatalf("%s: the index is not split", when)
		}
		return filepath.Base(strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-parse", "--shared-index-path")))
	}
	plumbWrite(t, r, "first", map[string]string{"a/first.md": "first\n"})
	first := sharedNow("after the first write")
	plumbWrite(t, r, "2,000 more", batch("b", 2_000)) // the first is in the shared index made then
	if got := sharedNow("at 2,000 entries"); got != first {
		t.Fatalf("2,000 entries in the index file, and a new shared index %s", got)
	}
	plumbWrite(t, r, "one past", map[string]string{"c/past.md": "past\n"})
	second := sharedNow("at 2,001 entries")
	if second == first {
		t.Fatalf("2,001 entries in the index file (under 20%% of 12,002), and the shared index is still %s", first)
	}
	if fi, err := os.Stat(filepath.Join(dir, ".git", "index")); err != nil || fi.Size() > 4096 {
		t.Errorf("the index file after a new shared index: %v, %v; want the changes alone", fi.Size(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", first)); err != nil {
		t.Errorf("the shared index just replaced is gone: %v", err)
	}
	// Untouched for two minutes, the replaced one goes at the next new one.
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(filepath.Join(dir, ".git", first), old, old); err != nil {
		t.Fatal(err)
	}
	plumbWrite(t, r, "2,001 more", batch("d", 2_001))
	if third := sharedNow("after 2,001 more"); third == second {
		t.Fatalf("2,001 more entries and the shared index is still %s", second)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", first)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a shared index untouched for two minutes is kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", second)); err != nil {
		t.Errorf("the shared index replaced a moment ago is gone: %v", err)
	}
	assertClean(t, dir)

	// Set, git's share alone decides: 2,001 entries are under 20%.
	fixtures.Git(t, dir, "config", "splitIndex.maxPercentChange", "20")
	now := sharedNow("before the share is set")
	plumbWrite(t, r, "2,001 under the share", batch("e", 2_001))
	if got := sharedNow("maxPercentChange 20"); got != now {
		t.Errorf("2,001 of 16,004 entries, under 20%%, and a new shared index %s", got)
	}
	assertClean(t, dir)
}

// TestUpdateIndexRefusesBrokenSplitIndex proves a split index whose shared
// index is gone or damaged is reported, and the index and lock left alone.
func TestUpdateIndexRefusesBrokenSplitIndex(t *testing.T) {
	fixtures.RequireGit(t)
	for _, damage := range []string{"missing", "damaged"} {
		t.Run(damage, func(t *testing.T) {
			dir := personRepo(t, personFiles(10))
			fixtures.Git(t, dir, "update-index", "--split-index")
			_, shared := isSplit(t, dir)
			if damage == "missing" {
				os.Remove(shared[0])
			} else {
				data, _ := os.ReadFile(shared[0])
				data[len(data)/2] ^= 0xff
				if err := os.Chmod(shared[0], 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(shared[0], data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			indexPath := filepath.Join(dir, ".git", "index")
			before, _ := os.ReadFile(indexPath)
			r := openRepo(t, dir)
			writeFile(t, dir, "agent.md", "agent\n")
			fi, err := os.Stat(filepath.Join(dir, "agent.md"))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.UpdateIndex([]gitver.IndexEntry{{Path: "agent.md", Blob: gitver.BlobHash([]byte("agent\n")), Info: fi}}); err == nil {
				t.Fatal("UpdateIndex on a split index without its shared index succeeded")
			}
			if after, _ := os.ReadFile(indexPath); !bytes.Equal(after, before) {
				t.Error("the index file changed")
			}
			if _, err := os.Stat(r.IndexLockPath()); !os.IsNotExist(err) {
				t.Errorf("%s left behind", r.IndexLockPath())
			}
		})
	}
}
