package fsstore_test

import (
	"path/filepath"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
)

func ptr[T any](v T) *T { return &v }

// A write that leaves a note as it was makes no commit, and answers the
// version git holds: no reader counts a version that git does not.
func TestUnchangedWriteKeepsItsVersion(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	v := w.As(fsstore.OpenCaller("tester"))
	var acks fsstoretest.Acks
	write := func(req fsstore.UpdateRequest) *fsstore.UpdateResult {
		t.Helper()
		res, err := v.Update(req)
		if err != nil {
			t.Fatalf("update %s: %v", req.URI, err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
		return res
	}
	cursor := func() int {
		t.Helper()
		c, err := w.Cursor()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	body := "the same body\n"
	first := write(fsstore.UpdateRequest{URI: "t/same", Digest: "same", Body: &body})
	before := cursor()
	for range 3 {
		res := write(fsstore.UpdateRequest{URI: "t/same", Digest: "same", Body: &body})
		if res.Version != first.Version || !res.Unchanged {
			t.Errorf("identical rewrite: got v%d unchanged=%t, want v%d unchanged", res.Version, res.Unchanged, first.Version)
		}
	}
	cols := []string{"a", "b"}
	rows := [][]string{{"1", "2"}}
	write(fsstore.UpdateRequest{URI: "t/table", Digest: "table", Columns: cols, Rows: rows})
	write(fsstore.UpdateRequest{URI: "t/table", Digest: "table", Columns: cols, Rows: rows, ExpectVersion: ptr(1)})
	empty := ""
	write(fsstore.UpdateRequest{URI: "t/same", Digest: "same", AppendText: &empty})
	for range 2 {
		res, err := v.Link("bb://acme/t/same", "cites", []string{"t/table"})
		if err != nil {
			t.Fatal(err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
	}
	if got, want := cursor(), before+2; got != want {
		t.Errorf("cursor after identical writes and a table: got %d, want %d (a table and one link)", got, want)
	}
	fsstoretest.CheckVersionsAgree(t, dir, acks.List())
}
