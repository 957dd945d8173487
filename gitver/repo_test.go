package gitver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// TestInitMakesAGitRepository proves the repository Init writes is one the
// C git CLI works in as if `git init` had made it, that Init leaves an
// existing repository alone, and that a durable Repo (fsync on) commits.
func TestInitMakesAGitRepository(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	if err := gitver.Init(dir, "main"); err != nil {
		t.Fatalf("Init: %v", err)
	}
	if got, want := strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-parse", "--absolute-git-dir")), filepath.Join(dir, ".git"); got != want {
		t.Errorf("git rev-parse --absolute-git-dir = %q, want %q", got, want)
	}
	if got := strings.TrimSpace(fixtures.GitOutput(t, dir, "symbolic-ref", "HEAD")); got != "refs/heads/main" {
		t.Errorf("git symbolic-ref HEAD = %q, want refs/heads/main", got)
	}
	fixtures.Git(t, dir, "status", "--porcelain")

	r, err := gitver.Open(dir, gitver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Durable() {
		t.Errorf("Durable() = false for the zero Options, want true")
	}
	c := commitAndMove(t, r, "durable", map[string]string{"a.md": "a\n"})
	fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "a person")
	if got := revParse(t, dir, "main^"); got != c {
		t.Errorf("git commit on an Init'd repository: parent = %s, want %s", got, c)
	}
	fsck(t, dir)

	other := t.TempDir()
	fixtures.Git(t, other, "init", "--quiet", "--initial-branch=trunk")
	if err := gitver.Init(other, "main"); err != nil {
		t.Fatalf("Init on an existing repository: %v", err)
	}
	if got := strings.TrimSpace(fixtures.GitOutput(t, other, "symbolic-ref", "HEAD")); got != "refs/heads/trunk" {
		t.Errorf("after Init on a git repository, HEAD = %q, want it unchanged (refs/heads/trunk)", got)
	}
}

// TestOpen proves Open finds the branch HEAD names, refuses a HEAD that
// names no branch (a write would have nothing to move) with ErrDetached, and
// a directory that is no repository with ErrNotRepository.
func TestOpen(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name       string
		setup      func(t *testing.T, dir string)
		wantBranch string
		wantErr    error
	}{
		{"gitver.Init", func(t *testing.T, dir string) {
			if err := gitver.Init(dir, "main"); err != nil {
				t.Fatal(err)
			}
		}, "refs/heads/main", nil},
		{"git init with another branch", func(t *testing.T, dir string) {
			fixtures.Git(t, dir, "init", "--quiet", "--initial-branch=trunk")
		}, "refs/heads/trunk", nil},
		{"detached HEAD", func(t *testing.T, dir string) {
			gitInit(t, dir)
			fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "one")
			fixtures.Git(t, dir, "switch", "--quiet", "--detach", "main")
		}, "", gitver.ErrDetached},
		{"HEAD names a ref outside refs/heads", func(t *testing.T, dir string) {
			gitInit(t, dir)
			if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/remotes/origin/main\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "", gitver.ErrDetached},
		{"not a repository", func(*testing.T, string) {}, "", gitver.ErrNotRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			r, err := gitver.Open(dir, gitver.Options{NoSync: true})
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("Open = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := r.Branch(); got != tt.wantBranch {
				t.Errorf("Branch() = %q, want %q", got, tt.wantBranch)
			}
			if got := r.Dir(); got != dir {
				t.Errorf("Dir() = %q, want %q", got, dir)
			}
		})
	}
}

// TestHead proves Head is the zero hash while the branch is unborn and
// otherwise what git rev-parse says, whoever made the commit.
func TestHead(t *testing.T) {
	fixtures.RequireGit(t)
	for _, byGit := range []bool{false, true} {
		dir := t.TempDir()
		if byGit {
			gitInit(t, dir)
		} else if err := gitver.Init(dir, "main"); err != nil {
			t.Fatal(err)
		}
		r := openRepo(t, dir)
		if got, err := r.Head(); err != nil || !got.IsZero() {
			t.Errorf("Head() on an unborn branch (git init: %v) = %s, %v; want the zero hash", byGit, got, err)
		}
		fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "one")
		if got, want := mustHead(t, r), revParse(t, dir, "HEAD"); got != want {
			t.Errorf("Head() after git commit = %s, want %s", got, want)
		}
	}
}

