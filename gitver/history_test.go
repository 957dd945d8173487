package gitver_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// emptyTree is git's empty tree, which git knows without storing it.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// gitDiffTree is `git diff-tree -r --no-renames` between two tree-ish
// revisions, as sorted "path old new" lines (a missing side is the zero
// hash, as in PathChange).
func gitDiffTree(t testing.TB, dir, a, b string) []string {
	t.Helper()
	out := fixtures.GitOutput(t, dir, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", a, b)
	fields := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	var lines []string
	for i := 0; i+1 < len(fields); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(meta) != 5 {
			t.Fatalf("git diff-tree: odd record %q", fields[i])
		}
		lines = append(lines, fields[i+1]+" "+meta[2]+" "+meta[3])
	}
	sort.Strings(lines)
	return lines
}

// changeLines is gitver's answer in gitDiffTree's form. The order of
// PathChanges is not specified, so both sides are sorted.
func changeLines(changes []gitver.PathChange) []string {
	lines := make([]string, 0, len(changes))
	for _, c := range changes {
		lines = append(lines, c.Path+" "+c.Old.String()+" "+c.New.String())
	}
	sort.Strings(lines)
	return lines
}

// personHistory builds a history with the C git CLI that exercises every
// kind of tree change: additions, modifications and deletions in nested
// directories, renames by git mv, a file replaced by a directory and the
// reverse, a symbolic link, an empty commit, and a merge of a side branch.
func personHistory(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	gitInit(t, dir)
	commit := func(msg string, files map[string]string, cmds ...[]string) {
		t.Helper()
		for _, c := range cmds {
			fixtures.Git(t, dir, c...)
		}
		for p, content := range files {
			writeFile(t, dir, p, content)
		}
		fixtures.Git(t, dir, "add", "-A")
		fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", msg)
	}
	commit("root", map[string]string{
		"a.md": "a\n", "dir/b.md": "b\n", "dir/sub/c.md": "c\n", "z.md": "z\n", "x": "x is a file\n",
		"sp ace/été.md": "accents\n", "a-b.md": "a-b\n", "a/in.md": "in\n",
	})
	if err := os.Symlink("a.md", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	commit("modify and add nested, add a symlink", map[string]string{"a.md": "a, v2\n", "dir/sub/d.md": "d\n"})
	commit("delete", nil, []string{"rm", "--quiet", "z.md", "dir/sub/c.md"})
	fixtures.Git(t, dir, "branch", "side")
	commit("rename by git mv", nil, []string{"mv", "a.md", "renamed.md"}, []string{"mv", "dir/b.md", "a/b.md"})
	commit("file becomes a directory", map[string]string{"x/y.md": "y\n"}, []string{"rm", "--quiet", "x"})
	commit("directory becomes a file", map[string]string{"dir/sub": "sub is a file now\n"}, []string{"rm", "-r", "--quiet", "dir/sub"})
	fixtures.Git(t, dir, "switch", "--quiet", "side")
	commit("side: add and modify", map[string]string{"side.md": "side\n", "sp ace/été.md": "accents, side\n", "a/in.md": "in, side\n"})
	fixtures.Git(t, dir, "switch", "--quiet", "main")
	fixtures.Git(t, dir, "merge", "--quiet", "--no-ff", "-m", "merge side", "side")
	commit("empty", nil)
	if err := os.Remove(filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("renamed.md", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	commit("retarget the symlink, add next to the merged file", map[string]string{"side2.md": "s2\n"})
	return dir
}

// TestChangesMatchesGitDiffTree proves Changes of every first-parent commit
// of a history made by the C git CLI lists exactly what
// `git diff-tree -r --no-renames <first parent> <commit>` lists (`--root`
// for the root commit), a rename being a deletion and an addition; and for
// a merge, besides, every path that differs from the other parent only,
// with the merge's blob on both sides.
func TestChangesMatchesGitDiffTree(t *testing.T) {
	fixtures.RequireGit(t)
	dir := personHistory(t)
	r := openRepo(t, dir)
	chain := strings.Fields(fixtures.GitOutput(t, dir, "rev-list", "--first-parent", "main"))
	if len(chain) != 9 {
		t.Fatalf("the history has %d first-parent commits, want 9", len(chain))
	}
	sawMerge := false
	for _, hs := range chain {
		h, err := gitver.ParseHash(hs)
		if err != nil {
			t.Fatal(err)
		}
		c, err := r.ReadCommit(h)
		if err != nil {
			t.Fatalf("ReadCommit(%s): %v", hs, err)
		}
		subject := c.Subject()
		parent := emptyTree
		if len(c.Parents) > 0 {
			parent = c.Parents[0].String()
		}
		if len(c.Parents) == 2 {
			sawMerge = true
			// The merge must look different from each side, or the test
			// could not tell which parent Changes compared with.
			if a, b := gitDiffTree(t, dir, parent, hs), gitDiffTree(t, dir, c.Parents[1].String(), hs); len(a) == 0 || strings.Join(a, "\n") == strings.Join(b, "\n") {
				t.Fatalf("merge %q: diffs against the two parents are %q and %q; want them different", subject, a, b)
			}
		}
		changes, err := r.Changes(c)
		if err != nil {
			t.Fatalf("Changes(%q): %v", subject, err)
		}
		want := gitDiffTree(t, dir, parent, hs)
		// A line is "path old new", and a path may hold spaces.
		split := func(line string) (path, newBlob string) {
			i := strings.LastIndexByte(line, ' ')
			j := strings.LastIndexByte(line[:i], ' ')
			return line[:j], line[i+1:]
		}
		listed := map[string]bool{}
		for _, line := range want {
			p, _ := split(line)
			listed[p] = true
		}
		for _, other := range c.Parents[min(1, len(c.Parents)):] {
			for _, line := range gitDiffTree(t, dir, other.String(), hs) {
				if p, blob := split(line); !listed[p] {
					listed[p] = true
					want = append(want, p+" "+blob+" "+blob)
				}
			}
		}
		sort.Strings(want)
		got := changeLines(changes)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("Changes(%q):\ngot:\n  %s\nwant (git diff-tree):\n  %s", subject,
				strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	}
	if !sawMerge {
		t.Errorf("no merge commit on the first-parent chain; the history does not test merges")
	}
}

// TestDiffTreesMatchesGit proves DiffTrees between any two trees, or between
// nothing (the zero hash) and a tree, agrees with git diff-tree.
func TestDiffTreesMatchesGit(t *testing.T) {
	fixtures.RequireGit(t)
	dir := personHistory(t)
	r := openRepo(t, dir)
	tests := []struct{ a, b string }{
		{"main~8", "main"},
		{"main", "main~8"},
		{"main~7", "main~4"},
		{"side", "main~1"},
		{"main~2", "main~2"},
		{"", "main~5"},
		{"main~3", ""},
	}
	for _, tt := range tests {
		t.Run(tt.a+".."+tt.b, func(t *testing.T) {
			tree := func(rev string) (gitver.Hash, string) {
				if rev == "" {
					return gitver.ZeroHash, emptyTree
				}
				h := revParse(t, dir, rev+"^{tree}")
				return h, h.String()
			}
			a, gitA := tree(tt.a)
			b, gitB := tree(tt.b)
			changes, err := r.DiffTrees(a, b)
			if err != nil {
				t.Fatalf("DiffTrees: %v", err)
			}
			got, want := changeLines(changes), gitDiffTree(t, dir, gitA, gitB)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("DiffTrees:\ngot:\n  %s\nwant (git diff-tree):\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
		})
	}
}

// TestChangesCountsContentOnly proves what Changes leaves out of git's
// answer, by design: a change of mode alone (the blob is the same, so no
// version of the file's content is new) and submodule entries (not files of
// this repository).
func TestChangesCountsContentOnly(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	gitInit(t, dir)
	writeFile(t, dir, "run.sh", "echo hi\n")
	fixtures.Git(t, dir, "add", "run.sh")
	fixtures.Git(t, dir, "commit", "--quiet", "-m", "root")
	r := openRepo(t, dir)

	tests := []struct {
		name    string
		change  [][]string // git commands making the commit
		gitSays int        // lines git diff-tree prints
	}{
		{"mode change only", [][]string{{"update-index", "--chmod=+x", "run.sh"}}, 1},
		{"submodule added", [][]string{{"update-index", "--add", "--cacheinfo", "160000," + revParse(t, dir, "HEAD").String() + ",vendor/lib"}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range tt.change {
				fixtures.Git(t, dir, c...)
			}
			fixtures.Git(t, dir, "commit", "--quiet", "-m", tt.name)
			if got := gitDiffTree(t, dir, "HEAD~1", "HEAD"); len(got) != tt.gitSays {
				t.Fatalf("git diff-tree lists %q, want %d line(s)", got, tt.gitSays)
			}
			c, err := r.ReadCommit(revParse(t, dir, "HEAD"))
			if err != nil {
				t.Fatal(err)
			}
			changes, err := r.Changes(c)
			if err != nil {
				t.Fatalf("Changes: %v", err)
			}
			if len(changes) != 0 {
				t.Errorf("Changes = %v, want none", changes)
			}
		})
	}
}
