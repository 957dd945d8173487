package pack

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver/packidx"
	"github.com/go-git/go-git/v5/plumbing"
)

type object struct {
	t       plumbing.ObjectType
	content []byte
}

func (o object) hash() plumbing.Hash {
	return plumbing.ComputeHash(o.t, o.content)
}

// objects is a few objects of each kind a board writes, with contents
// whose sizes take one to four bytes of entry header.
func objects() []object {
	big := bytes.Repeat([]byte("a line of a note that is long\n"), 40_000)
	blob := object{plumbing.BlobObject, []byte("hello\n")}
	bh := blob.hash()
	tree := object{plumbing.TreeObject, append([]byte("100644 a.md\x00"), bh[:]...)}
	th := tree.hash()
	commit := object{plumbing.CommitObject, fmt.Appendf(nil,
		"tree %s\nauthor a <a@example.com> 1 +0000\ncommitter a <a@example.com> 1 +0000\n\nm\n", th)}
	return []object{blob, tree, commit, {plumbing.BlobObject, nil}, {plumbing.BlobObject, big},
		{plumbing.BlobObject, []byte(strings.Repeat("x", 15))}, {plumbing.BlobObject, []byte(strings.Repeat("y", 16))}}
}

// write writes objs as a pack and its index into dir, under git's names.
func write(t *testing.T, dir string, objs []object) (packPath, idxPath string, idx []byte) {
	t.Helper()
	w := NewWriter(len(objs), nil)
	for _, o := range objs {
		if err := w.Add(o.hash(), o.t, o.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Add(objs[0].hash(), objs[0].t, objs[0].content); err != nil { // a second time: not added
		t.Fatal(err)
	}
	data, idx, name := w.Finish()
	packPath = filepath.Join(dir, "pack-"+name+".pack")
	idxPath = filepath.Join(dir, "pack-"+name+".idx")
	if err := os.WriteFile(packPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idxPath, idx, 0o644); err != nil {
		t.Fatal(err)
	}
	return packPath, idxPath, idx
}

func open(t *testing.T, packPath, idxPath string) *Reader {
	t.Helper()
	b, err := os.ReadFile(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := packidx.Parse(b, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(packPath, idx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestGitReadsPack proves git accepts what Writer writes: verify-pack checks
// the pack, its index and every object, and index-pack, indexing the pack
// itself, writes the very index Writer wrote.
func TestGitReadsPack(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	fixtures.Git(t, dir, "init", "--quiet")
	objs := objects()
	packPath, idxPath, idx := write(t, dir, objs)
	out := fixtures.Git(t, dir, "verify-pack", "-v", idxPath)
	for _, o := range objs {
		if !strings.Contains(out, o.hash().String()+" "+o.t.String()) {
			t.Errorf("verify-pack does not list %s %s:\n%s", o.hash(), o.t, out)
		}
	}
	gitIdx := filepath.Join(t.TempDir(), "git.idx")
	fixtures.Git(t, dir, "index-pack", "-o", gitIdx, packPath)
	want, err := os.ReadFile(gitIdx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(idx, want) {
		t.Errorf("the index differs from git index-pack's: %d bytes, git's %d", len(idx), len(want))
	}
}

// TestReadWhatWasWritten proves every object reads back, by its name, and
// the entries as stored copy into another pack that reads the same.
func TestReadWhatWasWritten(t *testing.T) {
	objs := objects()
	packPath, idxPath, _ := write(t, t.TempDir(), objs)
	r := open(t, packPath, idxPath)
	if r.Len() != len(objs) {
		t.Errorf("%d objects, want %d", r.Len(), len(objs))
	}
	for _, o := range objs {
		i, ok := r.Find(o.hash())
		if !ok {
			t.Fatalf("%s not found", o.hash())
		}
		typ, content, err := r.Read(i)
		if err != nil || typ != o.t || !bytes.Equal(content, o.content) {
			t.Errorf("%s read as %s, %d bytes, %v; want %s, %d bytes", o.hash(), typ, len(content), err, o.t, len(o.content))
		}
	}
	data, entries, err := r.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if got := Checksum(data); !bytes.Equal(got[:], data[len(data)-20:]) {
		t.Errorf("checksum %s is not the trailer", got)
	}
	w := NewWriter(0, nil)
	for _, e := range entries {
		w.CopyEntry(e.Hash, e.Entry)
	}
	dir := t.TempDir()
	copied, idx, _ := w.Finish()
	if err := os.WriteFile(filepath.Join(dir, "p.pack"), copied, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p.idx"), idx, 0o644); err != nil {
		t.Fatal(err)
	}
	c := open(t, filepath.Join(dir, "p.pack"), filepath.Join(dir, "p.idx"))
	for _, o := range objs {
		i, _ := c.Find(o.hash())
		if _, content, err := c.Read(i); err != nil || !bytes.Equal(content, o.content) {
			t.Errorf("%s in the copy: %v", o.hash(), err)
		}
	}
}

// TestDamageIsFound proves a pack that is not the one its index describes
// does not open, and an entry damaged in place fails its CRC or the pack's
// checksum.
func TestDamageIsFound(t *testing.T) {
	objs := objects()
	dir := t.TempDir()
	packPath, idxPath, _ := write(t, dir, objs)
	data, err := os.ReadFile(packPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(idxPath)
	idx, err := packidx.Parse(b, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	for at := 12; at < len(data); at += 97 {
		damaged := bytes.Clone(data)
		damaged[at] ^= 0x01
		p := filepath.Join(t.TempDir(), "d.pack")
		if err := os.WriteFile(p, damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(p, idx)
		if err != nil {
			continue // the trailer
		}
		all, _, err := r.Entries()
		r.Close()
		if err == nil && Checksum(all) == idx.PackSum {
			t.Fatalf("byte %d flipped: the pack reads as whole", at)
		}
	}
	if err := os.WriteFile(packPath, data[:len(data)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if r, err := Open(packPath, idx); err == nil {
		r.Close()
		t.Error("a pack cut short opens")
	}
}

// TestDeltaIsRefused proves a pack git wrote with deltas is read only for
// its whole objects: a delta is ErrDelta, and its entries are not copied.
func TestDeltaIsRefused(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	fixtures.Git(t, dir, "init", "--quiet")
	base := bytes.Repeat([]byte("the same long line of a note\n"), 200)
	var names []string
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		if err := os.WriteFile(p, append(bytes.Clone(base), byte('0'+i)), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, fixtures.Git(t, dir, "hash-object", "-w", p))
	}
	cmd := fixtures.GitCmd(dir, "pack-objects", "--window=10", filepath.Join(dir, "p"))
	cmd.Stdin = strings.NewReader(strings.Join(names, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git pack-objects: %v", err)
	}
	prefix := filepath.Join(dir, "p-"+strings.TrimSpace(string(out)))
	r := open(t, prefix+".pack", prefix+".idx")
	deltas := 0
	for _, n := range names {
		h := plumbing.NewHash(n)
		i, ok := r.Find(h)
		if !ok {
			t.Fatalf("%s not in git's pack", n)
		}
		_, content, err := r.Read(i)
		switch {
		case errors.Is(err, ErrDelta):
			deltas++
		case err != nil:
			t.Fatal(err)
		case plumbing.ComputeHash(plumbing.BlobObject, content) != h:
			t.Errorf("%s read as other content", n)
		}
	}
	if deltas == 0 {
		t.Skip("git stored no delta")
	}
	if _, _, err := r.Entries(); err == nil {
		t.Error("a pack with deltas gives its entries as whole objects")
	}
}

// TestEntryHeader proves an entry's header reads back as written, for
// sizes at every byte boundary.
func TestEntryHeader(t *testing.T) {
	for _, size := range []int{0, 1, 15, 16, 2047, 2048, 1 << 18, 1<<25 + 3, 1 << 40} {
		var b bytes.Buffer
		writeEntryHeader(&b, plumbing.TagObject, size)
		typ, got, used, err := parseEntryHeader(b.Bytes())
		if err != nil || typ != plumbing.TagObject || got != size || used != b.Len() {
			t.Errorf("size %d read as %s %d (%d of %d bytes), %v", size, typ, got, used, b.Len(), err)
		}
		for cut := range b.Len() {
			if _, _, _, err := parseEntryHeader(b.Bytes()[:cut]); err == nil {
				t.Errorf("size %d's header cut at %d read", size, cut)
			}
		}
	}
}
