package gitver_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// TestCommitByPlumbingMatchesGit proves that a sequence of plumbing commits
// writes exactly the trees the C git CLI writes for the same files: each
// step's tree hash equals `git add -A && git write-tree` of the same content in
// an independent repository, `git ls-tree -r` lists exactly the expected paths
// and blobs, the commit object is byte for byte what git prints, and
// `git fsck --strict` (which rejects misordered or malformed trees) is clean.
// The first step puts git's tree-order neighbours side by side: a directory
// sorts as if its name ended in "/", so "a-b.md" < "a.b" < "a.md" < "a/" <
// "a0", which a plain sort of names gets wrong.
func TestCommitByPlumbingMatchesGit(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	mirror := t.TempDir()
	gitInit(t, mirror)

	steps := []struct {
		name  string
		files map[string]string // path -> content; "" deletes
		want  map[string]string // every path of the commit's tree -> content
	}{{
		name: "root with tree-order neighbours",
		files: map[string]string{
			"a-b.md": "a-b\n", "a.b": "a.b\n", "a.md": "a\n", "a/x.md": "a/x\n", "a0": "a0\n",
			"a_b.md": "a_b\n", "B.md": "B\n", "notes/deep/nested/n.md": "n\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
		want: map[string]string{
			"a-b.md": "a-b\n", "a.b": "a.b\n", "a.md": "a\n", "a/x.md": "a/x\n", "a0": "a0\n",
			"a_b.md": "a_b\n", "B.md": "B\n", "notes/deep/nested/n.md": "n\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
	}, {
		name:  "modify, add in a new subdirectory, delete a neighbour",
		files: map[string]string{"a.md": "a, second version\n", "a/sub/z.md": "z\n", "a-b.md": ""},
		want: map[string]string{
			"a.b": "a.b\n", "a.md": "a, second version\n", "a/x.md": "a/x\n", "a/sub/z.md": "z\n", "a0": "a0\n",
			"a_b.md": "a_b\n", "B.md": "B\n", "notes/deep/nested/n.md": "n\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
	}, {
		name:  "deleting the only file of a deep directory removes every emptied directory",
		files: map[string]string{"notes/deep/nested/n.md": ""},
		want: map[string]string{
			"a.b": "a.b\n", "a.md": "a, second version\n", "a/x.md": "a/x\n", "a/sub/z.md": "z\n", "a0": "a0\n",
			"a_b.md": "a_b\n", "B.md": "B\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
	}, {
		name:  "a file becomes a directory of the same name",
		files: map[string]string{"a0": "", "a0/inner.md": "inner\n"},
		want: map[string]string{
			"a.b": "a.b\n", "a.md": "a, second version\n", "a/x.md": "a/x\n", "a/sub/z.md": "z\n", "a0/inner.md": "inner\n",
			"a_b.md": "a_b\n", "B.md": "B\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
	}, {
		name:  "deleting every file of a directory with a subdirectory removes both",
		files: map[string]string{"a/x.md": "", "a/sub/z.md": ""},
		want: map[string]string{
			"a.b": "a.b\n", "a.md": "a, second version\n", "a0/inner.md": "inner\n",
			"a_b.md": "a_b\n", "B.md": "B\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
	}, {
		name:  "same content again and deleting a missing path change nothing",
		files: map[string]string{"a.md": "a, second version\n", "missing/file.md": "", "gone.md": ""},
		want: map[string]string{
			"a.b": "a.b\n", "a.md": "a, second version\n", "a0/inner.md": "inner\n",
			"a_b.md": "a_b\n", "B.md": "B\n",
			"with space.md": "space\n", "été.md": "accents\n", "x/y.md": "x/y\n", "x.y/z.md": "x.y/z\n", "x-y.md": "x-y\n",
		},
	}, {
		name: "deleting everything leaves the empty tree",
		files: map[string]string{
			"a.b": "", "a.md": "", "a0/inner.md": "", "a_b.md": "", "B.md": "",
			"with space.md": "", "été.md": "", "x/y.md": "", "x.y/z.md": "", "x-y.md": "",
		},
		want: map[string]string{},
	}}

	var parent gitver.Hash
	var messages []string
	for i, step := range steps {
		msg := fmt.Sprintf("step %d: %s\n\nBlackboard-Step: %d\n", i, step.name, i)
		c := commitFiles(t, r, parent, msg, step.files)
		if err := r.UpdateBranch(parent, c, agent, "commit: step"); err != nil {
			t.Fatalf("step %q: UpdateBranch: %v", step.name, err)
		}
		messages = append(messages, fmt.Sprintf("step %d: %s", i, step.name))

		wantTree := make(map[string]string, len(step.want))
		for p, content := range step.want {
			wantTree[p] = "100644 blob " + gitver.BlobHash([]byte(content)).String()
		}
		if d := diffMaps(lsTree(t, dir, c.String()), wantTree); d != "" {
			t.Errorf("step %q: git ls-tree -r differs from the files committed:\n%s", step.name, d)
		}

		info, err := r.ReadCommit(c)
		if err != nil {
			t.Fatalf("step %q: ReadCommit: %v", step.name, err)
		}
		if got, want := info.Tree, gitTreeOf(t, mirror, step.want); got != want {
			t.Errorf("step %q: tree = %s, want %s (the tree git write-tree builds from the same files)", step.name, got, want)
		}

		parentLine := ""
		if !parent.IsZero() {
			parentLine = "parent " + parent.String() + "\n"
		}
		wantObj := "tree " + info.Tree.String() + "\n" + parentLine +
			"author Agent Smith <smith@blackboard.local> 1700000000 -0330\n" +
			"committer Agent Smith <smith@blackboard.local> 1700000000 -0330\n\n" + msg
		if got := fixtures.GitOutput(t, dir, "cat-file", "-p", c.String()); got != wantObj {
			t.Errorf("step %q: git cat-file -p:\ngot:\n%s\nwant:\n%s", step.name, got, wantObj)
		}
		parent = c
	}

	if got, want := revParse(t, dir, "main^{tree}").String(), "4b825dc642cb6eb9a060e54bf8d69288fbee4904"; got != want {
		t.Errorf("final tree = %s, want git's empty tree %s", got, want)
	}
	gotLog := strings.Split(strings.TrimSpace(fixtures.GitOutput(t, dir, "log", "--reverse", "--format=%s", "main")), "\n")
	if got, want := strings.Join(gotLog, "|"), strings.Join(messages, "|"); got != want {
		t.Errorf("git log subjects:\ngot  %s\nwant %s", got, want)
	}
	fsck(t, dir)
}

// gitTreeOf is the tree the C git CLI builds for files (path -> content):
// the mirror repository's work tree is made to hold exactly those files, then
// `git add -A` and `git write-tree`.
func gitTreeOf(t testing.TB, mirror string, files map[string]string) gitver.Hash {
	t.Helper()
	ents, err := os.ReadDir(mirror)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(mirror, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, content := range files {
		writeFile(t, mirror, p, content)
	}
	fixtures.Git(t, mirror, "add", "-A")
	h, err := gitver.ParseHash(fixtures.GitOutput(t, mirror, "write-tree"))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCommitReplacesDirectoryWithFile proves a commit may delete every file
// under a directory and write a file of the same name, as git allows: the
// CommitRequest doc says directories that end up empty disappear.
func TestCommitReplacesDirectoryWithFile(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	commitAndMove(t, r, "dir", map[string]string{"a/x.md": "x\n", "a/y/z.md": "z\n", "b.md": "b\n"})
	head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	changes := map[string]gitver.Hash{
		"a/x.md": gitver.ZeroHash, "a/y/z.md": gitver.ZeroHash, "a": writeBlob(t, r, "now a file\n"),
	}
	c, err := r.Commit(gitver.CommitRequest{Parent: head, Changes: changes, Author: agent, Message: "dir to file\n"})
	if err != nil {
		t.Fatalf("Commit replacing directory a/ by file a: %v", err)
	}
	want := map[string]string{
		"a":    "100644 blob " + gitver.BlobHash([]byte("now a file\n")).String(),
		"b.md": "100644 blob " + gitver.BlobHash([]byte("b\n")).String(),
	}
	if d := diffMaps(lsTree(t, dir, c.String()), want); d != "" {
		t.Errorf("git ls-tree -r:\n%s", d)
	}
}

// TestCommitRefusesFileDirectoryClash proves a request that would leave a
// file and a directory with the same name (which git cannot represent in a
// work tree) fails instead of writing a tree.
func TestCommitRefusesFileDirectoryClash(t *testing.T) {
	fixtures.RequireGit(t)
	r, _ := newRepo(t)
	base := commitAndMove(t, r, "base", map[string]string{"dir/x.md": "x\n", "file.md": "f\n"})
	blob := writeBlob(t, r, "clash\n")
	tests := []struct {
		name    string
		changes map[string]gitver.Hash
	}{
		{"file over a kept directory", map[string]gitver.Hash{"dir": blob}},
		{"file under an existing file", map[string]gitver.Hash{"file.md/inner.md": blob}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Commit(gitver.CommitRequest{Parent: base, Changes: tt.changes, Author: agent, Message: "clash\n"})
			if err == nil {
				t.Errorf("Commit(%v) succeeded, want an error", tt.changes)
			}
		})
	}
}

// TestCommitSignatureGitAccepts proves the author and committer lines of a
// plumbing commit are ones `git fsck --strict` accepts and git reads back
// unchanged, for the names an agent may use.
func TestCommitSignatureGitAccepts(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name      string
		sig       gitver.Signature
		wantIdent string // git log --format='%an <%ae> %at %ad'
	}{{
		name:      "plain name, UTC",
		sig:       gitver.Signature{Name: "agent", Email: "agent@blackboard.local", When: time.Unix(1, 0).UTC()},
		wantIdent: "agent <agent@blackboard.local> 1 Thu Jan 1 00:00:01 1970 +0000",
	}, {
		name: "unicode name, positive zone with minutes",
		sig: gitver.Signature{Name: "Zoë Ünal", Email: "zoe@example.com",
			When: time.Unix(1700000000, 0).In(time.FixedZone("", 5*3600+45*60))},
		wantIdent: "Zoë Ünal <zoe@example.com> 1700000000 Wed Nov 15 03:58:20 2023 +0545",
	}, {
		name:      "negative zone",
		sig:       agent,
		wantIdent: "Agent Smith <smith@blackboard.local> 1700000000 Tue Nov 14 18:43:20 2023 -0330",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRepo(t)
			blob := writeBlob(t, r, "x\n")
			c, err := r.Commit(gitver.CommitRequest{Changes: map[string]gitver.Hash{"x.md": blob}, Author: tt.sig, Message: "m\n"})
			if err != nil {
				t.Fatalf("Commit: %v", err)
			}
			if err := r.UpdateBranch(gitver.ZeroHash, c, tt.sig, "commit (initial): m"); err != nil {
				t.Fatalf("UpdateBranch: %v", err)
			}
			fsck(t, dir)
			for _, format := range []string{"%an <%ae> %at %ad", "%cn <%ce> %ct %cd"} {
				if got := strings.TrimSpace(fixtures.GitOutput(t, dir, "log", "-1", "--format="+format, "main")); got != tt.wantIdent {
					t.Errorf("git log --format=%q = %q, want %q", format, got, tt.wantIdent)
				}
			}
			info, err := r.ReadCommit(c)
			if err != nil {
				t.Fatal(err)
			}
			if info.Author.Name != tt.sig.Name || info.Author.Email != tt.sig.Email || !info.Author.When.Equal(tt.sig.When) {
				t.Errorf("ReadCommit author = %+v, want %+v", info.Author, tt.sig)
			}
			_, gotOff := info.Author.When.Zone()
			if _, wantOff := tt.sig.When.Zone(); gotOff != wantOff {
				t.Errorf("ReadCommit author zone offset = %d, want %d", gotOff, wantOff)
			}
		})
	}
}

// TestCommitSignatureDelimiters proves that a name or email holding one of
// the delimiters of git's identity line ('<', '>', newline) never yields a
// commit git rejects: git's own ident.c drops those characters. An agent
// name reaches Signature.Name unchecked (fsstore's agentSignature), and a
// commit that fails `git fsck` is refused by every server that checks pushes
// (receive.fsckObjects); a newline even lets the name inject header lines,
// and ReadCommit then reads back an empty author.
func TestCommitSignatureDelimiters(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name, email string
	}{
		{"agent <evil>", "agent@blackboard.local"},
		{"agent>", "agent@blackboard.local"},
		{"two\nlines", "agent@blackboard.local"},
		{"agent", "agent>@blackboard.local"},
		{"agent", "line\nbreak@blackboard.local"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q <%q>", tt.name, tt.email), func(t *testing.T) {
			r, dir := newRepo(t)
			sig := gitver.Signature{Name: tt.name, Email: tt.email, When: agent.When}
			blob := writeBlob(t, r, "x\n")
			c, err := r.Commit(gitver.CommitRequest{Changes: map[string]gitver.Hash{"x.md": blob}, Author: sig, Message: "m\n"})
			if err != nil {
				return // refusing the signature is an acceptable answer
			}
			if err := r.UpdateBranch(gitver.ZeroHash, c, sig, "commit (initial): m"); err != nil {
				t.Fatalf("UpdateBranch: %v", err)
			}
			fsck(t, dir)
			info, err := r.ReadCommit(c)
			if err != nil {
				t.Fatal(err)
			}
			if info.Author.Name == "" || info.Author.Email == "" {
				t.Errorf("ReadCommit author = %+v, want the name and email kept minus delimiters", info.Author)
			}
		})
	}
}

// FuzzTreeOrder proves that, for any set of names git accepts, the tree
// gitver writes is the one git writes from an index holding the same paths:
// each name is a file, or (bit i of dirs) a directory holding one file.
func FuzzTreeOrder(f *testing.F) {
	f.Add("a.md/a-b.md/a/a0/a_b/a.b", uint64(1<<2))
	f.Add("x/x.y/x-y/x0/x!", uint64(0b11111))
	f.Add("B/a/A/b/é/~", uint64(0b101010))
	f.Add("foo/foo.bar/foo-bar/foo bar", uint64(0b0101))
	f.Fuzz(func(t *testing.T, joined string, dirs uint64) {
		fixtures.RequireGit(t)
		seen := map[string]bool{}
		var names []string
		for _, n := range strings.Split(joined, "/") {
			if n == "" || n == "." || n == ".." || strings.ContainsRune(n, 0) || seen[n] || len(names) == 64 {
				continue
			}
			seen[n] = true
			names = append(names, n)
		}
		if len(names) == 0 {
			t.Skip("no usable name")
		}
		r, dir := newRepo(t)
		blob := writeBlob(t, r, "same content everywhere\n")
		changes := map[string]gitver.Hash{}
		var indexInfo strings.Builder
		for i, n := range names {
			p := n
			if dirs&(1<<i) != 0 {
				p = n + "/f.md"
			}
			changes[p] = blob
			fmt.Fprintf(&indexInfo, "100644 %s\t%s\x00", blob, p)
		}
		c, err := r.Commit(gitver.CommitRequest{Changes: changes, Author: agent, Message: "fuzz\n"})
		if err != nil {
			t.Fatalf("Commit(%q): %v", sortedKeys(changes), err)
		}
		info, err := r.ReadCommit(c)
		if err != nil {
			t.Fatal(err)
		}
		env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
		cmd := fixtures.GitCmd(dir, "update-index", "-z", "--index-info")
		cmd.Env = append(cmd.Env, env...)
		cmd.Stdin = strings.NewReader(indexInfo.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("git refuses these paths (%v): %s", err, out)
		}
		writeTree := fixtures.GitCmd(dir, "write-tree")
		writeTree.Env = append(writeTree.Env, env...)
		out, err := writeTree.Output()
		if err != nil {
			t.Fatalf("git write-tree: %v", err)
		}
		want, err := gitver.ParseHash(string(out))
		if err != nil {
			t.Fatal(err)
		}
		if info.Tree != want {
			t.Errorf("tree of %q = %s, want %s (git write-tree)", sortedKeys(changes), info.Tree, want)
		}
	})
}

// An object file that is there but does not hold its object (written
// unsynced before a power failure, come back empty) is written again
// rather than named by a commit.
func TestCutLooseObjectIsWrittenAgain(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	first := commitAndMove(t, r, "first", map[string]string{"a.md": "the same content"})
	blob := revParse(t, dir, "HEAD:a.md")
	name := blob.String()
	obj := filepath.Join(dir, ".git", "objects", name[:2], name[2:])
	if err := os.Chmod(obj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(obj, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	commitFiles(t, r, first, "second", map[string]string{"b.md": "the same content"})
	if got := fixtures.GitOutput(t, dir, "cat-file", "-p", name); got != "the same content" {
		t.Errorf("the blob reads %q after it was written again", got)
	}
}

// TestEditedTreesMatchGit proves, on random edits, that a commit built on
// a parent writes the tree git writes for the same paths: each round
// adds, changes and deletes files among names that are git's tree-order
// neighbours (a.md, a-b.md, a/, a.b/, a0/, ...), one and two directories
// deep, on the last round's commit, and git's index is given the same
// edits; the two trees must be one.
func TestEditedTreesMatchGit(t *testing.T) {
	fixtures.RequireGit(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	r, dir := newRepo(t)
	dirs := []string{"a", "a.b", "a-b", "a0", "b"}
	names := []string{"a.md", "a-b.md", "a0.md", "a_b.md", "b.md", "a.b.md", "z.md"}
	randomPath := func() string {
		p := names[rng.IntN(len(names))]
		for range rng.IntN(3) {
			p = dirs[rng.IntN(len(dirs))] + "/" + p
		}
		return p
	}
	blobs := []gitver.Hash{writeBlob(t, r, "one\n"), writeBlob(t, r, "two\n"), writeBlob(t, r, "three\n")}
	index := filepath.Join(t.TempDir(), "index")
	held := map[string]bool{}
	var parent gitver.Hash
	for round := range 40 {
		changes := map[string]gitver.Hash{}
		var indexInfo strings.Builder
		for range 1 + rng.IntN(6) {
			p := randomPath()
			if _, dup := changes[p]; dup {
				continue
			}
			if held[p] && rng.IntN(3) == 0 {
				changes[p] = gitver.ZeroHash
				fmt.Fprintf(&indexInfo, "0 %s\t%s\x00", gitver.ZeroHash, p)
				continue
			}
			b := blobs[rng.IntN(len(blobs))]
			changes[p] = b
			fmt.Fprintf(&indexInfo, "100644 %s\t%s\x00", b, p)
		}
		c, err := r.Commit(gitver.CommitRequest{Parent: parent, Changes: changes, Author: agent, Message: fmt.Sprintf("round %d\n", round)})
		if err != nil {
			t.Fatalf("round %d: Commit(%q): %v", round, sortedKeys(changes), err)
		}
		for p, h := range changes {
			held[p] = !h.IsZero()
		}
		cmd := fixtures.GitCmd(dir, "update-index", "-z", "--index-info")
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+index)
		cmd.Stdin = strings.NewReader(indexInfo.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git update-index: %v\n%s", err, out)
		}
		writeTree := fixtures.GitCmd(dir, "write-tree")
		writeTree.Env = append(writeTree.Env, "GIT_INDEX_FILE="+index)
		out, err := writeTree.Output()
		if err != nil {
			t.Fatalf("git write-tree: %v", err)
		}
		info, err := r.ReadCommit(c)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSpace(string(out)); info.Tree.String() != want {
			t.Fatalf("round %d, after %q: tree %s, git write-tree %s", round, sortedKeys(changes), info.Tree, want)
		}
		parent = c
	}
}
