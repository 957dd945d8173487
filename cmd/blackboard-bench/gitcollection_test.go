package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// A project's history as a test collection: every commit that is no merge
// a document, its trailers left out; every pull request merged a question
// judged by the commits it brought, except one whose title is a commit's
// subject, one of routine work, and one of a few words.
func TestAHistoryIsACollection(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "Acme.Server.git")
	git := func(args ...string) string {
		return fixtures.Git(t, filepath.Dir(dir), append([]string{"-C", dir}, args...)...)
	}
	fixtures.Git(t, filepath.Dir(dir), "init", "--quiet", "--initial-branch=main", dir)
	commit := func(subject, body string) string {
		git("commit", "--quiet", "--allow-empty", "-m", subject, "-m", body)
		return git("rev-parse", "HEAD")
	}
	pull := func(n int, title string, commits ...[2]string) {
		branch := fmt.Sprintf("pr%d", n)
		git("checkout", "--quiet", "-b", branch, "main")
		for _, c := range commits {
			commit(c[0], c[1])
		}
		git("checkout", "--quiet", "main")
		git("merge", "--quiet", "--no-ff", branch, "-m", fmt.Sprintf("Merge pull request #%d from ada/%s", n, branch), "-m", title)
	}
	commit("start the server", "the first commit\n\nSigned-off-by: Ada Person <ada@example.com>")
	pull(1, "Cache the shard index in memory", [2]string{"index: keep shards", "so a read skips the disk"},
		[2]string{"index: evict the oldest shard", "bounded at 64 MB\nCo-authored-by: Bo <bo@example.com>"})
	pull(2, "Fix the flaky listener test", [2]string{"Fix the flaky listener test", "wait for the port"})
	pull(3, "Bump the deps to their newest", [2]string{"go.mod: newer modules", ""})
	pull(4, "Tidy up", [2]string{"tidy", ""})
	pull(5, "Retry a push the remote refused", [2]string{"remote: retry refused pushes", "up to three times"})

	c, err := gitCollection{since: "1 year ago", questions: 300}.read(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.name != "acme-server" {
		t.Errorf("named %q, want acme-server", c.name)
	}
	bySubject := map[string]smartRecord{}
	for _, d := range c.docs {
		bySubject[d.fields["T"]] = d
	}
	if len(c.docs) != 7 {
		t.Errorf("%d documents, want the 7 commits that are no merges: %v", len(c.docs), slices.Collect(maps.Keys(bySubject)))
	}
	if got := bySubject["index: evict the oldest shard\n"].fields["W"]; got != "bounded at 64 MB\n" {
		t.Errorf("a body with a trailer reads %q", got)
	}
	if got := bySubject["start the server\n"].fields["W"]; got != "the first commit\n" {
		t.Errorf("the first commit's body reads %q", got)
	}
	want := map[string][]string{
		"Cache the shard index in memory\n": {"index: keep shards\n", "index: evict the oldest shard\n"},
		"Retry a push the remote refused\n": {"remote: retry refused pushes\n"},
	}
	if len(c.questions) != len(want) {
		t.Fatalf("%d questions, want %d: %v", len(c.questions), len(want), c.questions)
	}
	for i, q := range c.questions {
		subjects, ok := want[q.fields["W"]]
		if !ok {
			t.Errorf("asked %q", q.fields["W"])
			continue
		}
		var judged []string
		for _, s := range subjects {
			judged = append(judged, bySubject[s].id)
		}
		if got := slices.Sorted(maps.Keys(c.grades[i+1])); !slices.Equal(got, slices.Sorted(slices.Values(judged))) {
			t.Errorf("%q judges documents %v, want %v", q.fields["W"], got, judged)
		}
	}
}
