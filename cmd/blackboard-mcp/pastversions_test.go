package main

import (
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Every version of a note with twenty, big ones (kept in a blob file)
// among them, reads back by its address through the real server as git
// holds it at the commit that made it: get_state, resources/read of
// bb://acme/t/a@N (the note version template) and `blackboard-mcp get`.
// A version past the note's is not_found and says which it is at.
func TestPastVersionsThroughMCP(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startServer(t, serverOpts{dir: dir, agent: "historian", client: goSDK})
	const versions = 20
	written := map[int]string{}
	for v := 1; v <= versions; v++ {
		body := fmt.Sprintf("version %d\n", v)
		if v%4 == 0 {
			body = strings.Repeat(fmt.Sprintf("version %d is over ten kilobytes. ", v), 400)
		}
		w := s.write(map[string]any{"uri": "t/a", "digest": fmt.Sprintf("v%d", v), "body": body, "expect_version": v - 1})
		if w.Version != v {
			t.Fatalf("write %d acknowledged at v%d", v, w.Version)
		}
		written[v] = body
	}
	commits := strings.Fields(fixtures.Git(t, dir, "log", "--first-parent", "--reverse", "--format=%H", "--", "t/a.md", "t/a.blob.md"))
	if len(commits) != versions {
		t.Fatalf("git counts %d versions, want %d", len(commits), versions)
	}
	rc := resourcesOverStdio(t, serverOpts{dir: dir, agent: "reader"})
	for v := 1; v <= versions; v++ {
		uri := fmt.Sprintf("bb://acme/t/a@%d", v)
		inGit := fixtures.NoteContentAt(t, dir, commits[v-1], "t/a")
		if inGit != written[v] {
			t.Fatalf("git holds %.40q at version %d, written %.40q", inGit, v, written[v])
		}
		e := s.get([]string{fmt.Sprintf("t/a@%d", v)}, "full", 20000)
		if len(e.Items) != 1 {
			t.Fatalf("get_state %s: %+v", uri, e)
		}
		it := e.Items[0]
		if it.URI != uri || it.Version != v || !strings.HasPrefix(commits[v-1], it.Commit) || len(it.Commit) < 7 || it.Body != inGit {
			t.Errorf("get_state %s: uri %s, v%d, commit %q, body %.40q; git's commit %s, content %.40q",
				uri, it.URI, it.Version, it.Commit, it.Body, commits[v-1], inGit)
		}
		res, err := rc.read(uri)
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		text := res.Contents[0].Text
		f, err := note.Parse([]byte(text))
		if err != nil || res.Contents[0].URI != uri || string(f.Body) != inGit ||
			f.Str("commit") != commits[v-1] || !strings.Contains(text, fmt.Sprintf("\nversion: %d\n", v)) {
			t.Errorf("resources/read %s: %v, uri %s:\n%.300s", uri, err, res.Contents[0].URI, text)
		}
	}
	out := runCLI(t, dir, "get", "t/a@4", "--full")
	if !strings.HasPrefix(out, "bb://acme/t/a@4 v4\ncommit: "+commits[3]+"\n") || !strings.Contains(out, written[4]) {
		t.Errorf("blackboard-mcp get t/a@4:\n%.400s", out)
	}
	e := s.get([]string{"t/a@21", "t/a@0", "t/a"}, "ref", 0)
	if it := e.Items[0]; it.Error != "not_found" || !strings.Contains(it.Message, "at version 20") {
		t.Errorf("a version past the note's: %+v", it)
	}
	if it := e.Items[1]; it.Error != "invalid" {
		t.Errorf("version 0: %+v", it)
	}
	if it := e.Items[2]; it.Version != versions || it.Commit != "" {
		t.Errorf("the note as it is: %+v", it)
	}
	if _, err := rc.read("bb://acme/t/a@21"); !notFound(err) {
		t.Errorf("resources/read of a version past the note's: %v", err)
	}
	if msg := s.fail("update_state", map[string]any{"uri": "t/a@3", "digest": "x", "body": "x"}, "invalid"); !strings.Contains(msg, "past version") {
		t.Errorf("a write to a past version: %s", msg)
	}
	templates, err := rc.cs.ListResourceTemplates(t.Context(), &sdk.ListResourceTemplatesParams{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tpl := range templates.ResourceTemplates {
		names = append(names, tpl.URITemplate)
	}
	if !strings.Contains(strings.Join(names, " "), "bb://acme/{topic}/{+key}@{version}") {
		t.Errorf("resource templates: %q", names)
	}
}
