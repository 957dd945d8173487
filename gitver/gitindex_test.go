package gitver_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// plumbWrite is what the program does for one write: commit files (path ->
// content, "" deletes) on the branch by plumbing, put the same content on disk,
// record it in git's index with UpdateIndex, and move the branch.
func plumbWrite(t testing.TB, r *gitver.Repo, msg string, files map[string]string) gitver.Hash {
	t.Helper()
	head := mustHead(t, r)
	c := commitFiles(t, r, head, msg, files)
	entries := make([]gitver.IndexEntry, 0, len(files))
	for _, p := range sortedKeys(files) {
		content := files[p]
		e := gitver.IndexEntry{Path: p}
		if content == "" {
			if err := os.Remove(filepath.Join(r.Dir(), filepath.FromSlash(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			removeEmptyParents(t, r.Dir(), p)
		} else {
			writeFile(t, r.Dir(), p, content)
			fi, err := os.Lstat(filepath.Join(r.Dir(), filepath.FromSlash(p)))
			if err != nil {
				t.Fatal(err)
			}
			e.Blob, e.Info = gitver.BlobHash([]byte(content)), fi
		}
		entries = append(entries, e)
	}
	if err := r.UpdateIndex(entries); err != nil {
		t.Fatalf("UpdateIndex: %v", err)
	}
	if err := r.UpdateBranch(head, c, agent, "commit: "+msg); err != nil {
		t.Fatalf("UpdateBranch: %v", err)
	}
	return c
}

// removeEmptyParents removes the directories of p that a deletion left empty,
// as git does when it removes a file from the work tree.
func removeEmptyParents(t testing.TB, root, p string) {
	t.Helper()
	for d := filepath.Dir(filepath.FromSlash(p)); d != "."; d = filepath.Dir(d) {
		if err := os.Remove(filepath.Join(root, d)); err != nil {
			return // not empty
		}
	}
}

// assertClean fails the test unless git sees the work tree, the index and
// HEAD in step. `git diff-files` runs first because it does not refresh the
// index: it reports every entry whose recorded stat data (size, mtime,
// ctime, inode) does not match the file, so it proves UpdateIndex recorded the
// file as it is on disk, not merely its content.
func assertClean(t testing.TB, dir string) {
	t.Helper()
	checks := [][]string{
		{"diff-files", "--name-status"},
		{"diff-index", "--cached", "--name-status", "HEAD"},
		{"status", "--porcelain", "--untracked-files=all"},
	}
	for _, args := range checks {
		if out := fixtures.GitOutput(t, dir, args...); out != "" {
			t.Errorf("git %s, want no output:\n%s", strings.Join(args, " "), out)
		}
	}
}

// personFiles is a board a person made and committed with C git: many
// entries in nested directories, so git's index has a cache-tree extension
// and entries that UpdateIndex must carry over untouched.
func personFiles(n int) map[string]string {
	files := map[string]string{"old/only.md": "the only file of old/\n", "README.md": "readme\n"}
	for i := range n {
		files[fmt.Sprintf("notes/d%d/f%03d.md", i%7, i)] = fmt.Sprintf("note %d\n", i)
	}
	return files
}

func personRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitInit(t, dir)
	for p, content := range files {
		writeFile(t, dir, p, content)
	}
	fixtures.Git(t, dir, "add", "-A")
	// No automatic gc: past 6,700 loose objects git's commit starts one in
	// the background, which can still be writing in .git when the test
	// removes its directory (seen on a slow disk).
	fixtures.Git(t, dir, "-c", "gc.auto=0", "commit", "--quiet", "-m", "a person's board")
	return dir
}

// TestUpdateIndexKeepsGitInStep proves plumbing commits followed by
// UpdateIndex leave git's index agreeing with HEAD and the work tree (git
// status is empty and no stat data is stale), keep every other entry of an
// index C git wrote, and that a person's next `git add other.md && git commit`
// keeps every file the program committed at its new content instead of
// building the tree from a stale index.
func TestUpdateIndexKeepsGitInStep(t *testing.T) {
	fixtures.RequireGit(t)
	files := personFiles(150)
	dir := personRepo(t, files)
	r := openRepo(t, dir)

	writes := []map[string]string{
		{"notes/d3/f010.md": "note 10, by an agent\n", "new/deep/x.md": "new\n", "top.md": "top\n", "notes/d6/f020.md": "", "old/only.md": ""},
		// The index is unchanged since the last UpdateIndex: its cached parse is reused.
		{"notes/d3/f010.md": "note 10, second agent version\n", "top.md": "", "z.md": "z\n"},
	}
	for i, w := range writes {
		if i == 1 {
			// git status refreshes and rewrites the index: the next write must read it again.
			fixtures.Git(t, dir, "status", "--porcelain")
		}
		plumbWrite(t, r, fmt.Sprintf("agent write %d", i), w)
		for p, content := range w {
			if content == "" {
				delete(files, p)
			} else {
				files[p] = content
			}
		}
		assertClean(t, dir)
		if got, want := strings.Count(fixtures.GitOutput(t, dir, "ls-files"), "\n"), len(files); got != want {
			t.Errorf("after write %d: git ls-files lists %d paths, want %d", i, got, want)
		}
	}
	plumbWrite(t, r, "agent write 3", map[string]string{"z.md": "z, again\n"})
	files["z.md"] = "z, again\n"
	assertClean(t, dir)

	writeFile(t, dir, "other.md", "a person's new note\n")
	fixtures.Git(t, dir, "add", "other.md")
	fixtures.Git(t, dir, "commit", "--quiet", "-m", "a person adds other.md")
	files["other.md"] = "a person's new note\n"

	if got, want := fixtures.GitOutput(t, dir, "diff-tree", "-r", "--name-status", "HEAD~1", "HEAD"), "A\tother.md\n"; got != want {
		t.Errorf("the person's commit changed:\n%swant only:\n%s", got, want)
	}
	for _, p := range []string{"notes/d3/f010.md", "new/deep/x.md", "z.md", "README.md", "notes/d0/f000.md"} {
		if got := fixtures.GitOutput(t, dir, "show", "HEAD:"+p); got != files[p] {
			t.Errorf("git show HEAD:%s = %q, want %q", p, got, files[p])
		}
	}
	for _, p := range []string{"notes/d6/f020.md", "old/only.md", "top.md"} {
		if fixtures.GitCmd(dir, "cat-file", "-e", "HEAD:"+p).Run() == nil {
			t.Errorf("HEAD:%s exists; the program deleted it", p)
		}
	}
	want := map[string]string{}
	for p, content := range files {
		want[p] = "100644 blob " + gitver.BlobHash([]byte(content)).String()
	}
	if d := diffMaps(lsTree(t, dir, "HEAD"), want); d != "" {
		t.Errorf("HEAD's tree after the person's commit:\n%s", d)
	}
	assertClean(t, dir)
	fsck(t, dir)
}

// lsFiles is `git ls-files -s`: path -> "mode blob stage" for every stage.
func lsFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, rec := range strings.Split(fixtures.GitOutput(t, dir, "ls-files", "-s", "-z"), "\x00") {
		if rec == "" {
			continue
		}
		meta, path, _ := strings.Cut(rec, "\t")
		if prev, ok := m[path]; ok {
			meta = prev + "|" + meta
		}
		m[path] = meta
	}
	return m
}

// TestUpdateIndexEntries proves each kind of entry lands in git's index as
// git would record it, and nothing else changes.
func TestUpdateIndexEntries(t *testing.T) {
	fixtures.RequireGit(t)
	base := map[string]string{"a.md": "a\n", "b.md": "b\n", "dir/c.md": "c\n"}
	tests := []struct {
		name  string
		write map[string]string // committed and put on disk; "" deletes
		want  map[string]string // the index after, path -> content
	}{
		{"add a path", map[string]string{"new/n.md": "n\n"},
			map[string]string{"a.md": "a\n", "b.md": "b\n", "dir/c.md": "c\n", "new/n.md": "n\n"}},
		{"replace a tracked path", map[string]string{"b.md": "b, v2\n"},
			map[string]string{"a.md": "a\n", "b.md": "b, v2\n", "dir/c.md": "c\n"}},
		{"remove a tracked path (Info nil)", map[string]string{"dir/c.md": ""},
			map[string]string{"a.md": "a\n", "b.md": "b\n"}},
		{"remove an untracked path is a no-op", map[string]string{"never.md": ""},
			map[string]string{"a.md": "a\n", "b.md": "b\n", "dir/c.md": "c\n"}},
		{"several at once, sorting before and after existing entries", map[string]string{"0.md": "0\n", "a.md": "", "dir/b.md": "b\n", "zz/z.md": "z\n"},
			map[string]string{"0.md": "0\n", "b.md": "b\n", "dir/b.md": "b\n", "dir/c.md": "c\n", "zz/z.md": "z\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := personRepo(t, base)
			r := openRepo(t, dir)
			plumbWrite(t, r, tt.name, tt.write)
			want := map[string]string{}
			for p, content := range tt.want {
				want[p] = "100644 " + gitver.BlobHash([]byte(content)).String() + " 0"
			}
			if d := diffMaps(lsFiles(t, dir), want); d != "" {
				t.Errorf("git ls-files -s:\n%s", d)
			}
			assertClean(t, dir)
		})
	}

	t.Run("no entries leave the index file alone", func(t *testing.T) {
		dir := personRepo(t, base)
		r := openRepo(t, dir)
		indexPath := filepath.Join(r.GitDir(), "index")
		before, err := os.ReadFile(indexPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.UpdateIndex(nil); err != nil {
			t.Fatalf("UpdateIndex(nil) = %v", err)
		}
		if after, err := os.ReadFile(indexPath); err != nil || !bytes.Equal(after, before) {
			t.Errorf("UpdateIndex(nil) rewrote the index (%v)", err)
		}
	})
}

// TestUpdateIndexCreatesIndex proves a repository that only the program has
// written to (gitver.Init, no index file yet) gets an index git reads as
// clean, and a person's first `git commit` there keeps the program's files.
func TestUpdateIndexCreatesIndex(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	plumbWrite(t, r, "first", map[string]string{"a.md": "a\n", "d/b.md": "b\n"})
	assertClean(t, dir)
	writeFile(t, dir, "other.md", "other\n")
	fixtures.Git(t, dir, "add", "other.md")
	fixtures.Git(t, dir, "commit", "--quiet", "-m", "person")
	for p, want := range map[string]string{"a.md": "a\n", "d/b.md": "b\n", "other.md": "other\n"} {
		if got := fixtures.GitOutput(t, dir, "show", "HEAD:"+p); got != want {
			t.Errorf("git show HEAD:%s = %q, want %q", p, got, want)
		}
	}
	fsck(t, dir)
}

// TestUpdateIndexKeepsIndexFormats proves an index C git wrote in any of its
// formats, and with entries only git understands (intent-to-add from
// `git add -N`), is still one git reads the same way after UpdateIndex.
func TestUpdateIndexKeepsIndexFormats(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name       string
		setup      [][]string // git commands run after the person's commit
		wantStatus string     // git status --porcelain after the program's write
	}{
		{"index version 2", [][]string{{"update-index", "--index-version", "2"}}, ""},
		{"index version 3", [][]string{{"update-index", "--index-version", "3"}}, ""},
		{"index version 4", [][]string{{"update-index", "--index-version", "4"}}, ""},
		{"untracked cache extension", [][]string{{"update-index", "--untracked-cache"}, {"status", "--porcelain"}}, ""},
		{"an intent-to-add entry", [][]string{{"add", "--intent-to-add", "pending.md"}}, " A pending.md\n"},
		{"an intent-to-add entry in index version 4", [][]string{{"update-index", "--index-version", "4"}, {"add", "--intent-to-add", "pending.md"}}, " A pending.md\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := personRepo(t, personFiles(30))
			writeFile(t, dir, "pending.md", "not yet added\n")
			if !strings.Contains(tt.name, "intent-to-add") {
				if err := os.Remove(filepath.Join(dir, "pending.md")); err != nil {
					t.Fatal(err)
				}
			}
			for _, args := range tt.setup {
				fixtures.Git(t, dir, args...)
			}
			r := openRepo(t, dir)
			plumbWrite(t, r, "agent", map[string]string{"notes/d1/f001.md": "changed\n", "agent.md": "agent\n"})
			if got := fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all"); got != tt.wantStatus {
				t.Errorf("git status --porcelain = %q, want %q", got, tt.wantStatus)
			}
			if got, want := strings.Count(fixtures.GitOutput(t, dir, "ls-files"), "\n"), len(personFiles(30))+1+strings.Count(tt.wantStatus, "\n"); got != want {
				t.Errorf("git ls-files lists %d paths, want %d", got, want)
			}
			fsck(t, dir)
		})
	}
}

