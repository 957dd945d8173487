package gitver

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// TestMergedDiffAgreesWithByName: the one-pass comparison of two trees in
// git's order lists the same changes as the comparison by name, on random
// trees whose names collide in git's order ("a" a file, "a" a directory,
// "a.b", "a-b") and whose directories are real subtrees.
func TestMergedDiffAgreesWithByName(t *testing.T) {
	writer, _ := writerAndReader(t)
	var subtrees []Hash
	for _, content := range []string{"one", "two"} {
		c, err := writer.Commit(CommitRequest{Author: packAuthor, Message: content,
			Changes: map[string]Hash{"d/x.md": BlobHash([]byte(content)), "d/y.md": BlobHash([]byte("y"))},
			Blobs:   [][]byte{[]byte(content), []byte("y")}})
		if err != nil {
			t.Fatal(err)
		}
		info, err := writer.ReadCommit(c)
		if err != nil {
			t.Fatal(err)
		}
		d, err := writer.PathBlob(c, "d")
		if err != nil {
			t.Fatalf("tree of d in %s: %v (commit tree %s)", c, err, info.Tree)
		}
		subtrees = append(subtrees, d)
	}
	names := []string{"a", "a.b", "a-b", "a0", "ab", "b", "b.md", "b/"}
	blobs := []Hash{BlobHash([]byte("1")), BlobHash([]byte("2"))}
	rng := rand.New(rand.NewPCG(3, 4))
	randomTree := func() []object.TreeEntry {
		var out []object.TreeEntry
		seen := map[string]bool{}
		for range rng.IntN(len(names) + 1) {
			name := strings.TrimSuffix(names[rng.IntN(len(names))], "/")
			if seen[name] {
				continue
			}
			seen[name] = true
			e := object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: plumbing.Hash(blobs[rng.IntN(2)])}
			switch rng.IntN(4) {
			case 0:
				e.Mode, e.Hash = filemode.Dir, plumbing.Hash(subtrees[rng.IntN(2)])
			case 1:
				e.Mode = filemode.Executable
			}
			out = append(out, e)
		}
		// Git's order, spelled independently of entryCompare.
		key := func(e object.TreeEntry) string {
			if e.Mode == filemode.Dir {
				return e.Name + "/"
			}
			return e.Name
		}
		sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
		return out
	}
	lines := func(changes []PathChange) []string {
		var out []string
		for _, c := range changes {
			out = append(out, c.Path+" "+c.Old.String()+" "+c.New.String())
		}
		slices.Sort(out)
		return out
	}
	for range 3000 {
		a, b := randomTree(), randomTree()
		if !inGitOrder(a) || !inGitOrder(b) {
			t.Fatalf("sorted entries are not in git's order: %v %v", a, b)
		}
		var merged, byName []PathChange
		if err := writer.diffEntries("p/", a, b, &merged); err != nil {
			t.Fatal(err)
		}
		if err := writer.diffEntriesByName("p/", a, b, &byName); err != nil {
			t.Fatal(err)
		}
		if got, want := lines(merged), lines(byName); !slices.Equal(got, want) {
			t.Fatalf("trees\n%v\n%v\nmerged: %q\nby name: %q", a, b, got, want)
		}
	}
	// Out of order, the by-name comparison is taken.
	a := []object.TreeEntry{{Name: "b", Mode: filemode.Regular, Hash: plumbing.Hash(blobs[0])}, {Name: "a", Mode: filemode.Regular, Hash: plumbing.Hash(blobs[0])}}
	if inGitOrder(a) {
		t.Fatal("b before a taken as git's order")
	}
	var changes []PathChange
	if err := writer.diffEntries("", a, nil, &changes); err != nil || len(changes) != 2 {
		t.Fatalf("an unordered tree against nothing: %v, %v", changes, err)
	}
}
