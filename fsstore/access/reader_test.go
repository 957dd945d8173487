package access

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReaderParsesAgainOnlyOnceTheFileChanged: an unchanged file is the
// same parse; a token revoked by a rewrite in place of the same size, or by
// a replacement, is gone at the next load; no file is open mode.
func TestReaderParsesAgainOnlyOnceTheFileChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "access.yaml")
	f := &File{}
	token, err := f.Add("alice", []string{"ops"}, []string{"ops"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(f *File) {
		t.Helper()
		data, err := f.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		// In place: the same inode.
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(f)
	r := NewReader(path)
	first, ok, err := r.Load()
	if err != nil || !ok {
		t.Fatalf("load: %v, %v", ok, err)
	}
	if again, _, _ := r.Load(); again != first {
		t.Error("an unchanged file was parsed again")
	}
	if _, known := first.Authenticate(token); !known {
		t.Fatal("alice's token is unknown")
	}

	// Revoked in place, as an editor saves: another hash of the same size.
	other := *f
	other.Agents = append([]Agent(nil), f.Agents...)
	other.Agents[0].TokenSHA256 = HashToken("bb_" + "another token of alice's")
	write(&other)
	got, _, err := r.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, known := got.Authenticate(token); known {
		t.Error("a token revoked by a rewrite in place still authenticates")
	}

	// Replaced, as a commit places it: the token back, a new inode.
	data, _ := f.Marshal()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := r.Load(); got == nil {
		t.Fatal("no file after a replacement")
	} else if _, known := got.Authenticate(token); !known {
		t.Error("a token put back by a replacement is unknown")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.Load(); ok || err != nil {
		t.Errorf("no file: ok %v, err %v; want open mode", ok, err)
	}
}
