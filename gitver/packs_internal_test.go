package gitver

import (
	"testing"
	"time"
)

// A pack that appears after the storage was opened is read from its index
// here, without opening go-git's storage again (which reads every index of
// the repository again, megabytes on a big board).
func TestNewPackReadWithoutReopeningStorage(t *testing.T) {
	dir := t.TempDir()
	if err := Init(dir, "main"); err != nil {
		t.Fatal(err)
	}
	writer, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	reader, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	who := Signature{Name: "a", Email: "a@example.com", When: time.Now()}
	write := func(parent Hash, content string) *PendingCommit {
		p, err := writer.BuildCommit(CommitRequest{Parent: parent, Author: who, Message: content,
			Changes: map[string]Hash{"t/a.md": BlobHash([]byte(content))}, Blobs: [][]byte{[]byte(content)}})
		if err != nil {
			t.Fatal(err)
		}
		writer.Stage(p)
		sha, err := writer.WriteStaged()
		if err != nil {
			t.Fatal(err)
		}
		if err := writer.PublishPacks([]string{sha}); err != nil {
			t.Fatal(err)
		}
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
	if len(reader.own) != 1 {
		t.Errorf("%d packs read here, want 1", len(reader.own))
	}
}
