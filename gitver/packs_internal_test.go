package gitver

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// writerAndReader opens one repository twice: a writer, and a reader of
// what it writes.
func writerAndReader(t *testing.T) (writer, reader *Repo) {
	t.Helper()
	dir := t.TempDir()
	if err := Init(dir, "main"); err != nil {
		t.Fatal(err)
	}
	writer, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writer.Close() })
	reader, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Close() })
	return writer, reader
}

var packAuthor = Signature{Name: "a", Email: "a@example.com", When: time.Now()}

// writePack commits content to t/a.md on parent, its objects written as
// one published pack, kept from git until released; the branch does not
// move. It returns the commit and the pack's checksum.
func writePack(t *testing.T, r *Repo, parent Hash, content string) (*PendingCommit, string) {
	t.Helper()
	p, sha := writePendingPack(t, r, parent, content)
	if _, err := r.PublishPacks([]string{sha}); err != nil {
		t.Fatal(err)
	}
	return p, sha
}

// writePendingPack is writePack with the pack left pending: it returns
// the pack's checksum.
func writePendingPack(t *testing.T, r *Repo, parent Hash, content string) (*PendingCommit, string) {
	t.Helper()
	p, err := r.BuildCommit(CommitRequest{Parent: parent, Author: packAuthor, Message: content,
		Changes: map[string]Hash{"t/a.md": BlobHash([]byte(content))}, Blobs: [][]byte{[]byte(content)}})
	if err != nil {
		t.Fatal(err)
	}
	r.Stage(p)
	sha, err := r.WriteStaged()
	if err != nil {
		t.Fatal(err)
	}
	return p, sha
}

// A pack that appears after the storage was opened is read in place,
// without opening go-git's storage again (which reads every index of
// the repository again, megabytes on a big board).
func TestNewPackReadWithoutReopeningStorage(t *testing.T) {
	writer, reader := writerAndReader(t)
	write := func(parent Hash, content string) *PendingCommit {
		p, _ := writePack(t, writer, parent, content)
		return p
	}
	// The reader's storage has read the packs there are.
	first := write(ZeroHash, "first")
	if _, err := reader.ReadCommit(first.Hash); err != nil {
		t.Fatal(err)
	}
	storage := reader.storage
	p := write(first.Hash, "a")
	if _, err := reader.ReadCommit(p.Hash); err != nil {
		t.Fatal(err)
	}
	if b, err := reader.ReadBlob(BlobHash([]byte("a"))); err != nil || string(b) != "a" {
		t.Fatalf("blob %q, %v", b, err)
	}
	if reader.storage != storage {
		t.Error("the storage was opened again to read the new pack")
	}
	if len(reader.mapped) != 2 {
		t.Errorf("%d packs read in place, want 2", len(reader.mapped))
	}
}

// A pack looked at between the renames that put it in place (its index
// there, not its pack yet) is looked at again later, not left to go-git,
// which would not find it until its storage is opened again.
func TestPackCaughtBetweenItsRenamesIsReadLater(t *testing.T) {
	r, _ := writerAndReader(t)
	p, sha := writePendingPack(t, r, ZeroHash, "a")
	pack, _ := pendingPack(filepath.Join(r.GitDir(), "objects", "pack"), sha)
	if err := os.Rename(pack, pack+".away"); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteKnownPacks()
	if _, _, ok := r.readOwnPacks(p.Hash); ok {
		t.Fatal("a pack without its pack file reads")
	}
	if err := os.Rename(pack+".away", pack); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := r.readOwnPacks(p.Hash); !ok {
		t.Error("the pack, whole now, does not read: it was left to go-git")
	}
}

// A reader of a board whose writers keep grouping and merging packs lets
// go of the packs merged away: the list of packs it reads itself stays
// short, and its storage is never opened again for want of room in it
// (which reads every index of the repository again).
func TestMergedPacksAreLetGo(t *testing.T) {
	writer, reader := writerAndReader(t)
	var commits []Hash
	parent := ZeroHash
	for i := range 6 * mergeSmallPacks {
		p, sha := writePack(t, writer, parent, fmt.Sprintf("group %d", i))
		if err := writer.UpdateBranch(parent, p.Hash, packAuthor, "group"); err != nil {
			t.Fatal(err)
		}
		writer.ReleasePacks([]string{sha})
		parent = p.Hash
		commits = append(commits, p.Hash)
		if i == 0 {
			if _, err := reader.ReadCommit(p.Hash); err != nil {
				t.Fatal(err)
			}
		}
		storage, held := reader.storage, len(reader.own)
		if _, err := reader.ReadCommit(p.Hash); err != nil {
			t.Fatal(err)
		}
		if i > 0 && reader.storage != storage {
			t.Fatalf("group %d: the reader opened its storage again, with %d packs read itself", i, held)
		}
		if err := writer.MergeSmallPacks(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(reader.own); n > 2*mergeSmallPacks {
		t.Errorf("the reader holds %d packs open, want at most %d", n, 2*mergeSmallPacks)
	}
	for i, c := range commits {
		if _, err := reader.ReadBlob(BlobHash(fmt.Appendf(nil, "group %d", i))); err != nil {
			t.Fatalf("group %d's blob: %v", i, err)
		}
		if _, err := reader.ReadCommit(c); err != nil {
			t.Fatalf("group %d's commit: %v", i, err)
		}
	}
}

// Merges are geometric: the smallest packs, each at most twice the size of
// those before it together. A pack merged before is merged again only once
// the packs after it add up to half its size, so its objects are not
// copied again at every merge.
func TestGeometricPrefix(t *testing.T) {
	for _, c := range []struct {
		sizes map[string]int64
		want  []string
	}{
		{map[string]int64{"a": 10, "b": 10, "c": 10}, []string{"a", "b", "c"}},
		{map[string]int64{"big": 100, "a": 10, "b": 12, "c": 11}, []string{"a", "c", "b"}},
		{map[string]int64{"big": 60, "a": 10, "b": 10, "c": 10}, []string{"a", "b", "c", "big"}},
		{map[string]int64{"big": 1000, "mid": 100, "a": 10, "b": 20, "c": 30}, []string{"a", "b", "c", "mid"}},
		// A tiny pack before equal ones: all of them, not the tiny one alone.
		{map[string]int64{"tiny": 1, "a": 100, "b": 100, "c": 100}, []string{"tiny", "a", "b", "c"}},
		{map[string]int64{"big": 1000, "tiny": 1, "a": 100, "b": 100}, []string{"tiny", "a", "b"}},
	} {
		names := slices.Sorted(maps.Keys(c.sizes))
		if got := geometricPrefix(names, c.sizes); !slices.Equal(got, c.want) {
			t.Errorf("geometricPrefix(%v) = %v, want %v", c.sizes, got, c.want)
		}
	}
}

// StillPending, for the tests, is those of shas whose packs are pending
// yet: not published, or half (a publisher was killed between its renames).
func (r *Repo) StillPending(shas []string) []string {
	dir := filepath.Join(r.gitDir, "objects", "pack")
	var out []string
	for _, sha := range shas {
		if pack, idx := pendingPack(dir, sha); fileExists(idx) || fileExists(pack) {
			out = append(out, sha)
		}
	}
	return out
}