// TestHashes proves BlobHash and WriteBlob name content as git hash-object
// does, ReadBlob reads back what git wrote and git reads what WriteBlob
// wrote, ReadBlob refuses what is not a blob, and ParseHash reads git's
// object names.
func TestHashes(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	gitInit(t, dir)
	r := openRepo(t, dir)
	big := bytes.Repeat([]byte("0123456789abcdef\n"), 1<<16)
	for _, content := range [][]byte{{}, []byte("hello\n"), []byte("no newline"), {0, 1, 2, 0xff, '\n', 0}, big} {
		hashObject := fixtures.GitCmd(dir, "hash-object", "-w", "--stdin")
		hashObject.Stdin = bytes.NewReader(content)
		out, err := hashObject.Output()
		if err != nil {
			t.Fatalf("git hash-object: %v", err)
		}
		gitHash, err := gitver.ParseHash(string(out))
		if err != nil {
			t.Fatal(err)
		}
		if got := gitver.BlobHash(content); got != gitHash {
			t.Errorf("BlobHash(%d bytes) = %s, want git's %s", len(content), got, gitHash)
		}
		got, err := r.ReadBlob(gitHash)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("ReadBlob(%s) = %d bytes, %v; want the %d bytes git stored", gitHash.Short(), len(got), err, len(content))
		}
		if ours := writeBlob(t, r, string(content)); ours != gitHash {
			t.Errorf("WriteBlob(%d bytes) = %s, want %s", len(content), ours, gitHash)
		}
	}
	ours := writeBlob(t, r, "only gitver wrote this\n")
	if got := fixtures.GitOutput(t, dir, "cat-file", "blob", ours.String()); got != "only gitver wrote this\n" {
		t.Errorf("git cat-file blob of a blob WriteBlob wrote = %q", got)
	}

	fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "one")
	for name, h := range map[string]gitver.Hash{
		"a commit":       revParse(t, dir, "HEAD"),
		"a tree":         revParse(t, dir, "HEAD^{tree}"),
		"a missing blob": gitver.BlobHash([]byte("never stored")),
	} {
		if _, err := r.ReadBlob(h); err == nil {
			t.Errorf("ReadBlob(%s) succeeded, want an error", name)
		}
	}

	for _, tt := range []struct {
		in      string
		wantErr bool
	}{
		{"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", false},
		{"E69DE29BB2D1D6434B8B29AE775AD8C2E48C5391", false},
		{"  e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n", false},
		{"e69de29", true},
		{"g69de29bb2d1d6434b8b29ae775ad8c2e48c5391", true},
		{"", true},
	} {
		h, err := gitver.ParseHash(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseHash(%q) error = %v, want error: %v", tt.in, err, tt.wantErr)
		}
		if !tt.wantErr && (h.String() != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" || h.Short() != "e69de29") {
			t.Errorf("ParseHash(%q) = %s (short %s)", tt.in, h, h.Short())
		}
	}
}

// TestReadCommit proves ReadCommit reads what git wrote: tree, parents in
// order (a merge's first parent first), author with its time zone, and the
// message exactly.
func TestReadCommit(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	gitInit(t, dir)
	env := []string{"GIT_AUTHOR_DATE=1700000000 +0200", "GIT_AUTHOR_NAME=Grace Hopper", "GIT_AUTHOR_EMAIL=grace@example.com"}
	writeFile(t, dir, "a.md", "a\n")
	fixtures.Git(t, dir, "add", "a.md")
	commit := fixtures.GitCmd(dir, "commit", "--quiet", "-m", "subject line\n\nbody line\n\nTrailer: x")
	commit.Env = append(commit.Env, env...)
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	fixtures.Git(t, dir, "switch", "--quiet", "-c", "side")
	fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "side")
	fixtures.Git(t, dir, "switch", "--quiet", "main")
	fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "main")
	fixtures.Git(t, dir, "merge", "--quiet", "--no-ff", "-m", "merge side", "side")
	r := openRepo(t, dir)

	root, err := r.ReadCommit(revParse(t, dir, "main~1~1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := root.Tree, revParse(t, dir, "main~1~1^{tree}"); got != want {
		t.Errorf("Tree = %s, want %s", got, want)
	}
	if len(root.Parents) != 0 || !root.FirstParent().IsZero() {
		t.Errorf("root: Parents = %v, FirstParent = %s; want none", root.Parents, root.FirstParent())
	}
	if got, want := root.Message, "subject line\n\nbody line\n\nTrailer: x\n"; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
	if got, want := root.Subject(), "subject line"; got != want {
		t.Errorf("Subject() = %q, want %q", got, want)
	}
	_, offset := root.Author.When.Zone()
	if root.Author.Name != "Grace Hopper" || root.Author.Email != "grace@example.com" ||
		root.Author.When.Unix() != 1700000000 || offset != 2*3600 {
		t.Errorf("Author = %+v (offset %d), want Grace Hopper <grace@example.com> at 1700000000 +0200", root.Author, offset)
	}

	merge, err := r.ReadCommit(revParse(t, dir, "main"))
	if err != nil {
		t.Fatal(err)
	}
	wantParents := []gitver.Hash{revParse(t, dir, "main^1"), revParse(t, dir, "main^2")}
	if len(merge.Parents) != 2 || merge.Parents[0] != wantParents[0] || merge.Parents[1] != wantParents[1] {
		t.Errorf("merge Parents = %v, want %v", merge.Parents, wantParents)
	}
	if merge.FirstParent() != wantParents[0] {
		t.Errorf("FirstParent() = %s, want %s", merge.FirstParent(), wantParents[0])
	}
	if _, err := r.ReadCommit(revParse(t, dir, "main^{tree}")); err == nil {
		t.Errorf("ReadCommit(a tree) succeeded, want an error")
	}
}

