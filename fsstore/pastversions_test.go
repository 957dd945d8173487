package fsstore_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
)

// Every version of a note, big ones kept in a blob file and a person's
// edit among them, reads back by its address (topic/key@N) as git holds it
// at the commit that made it, with that commit: one by one and in a
// batch. A version the note never had, or the one that deleted it, is
// not_found and names the version the note is at; @N is only read.
func TestEveryPastVersionReadsBackAsGitHoldsIt(t *testing.T) {
	fixtures.RequireGit(t)
	dir, w, v := openBoard(t)
	var acks fsstoretest.Acks
	written := map[int]string{}
	const versions = 20
	for i := 1; i <= versions; i++ {
		body := fmt.Sprintf("version %d\n", i)
		if i%3 == 0 {
			body = strings.Repeat(fmt.Sprintf("version %d keeps its content in a blob file. ", i), 400) // over 10 KB
		}
		if i == 10 {
			// A person's save, committed as their version.
			text := "---\ndigest: saved by hand\n---\n" + body
			if err := os.WriteFile(filepath.Join(dir, "t", "a.md"), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := w.CommitEdits(); err != nil {
				t.Fatal(err)
			}
			written[i] = body
			continue
		}
		res, err := v.Update(fsstore.UpdateRequest{URI: "t/a", Digest: fmt.Sprintf("v%d", i), Body: &body, ExpectVersion: ptr(i - 1)})
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		acks.Add(res.URI, res.Version, res.Digest)
		written[i] = body
	}
	// git's own count: the commits that changed the note's files, oldest
	// first, are its versions.
	commits := strings.Fields(fixtures.Git(t, dir, "log", "--first-parent", "--reverse", "--format=%H", "--", "t/a.md", "t/a.blob.md"))
	if len(commits) != versions {
		t.Fatalf("git counts %d commits of t/a, want %d", len(commits), versions)
	}
	uris := []string{"t/a"}
	for n := 1; n <= versions; n++ {
		uri := fmt.Sprintf("t/a@%d", n)
		uris = append(uris, uri)
		got, err := v.Get(uri, true)
		if err != nil {
			t.Fatalf("get %s: %v", uri, err)
		}
		if got.Version != n || got.Commit != commits[n-1] || got.URI != "bb://acme/"+uri {
			t.Errorf("%s: version %d, commit %s, uri %s; want %d, %s", uri, got.Version, got.Commit, got.URI, n, commits[n-1])
		}
		if inGit := fixtures.NoteContentAt(t, dir, commits[n-1], "t/a"); got.Content != inGit || got.Content != written[n] {
			t.Errorf("%s: content %.60q, git holds %.60q, written %.60q", uri, got.Content, inGit, written[n])
		}
	}
	results, _, err := v.Summaries(append(uris, "t/a@21", "t/none@1"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range results[1 : versions+1] {
		if r.Err != nil || r.Summary.Version != i+1 || r.Summary.Commit != commits[i] || r.Summary.URI != "bb://acme/"+uris[i+1] {
			t.Errorf("batch %s: %+v %v", uris[i+1], r.Summary, r.Err)
		}
	}
	if r := results[0]; r.Err != nil || r.Summary.Version != versions || r.Summary.Commit != "" {
		t.Errorf("batch t/a as it is: %+v %v", r.Summary, r.Err)
	}
	if err := results[versions+1].Err; !errors.Is(err, fsstore.ErrNotFound) || !strings.Contains(err.Error(), "at version 20") {
		t.Errorf("a version past the note's: %v", err)
	}
	if err := results[versions+2].Err; !errors.Is(err, fsstore.ErrNotFound) {
		t.Errorf("a version of no note: %v", err)
	}

	for _, bad := range []string{"t/a@0", "t/a@", "t/a@x", "t/a@-1", "t/a@+2", "t/a@01", "t/a@3@4", "t/a@9999999999"} {
		if _, err := v.Get(bad, false); !errors.Is(err, fsstore.ErrInvalid) {
			t.Errorf("get %q: %v, want invalid", bad, err)
		}
	}
	if _, err := v.Update(fsstore.UpdateRequest{URI: "t/a@3", Digest: "x", Body: ptr("x")}); !errors.Is(err, fsstore.ErrInvalid) || !strings.Contains(err.Error(), "past version") {
		t.Errorf("a write to a past version: %v", err)
	}

	// Deleted by hand: its versions stay readable, and the deletion is one
	// more, which holds no note.
	if err := os.Remove(filepath.Join(dir, "t", "a.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "t", "a.blob.md")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	if got, err := v.Get("t/a@3", true); err != nil || got.Content != written[3] {
		t.Errorf("a version of a deleted note: %v", err)
	}
	if _, err := v.Get("t/a@21", false); !errors.Is(err, fsstore.ErrNotFound) || !strings.Contains(err.Error(), "deleted") {
		t.Errorf("the version that deleted the note: %v", err)
	}
	fsstoretest.CheckVersionsAgree(t, dir, acks.List())
}