// TestUpdateIndexKeepsConflictStages proves UpdateIndex during a person's
// unresolved merge keeps the conflicted path's stages 1, 2 and 3 in the order
// git requires: `git fsck` refuses an index whose stages of one path are out
// of order ("unordered stage entries"), and git looks stages up by binary
// search. The board size, the conflicted path and the new path that sorts
// first are one arrangement where go-git's unstable sort moves the stages.
func TestUpdateIndexKeepsConflictStages(t *testing.T) {
	fixtures.RequireGit(t)
	dir := personRepo(t, personFiles(12))
	fixtures.Git(t, dir, "switch", "--quiet", "-c", "side")
	writeFile(t, dir, "notes/d3/f003.md", "side's version\n")
	fixtures.Git(t, dir, "commit", "--quiet", "-am", "side")
	fixtures.Git(t, dir, "switch", "--quiet", "main")
	writeFile(t, dir, "notes/d3/f003.md", "main's version\n")
	fixtures.Git(t, dir, "commit", "--quiet", "-am", "main")
	if fixtures.GitCmd(dir, "merge", "--quiet", "side").Run() == nil {
		t.Fatal("git merge side succeeded; the test needs a conflict")
	}
	wantStages := lsFiles(t, dir)["notes/d3/f003.md"]
	if strings.Count(wantStages, "|") != 2 {
		t.Fatalf("git ls-files -s shows %q for the conflicted path, want three stages", wantStages)
	}

	r := openRepo(t, dir)
	plumbWrite(t, r, "agent during a merge", map[string]string{"0-agent.md": "agent\n"})

	if out, err := fixtures.GitCmd(dir, "fsck", "--no-dangling", "--no-progress").CombinedOutput(); err != nil {
		t.Errorf("git fsck on the index UpdateIndex wrote: %v\n%s", err, out)
	}
	if got := lsFiles(t, dir)["notes/d3/f003.md"]; got != wantStages {
		t.Errorf("stages of the conflicted path = %q, want %q", got, wantStages)
	}
	if got := fixtures.GitOutput(t, dir, "diff", "--name-only", "--diff-filter=U"); got != "notes/d3/f003.md\n" {
		t.Errorf("git diff --diff-filter=U = %q, want the conflicted path", got)
	}
}