// TestPathBlob proves PathBlob finds the blob git finds at a path
// (`git rev-parse <commit>:<path>`) and the zero hash wherever git finds no
// file: a missing path, a directory, a path through a file.
func TestPathBlob(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	gitInit(t, dir)
	for p, content := range map[string]string{"a.md": "a\n", "dir/sub/c.md": "c\n", "dir/b.md": "b\n", "dir.md": "dir.md\n"} {
		writeFile(t, dir, p, content)
	}
	fixtures.Git(t, dir, "add", "-A")
	fixtures.Git(t, dir, "commit", "--quiet", "-m", "files")
	r := openRepo(t, dir)
	head := revParse(t, dir, "HEAD")
	tests := []struct {
		commit gitver.Hash
		path   string
		want   gitver.Hash
	}{
		{head, "a.md", revParse(t, dir, "HEAD:a.md")},
		{head, "dir/sub/c.md", revParse(t, dir, "HEAD:dir/sub/c.md")},
		{head, "dir/b.md", revParse(t, dir, "HEAD:dir/b.md")},
		{head, "dir.md", revParse(t, dir, "HEAD:dir.md")},
		{head, "missing.md", gitver.ZeroHash},
		{head, "dir", gitver.ZeroHash},
		{head, "dir/sub", gitver.ZeroHash},
		{head, "a.md/x", gitver.ZeroHash},
		{head, "dir/missing/c.md", gitver.ZeroHash},
		{head, "", gitver.ZeroHash},
		{gitver.ZeroHash, "a.md", gitver.ZeroHash},
	}
	for _, tt := range tests {
		got, err := r.PathBlob(tt.commit, tt.path)
		if err != nil || got != tt.want {
			t.Errorf("PathBlob(%s, %q) = %s, %v; want %s", tt.commit.Short(), tt.path, got, err, tt.want)
		}
	}
}

// TestReadsAfterGitGC proves a Repo keeps working after a `git gc` by
// someone else moved its objects into a pack (removing the loose copies it
// had been reading) and packed the branch ref.
func TestReadsAfterGitGC(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	c1 := commitAndMove(t, r, "one", map[string]string{"a.md": "a\n", "d/b.md": "b\n"})
	if _, err := r.ReadCommit(c1); err != nil {
		t.Fatal(err)
	}
	blob, err := r.PathBlob(c1, "d/b.md")
	if err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "gc", "--quiet")
	if _, err := os.Stat(filepath.Join(dir, ".git", "objects", c1.String()[:2], c1.String()[2:])); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the commit is still loose after git gc (stat: %v); the test needs it packed", err)
	}
	if got := mustHead(t, r); got != c1 {
		t.Errorf("Head() after git gc = %s, want %s", got, c1)
	}
	if got, err := r.ReadBlob(blob); err != nil || string(got) != "b\n" {
		t.Errorf("ReadBlob after git gc = %q, %v", got, err)
	}
	c2 := commitAndMove(t, r, "two", map[string]string{"d/c.md": "c\n"})
	want := map[string]string{
		"a.md":   "100644 blob " + gitver.BlobHash([]byte("a\n")).String(),
		"d/b.md": "100644 blob " + blob.String(),
		"d/c.md": "100644 blob " + gitver.BlobHash([]byte("c\n")).String(),
	}
	if d := diffMaps(lsTree(t, dir, c2.String()), want); d != "" {
		t.Errorf("a commit on a packed parent:\n%s", d)
	}
	fsck(t, dir)
}

