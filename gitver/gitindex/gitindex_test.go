package gitindex

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's index checksum is SHA-1.
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// repo is a repository with n committed files made by the C git CLI, its
// index as git left it.
func repo(t *testing.T, n int) string {
	t.Helper()
	fixtures.RequireGit(t)
	dir := t.TempDir()
	fixtures.Git(t, dir, "init", "--quiet", "--initial-branch=main")
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%03d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "file %d\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fixtures.Git(t, dir, "add", ".")
	fixtures.Git(t, dir, "commit", "--quiet", "-m", "files")
	return dir
}

// change writes path in dir with content, hashes it into git's objects,
// and returns its blob and what the index records of it.
func change(t *testing.T, dir, path, content string) (plumbing.Hash, Stat) {
	t.Helper()
	p := filepath.Join(dir, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	blob := plumbing.NewHash(fixtures.Git(t, dir, "hash-object", "-w", path))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return blob, StatOf(fi)
}

// load parses dir's index, whole or split.
func load(t *testing.T, dir string) Index {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	x, link, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if link == nil {
		return x
	}
	s, err := SplitFrom(x, link, func(sum plumbing.Hash) (*Whole, error) {
		b, err := os.ReadFile(filepath.Join(dir, ".git", "sharedindex."+sum.String()))
		if err != nil {
			return nil, err
		}
		return ParseShared(b, sum)
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func store(t *testing.T, dir string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".git", "index"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit changes one file, adds one and removes one, in the work tree and
// in idx, and returns what `git status` must say then: nothing.
func edit(t *testing.T, dir string, idx Index) {
	t.Helper()
	blob, st := change(t, dir, "d1/f001.md", "changed\n")
	idx.Set("d1/f001.md", blob, st)
	blob, st = change(t, dir, "d9/new.md", "new\n")
	idx.Set("d9/new.md", blob, st)
	if err := os.Remove(filepath.Join(dir, "d2/f002.md")); err != nil {
		t.Fatal(err)
	}
	idx.Remove("d2/f002.md")
}

// assertGitAgrees fails unless git finds the index it reads consistent
// with the work tree: every change staged, nothing else.
func assertGitAgrees(t *testing.T, dir string, n int) {
	t.Helper()
	got := fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all")
	want := "M  d1/f001.md\nD  d2/f002.md\nA  d9/new.md\n"
	if got != want {
		t.Errorf("git status --porcelain = %q, want %q", got, want)
	}
	if got := strings.Count(fixtures.GitOutput(t, dir, "ls-files"), "\n"); got != n {
		t.Errorf("git ls-files lists %d paths, want %d", got, n)
	}
	if out, err := fixtures.GitCmd(dir, "fsck", "--no-dangling", "--no-progress").CombinedOutput(); err != nil {
		t.Errorf("git fsck: %v\n%s", err, out)
	}
}

// TestWholeForms proves an index git wrote in each of its versions reads,
// takes a change, an addition and a removal, and is written back as one
// git reads the same way.
func TestWholeForms(t *testing.T) {
	for _, version := range []string{"2", "3", "4"} {
		t.Run("version "+version, func(t *testing.T) {
			dir := repo(t, 30)
			fixtures.Git(t, dir, "update-index", "--index-version", version)
			idx := load(t, dir)
			x, ok := idx.(*Whole)
			if !ok {
				t.Fatalf("a %T, want a whole index", idx)
			}
			e, ok := x.Entry("d0/f000.md")
			if want := fixtures.Git(t, dir, "rev-parse", ":d0/f000.md"); !ok || e.Blob().String() != want {
				t.Fatalf("d0/f000.md: %v %s, want %s", ok, e.Blob(), want)
			}
			edit(t, dir, x)
			if x.Len() != 30 {
				t.Errorf("%d entries, want 30", x.Len())
			}
			store(t, dir, x.Bytes())
			assertGitAgrees(t, dir, 30)
			fi, err := os.Stat(filepath.Join(dir, "d1/f001.md"))
			if err != nil {
				t.Fatal(err)
			}
			e, _ = load(t, dir).Entry("d1/f001.md")
			if !e.Matches(StatOf(fi)) {
				t.Error("the entry written does not match the file's stat")
			}
		})
	}
}

// TestSplitForm proves a split index git wrote reads, takes a change, an
// addition and a removal, and is written back split, over the same shared
// index, as one git reads the same way; merged, it is the whole index git
// then writes itself.
func TestSplitForm(t *testing.T) {
	dir := repo(t, 30)
	fixtures.Git(t, dir, "update-index", "--split-index")
	s, ok := load(t, dir).(*Split)
	if !ok {
		t.Fatal("git's split index read as whole")
	}
	edit(t, dir, s)
	if s.Len() != 30 {
		t.Errorf("%d entries, want 30", s.Len())
	}
	store(t, dir, s.Bytes())
	assertGitAgrees(t, dir, 30)
	again, ok := load(t, dir).(*Split)
	if !ok || again.SharedSum() != s.SharedSum() {
		t.Fatal("written back not split over the same shared index")
	}
	merged := again.Merged().Bytes()
	fixtures.Git(t, dir, "update-index", "--no-split-index")
	data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		t.Fatal(err)
	}
	gitWhole, _, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(merged, gitWhole.Bytes()) {
		t.Error("the merged index is not the whole index git writes")
	}
}

// TestSharedIndexChecked proves a shared index whose checksum is not its
// name is refused.
func TestSharedIndexChecked(t *testing.T) {
	dir := repo(t, 5)
	fixtures.Git(t, dir, "update-index", "--split-index")
	shared, _ := filepath.Glob(filepath.Join(dir, ".git", "sharedindex.*"))
	if len(shared) != 1 {
		t.Fatalf("shared indexes %q", shared)
	}
	data, err := os.ReadFile(shared[0])
	if err != nil {
		t.Fatal(err)
	}
	sum := plumbing.NewHash(strings.TrimPrefix(filepath.Ext(shared[0]), "."))
	if _, err := ParseShared(data, sum); err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	if _, err := ParseShared(data, sum); !errors.Is(err, ErrFormat) {
		t.Errorf("a damaged shared index: %v, want ErrFormat", err)
	}
}

// TestConflictStagesDropped proves a path set during a merge loses its
// conflict stages, in both forms.
func TestConflictStagesDropped(t *testing.T) {
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("split %v", split), func(t *testing.T) {
			dir := repo(t, 6)
			fixtures.Git(t, dir, "switch", "--quiet", "-c", "side")
			change(t, dir, "d0/f003.md", "side\n")
			fixtures.Git(t, dir, "commit", "--quiet", "-am", "side")
			fixtures.Git(t, dir, "switch", "--quiet", "main")
			change(t, dir, "d0/f003.md", "main\n")
			fixtures.Git(t, dir, "commit", "--quiet", "-am", "main")
			if fixtures.GitCmd(dir, "merge", "--quiet", "side").Run() == nil {
				t.Fatal("no conflict")
			}
			if split {
				fixtures.Git(t, dir, "update-index", "--split-index")
			}
			idx := load(t, dir)
			blob, st := change(t, dir, "d0/f003.md", "resolved\n")
			idx.Set("d0/f003.md", blob, st)
			var data []byte
			switch x := idx.(type) {
			case *Whole:
				data = x.Bytes()
			case *Split:
				data = x.Bytes()
			}
			store(t, dir, data)
			if got := fixtures.GitOutput(t, dir, "ls-files", "--stage", "d0/f003.md"); got != "100644 "+blob.String()+" 0\td0/f003.md\n" {
				t.Errorf("git ls-files --stage = %q", got)
			}
		})
	}
}

// TestSparseIndexRefused proves an index with a required extension this
// package does not keep is refused.
func TestSparseIndexRefused(t *testing.T) {
	x := Empty()
	data := x.Bytes()
	body := append(bytes.Clone(data[:len(data)-20]), "sdir"...)
	body = append(body, 0, 0, 0, 0)
	body = append(body, make([]byte, 20)...)
	if _, _, err := Parse(body); err == nil || !strings.Contains(err.Error(), "sparse") {
		t.Errorf("an index with a sparse-directory extension: %v", err)
	}
}

// TestLookupsMatchGoGitsDecoder: on random sets of paths, some longer than
// the flags can say (4,095 bytes or more, read up to their NUL), set and
// removed in random order, the entries this package finds by path, and
// its file read back, are what go-git's decoder reads from the same bytes:
// the same paths in the same order, each with its blob.
func TestLookupsMatchGoGitsDecoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 7))
	for c := range 40 {
		x := Empty()
		want := map[string]plumbing.Hash{}
		for range 1 + rng.IntN(60) {
			var p string
			switch rng.IntN(6) {
			case 0:
				p = "long/" + strings.Repeat(string(rune('a'+rng.IntN(3))), flagNameMask-5+rng.IntN(40))
			case 1:
				p = fmt.Sprintf("t/%c", 'a'+rng.IntN(4)) // short, near each other
			default:
				p = fmt.Sprintf("t%d/k-%d.md", rng.IntN(3), rng.IntN(50))
			}
			if rng.IntN(4) == 0 {
				x.Remove(p)
				delete(want, p)
				continue
			}
			var blob plumbing.Hash
			binary.BigEndian.PutUint64(blob[:], rng.Uint64())
			x.Set(p, blob, Stat{Mode: 0o100644, Size: uint32(rng.IntN(1000))})
			want[p] = blob
		}
		data := x.Bytes()
		read, _, err := Parse(bytes.Clone(data))
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		decoded := &index.Index{}
		if err := index.NewDecoder(bytes.NewReader(data)).Decode(decoded); err != nil {
			t.Fatalf("case %d: go-git: %v", c, err)
		}
		paths := slices.Sorted(maps.Keys(want))
		if len(decoded.Entries) != len(paths) || read.Len() != len(paths) {
			t.Fatalf("case %d: go-git reads %d entries, this package %d, want %d", c, len(decoded.Entries), read.Len(), len(paths))
		}
		for i, e := range decoded.Entries {
			if e.Name != paths[i] || e.Hash != want[e.Name] {
				t.Errorf("case %d: go-git's entry %d is %.40q %s, want %.40q %s", c, i, e.Name, e.Hash, paths[i], want[paths[i]])
			}
			for _, idx := range []*Whole{x, read} {
				if got, ok := idx.Entry(e.Name); !ok || got.Blob() != e.Hash {
					t.Errorf("case %d: Entry(%.40q) = %v, %v; go-git reads %s", c, e.Name, got.Blob(), ok, e.Hash)
				}
			}
		}
		if _, ok := read.Entry("t/none"); ok {
			t.Errorf("case %d: a path never set is found", c)
		}
	}
}

// TestPathLengthMustMatchFlags: an entry whose flags give its path another
// length than its NUL does is refused, as git refuses it.
func TestPathLengthMustMatchFlags(t *testing.T) {
	x := Empty()
	x.Set("t/a.md", plumbing.ZeroHash, Stat{Mode: 0o100644})
	data := x.Bytes()
	body := bytes.Clone(data[:len(data)-20])
	binary.BigEndian.PutUint16(body[indexHeaderLen+60:], 3) // "t/a" of "t/a.md"
	sum := sha1.Sum(body)                                   //nolint:gosec // git's checksum
	if _, _, err := Parse(append(body, sum[:]...)); !errors.Is(err, ErrFormat) {
		t.Errorf("an entry whose flags say 3 bytes of a 6-byte path: %v, want ErrFormat", err)
	}
}