// TestUserIdentity proves UserIdentity reads user.name and user.email from
// the repository's config first and fills what is missing from the person's
// global config, as git does.
func TestUserIdentity(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name                string
		local, global       [2]string // name, email; "" unset
		wantName, wantEmail string
	}{
		{"repository config", [2]string{"Local", "local@example.com"}, [2]string{"Global", "global@example.com"}, "Local", "local@example.com"},
		{"global config", [2]string{}, [2]string{"Global", "global@example.com"}, "Global", "global@example.com"},
		{"mixed", [2]string{"Local", ""}, [2]string{"Global", "global@example.com"}, "Local", "global@example.com"},
		{"none", [2]string{}, [2]string{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			var global strings.Builder
			global.WriteString("[user]\n")
			if tt.global[0] != "" {
				global.WriteString("\tname = " + tt.global[0] + "\n")
			}
			if tt.global[1] != "" {
				global.WriteString("\temail = " + tt.global[1] + "\n")
			}
			if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(global.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			gitInit(t, dir)
			if tt.local[0] != "" {
				fixtures.Git(t, dir, "config", "user.name", tt.local[0])
			}
			if tt.local[1] != "" {
				fixtures.Git(t, dir, "config", "user.email", tt.local[1])
			}
			name, email := openRepo(t, dir).UserIdentity()
			if name != tt.wantName || email != tt.wantEmail {
				t.Errorf("UserIdentity() = %q, %q; want %q, %q", name, email, tt.wantName, tt.wantEmail)
			}
		})
	}
}

// TestReflog proves UpdateBranch records each move in the branch's and
// HEAD's reflogs in a form git reads: `git reflog` lists the reasons newest
// first, with the mover's identity and time zone.
func TestReflog(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	commitAndMove(t, r, "one", map[string]string{"a.md": "1\n"})
	who := gitver.Signature{Name: "Agent Two", Email: "two@blackboard.local", When: time.Unix(1700000100, 0).In(time.FixedZone("", 9*3600))}
	head := mustHead(t, r)
	c := commitFiles(t, r, head, "two\n", map[string]string{"a.md": "2\n"})
	if err := r.UpdateBranch(head, c, who, "commit: two\nwith a newline"); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"main", "HEAD"} {
		got := fixtures.GitOutput(t, dir, "reflog", "show", "--format=%gs|%gn|%ge|%gd", "--date=raw", ref)
		want := "commit: two with a newline|Agent Two|two@blackboard.local|" + ref + "@{1700000100 +0900}\n" +
			"commit: one|Agent Smith|smith@blackboard.local|" + ref + "@{1700000000 -0330}\n"
		if got != want {
			t.Errorf("git reflog show %s:\n%s\nwant:\n%s", ref, got, want)
		}
	}
	fsck(t, dir)
}

// A hash goes through a database and JSON as its hexadecimal form, the zero
// hash as "", and comes back the same.
func TestHashEncodings(t *testing.T) {
	h := gitver.BlobHash([]byte("x"))
	for _, want := range []gitver.Hash{h, gitver.ZeroHash} {
		v, err := want.Value()
		if err != nil {
			t.Fatal(err)
		}
		var got gitver.Hash
		if err := got.Scan(v); err != nil || got != want {
			t.Errorf("Scan(Value(%s)) = %s, %v", want, got, err)
		}
		b, err := json.Marshal(struct{ H gitver.Hash }{want})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ H gitver.Hash }
		if err := json.Unmarshal(b, &back); err != nil || back.H != want {
			t.Errorf("JSON %s came back as %s, %v", b, back.H, err)
		}
	}
	if v, _ := gitver.ZeroHash.Value(); v != "" {
		t.Errorf("the zero hash is stored as %q, want \"\"", v)
	}
	var got gitver.Hash
	if err := got.Scan("not a hash"); err == nil {
		t.Error("Scan accepted a string that is no object name")
	}
}
