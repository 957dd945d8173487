package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
)

// post sends a form to the page as a browser on the page's own origin does.
func post(t *testing.T, h http.Handler, path string, form url.Values, header ...string) (int, string, string) {
	t.Helper()
	r := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://example.com") // httptest's Host
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code, rec.Body.String(), rec.Header().Get("Location")
}

// lastCommit is the branch's last commit: author, subject and trailers.
func lastCommit(t *testing.T, dir string) string {
	t.Helper()
	return fixtures.Git(t, dir, "log", "-1", "--format=%an%n%s%n%(trailers)")
}

// A person writes from the page through the one write path: a note's
// digest and body, a line appended, a link, a claim an agent holds
// released, handed on and finished, a new note. Each is a commit authored
// by the person and marked as a person's, at the version git counts.
func TestPersonWritesFromThePage(t *testing.T) {
	w := board(t)
	dir := w.Dir()
	agent := w.As(fsstore.OpenCaller("scout"))
	var acks fsstoretest.Acks
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	person := func(want string) {
		t.Helper()
		c := lastCommit(t, dir)
		if !strings.HasPrefix(c, "writer\n") || !strings.Contains(c, "Blackboard-By: person") || !strings.Contains(c, want) {
			t.Errorf("the last commit is not the person's %q:\n%s", want, c)
		}
	}
	version := func(uri string) int {
		t.Helper()
		n, err := agent.Get(uri, false)
		if err != nil {
			t.Fatal(err)
		}
		return n.Version
	}

	code, _, to := post(t, h, "/n/research/cache", url.Values{"action": {"edit"}, "expect": {"2"},
		"digest": {"Cache hit rate fell, as a person saw it"}, "body": {"Checked by hand.\r\nThe LRU is fine.\r\n"}})
	if code != http.StatusSeeOther || to != "/n/research/cache" {
		t.Fatalf("edit: %d, to %q", code, to)
	}
	person("update research/cache v3: Cache hit rate fell, as a person saw it")
	n, err := agent.Get("research/cache", true)
	if err != nil || n.Version != 3 || n.Content != "Checked by hand.\nThe LRU is fine.\n" {
		t.Fatalf("after the edit: %+v %v", n, err)
	}
	acks.Add(n.URI, 3, n.Digest)

	if code, page, _ := post(t, h, "/n/research/cache", url.Values{"action": {"append"}, "expect": {"3"}, "text": {"One more line."}}); code != http.StatusSeeOther {
		t.Fatalf("append: %d\n%s", code, page)
	}
	person("append research/cache v4")
	if code, _, _ := post(t, h, "/n/research/cache", url.Values{"action": {"link"}, "expect": {"4"}, "rel": {"supersedes"}, "dst": {"research/db/replicas"}}); code != http.StatusSeeOther {
		t.Fatalf("link: %d", code)
	}
	person("link research/cache v5: supersedes bb://acme/research/db/replicas")

	// An agent's claim, released by the person, then handed on, then
	// finished: a person's claim goes over whoever holds it.
	if _, err := agent.Update(fsstore.UpdateRequest{URI: "research/cache", Claim: fsstore.ClaimTake, ExpectVersion: ptr(5)}); err != nil {
		t.Fatal(err)
	}
	if code, page, _ := post(t, h, "/n/research/cache", url.Values{"action": {"claim"}, "expect": {"6"}, "claim": {"release"}}); code != http.StatusSeeOther {
		t.Fatalf("release: %d\n%s", code, page)
	}
	person("release research/cache v7")
	if code, _, _ := post(t, h, "/n/research/cache", url.Values{"action": {"claim"}, "expect": {"7"}, "claim": {"take"}, "claim_for": {"builder"}, "hours": {"2"}}); code != http.StatusSeeOther {
		t.Fatalf("hand on: %d", code)
	}
	if n, err := agent.Get("research/cache", false); err != nil || n.ClaimedBy != "builder" {
		t.Fatalf("handed on: %+v %v", n, err)
	}
	if code, _, _ := post(t, h, "/n/research/cache", url.Values{"action": {"claim"}, "expect": {"8"}, "claim": {"done"}}); code != http.StatusSeeOther {
		t.Fatalf("done: %d", code)
	}
	if n, err := agent.Get("research/cache", false); err != nil || n.DoneBy != "writer" || n.ClaimedBy != "" {
		t.Fatalf("marked done: %+v %v", n, err)
	}
	// An agent may not hand a claim on: that is the person's.
	if _, err := agent.Update(fsstore.UpdateRequest{URI: "research/db/replicas", Claim: fsstore.ClaimTake, ClaimFor: "other"}); err == nil {
		t.Error("an agent handed a claim to another agent")
	}

	code, _, to = post(t, h, "/new", url.Values{"uri": {"research/new-finding"}, "digest": {"A person's finding"}, "body": {"found by hand"}})
	if code != http.StatusSeeOther || to != "/n/research/new-finding" {
		t.Fatalf("new note: %d, to %q", code, to)
	}
	person("update research/new-finding v1: A person's finding")
	code, page, _ := post(t, h, "/new", url.Values{"uri": {"research/new-finding"}, "digest": {"Again"}, "body": {"my second text"}})
	if code != http.StatusConflict || !strings.Contains(page, "my second text") || !strings.Contains(page, "already exists") {
		t.Errorf("a new note over one that exists: %d\n%s", code, page)
	}
	if v := version("research/new-finding"); v != 1 {
		t.Errorf("the existing note moved to v%d", v)
	}
	acks.Add("bb://acme/research/new-finding", 1, "A person's finding")
	fsstoretest.CheckVersionsAgree(t, dir, acks.List())
}

// Two tabs edit one note: the second save finds the note moved on, and the
// page shows what changed since the version it opened, with its text kept
// and the form set to write over the note as it is now; saving that goes
// through.
func TestSecondTabSeesWhatChangedAndKeepsItsText(t *testing.T) {
	w := board(t)
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	first := url.Values{"action": {"edit"}, "expect": {"1"}, "digest": {"First tab"}, "body": {"the first tab's text\n"}}
	if code, _, _ := post(t, h, "/n/research/db/replicas", first); code != http.StatusSeeOther {
		t.Fatalf("the first tab: %d", code)
	}
	second := url.Values{"action": {"edit"}, "expect": {"1"}, "digest": {"Second tab"}, "body": {"the second tab's <own> text\n"}}
	code, page, _ := post(t, h, "/n/research/db/replicas", second)
	if code != http.StatusConflict {
		t.Fatalf("the second tab: %d\n%s", code, page)
	}
	for _, want := range []string{"Not saved: you expected version 1", "it is at version 2 now",
		`<span class="ddel">- by seconds</span>`, `<span class="dadd">&#43; the first tab&#39;s text</span>`,
		"the second tab&#39;s &lt;own&gt; text", `value="Second tab"`, `name="expect" value="2"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the refused save's page lacks %q:\n%s", want, page)
		}
	}
	second.Set("expect", "2")
	second.Set("body", "merged: the first tab's text, and the second's\n")
	if code, _, _ := post(t, h, "/n/research/db/replicas", second); code != http.StatusSeeOther {
		t.Fatalf("saved after the merge: %d", code)
	}
	n, err := w.As(fsstore.OpenCaller("x")).Get("research/db/replicas", true)
	if err != nil || n.Version != 3 || n.Content != "merged: the first tab's text, and the second's\n" {
		t.Errorf("after the merge: %+v %v", n, err)
	}
	fsstoretest.CheckVersionsAgree(t, w.Dir(), nil)
}

// A form posted from another site is refused and writes nothing; a token
// that may only read sees no form and is refused when it posts anyway.
func TestPageWritesRefusedFromElsewhereAndWithoutTheRight(t *testing.T) {
	w := board(t)
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	edit := url.Values{"action": {"edit"}, "expect": {"2"}, "digest": {"forged"}, "body": {"forged"}}
	for _, header := range [][]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example", "Sec-Fetch-Site", ""}} {
		if code, _, _ := post(t, h, "/n/research/cache", edit, header...); code != http.StatusForbidden {
			t.Errorf("a form posted with %q: %d, want 403", header, code)
		}
	}
	withAccess(t, w, access.Agent{Name: "reader", TokenSHA256: access.HashToken("tok-reader"), Read: []string{"research"}},
		access.Agent{Name: "editor", TokenSHA256: access.HashToken("tok-editor"), Write: []string{"research"}})
	reader := []string{"Cookie", tokenCookie + "=tok-reader"}
	if code, page := get(t, h, "/n/research/cache", reader...); code != 200 || strings.Contains(page, `<section id="act"`) || strings.Contains(page, "<form method=\"post\"") {
		t.Errorf("a read-only token's page: %d, with write controls:\n%s", code, page)
	}
	if code, page, _ := post(t, h, "/n/research/cache", edit, reader...); code != http.StatusForbidden || !strings.Contains(page, "you may not write") {
		t.Errorf("a read-only token's edit: %d\n%s", code, page)
	}
	if code, _, _ := post(t, h, "/new", url.Values{"uri": {"research/x"}, "digest": {"x"}, "body": {"x"}}, reader...); code != http.StatusForbidden {
		t.Errorf("a read-only token's new note: %d", code)
	}
	// A reader is offered no form at all: no "new note" on the board or a
	// topic, and none at /new.
	for _, path := range []string{"/", "/t/research", "/new", "/new?topic=research"} {
		if _, page := get(t, h, path, reader...); strings.Contains(page, "new note</a>") || strings.Contains(page, "<form method=\"post\"") {
			t.Errorf("a read-only token is offered a form at %s:\n%s", path, page)
		}
	}
	if code, _ := get(t, h, "/new", reader...); code != http.StatusForbidden {
		t.Errorf("a read-only token's /new: %d, want 403", code)
	}
	editor := []string{"Cookie", tokenCookie + "=tok-editor"}
	for _, path := range []string{"/", "/t/research"} {
		if _, page := get(t, h, path, editor...); !strings.Contains(page, "new note") {
			t.Errorf("a writer is offered no new note at %s", path)
		}
	}
	if code, page := get(t, h, "/n/research/cache", editor...); code != 200 || !strings.Contains(page, `<section id="act"`) {
		t.Errorf("a writer's page has no forms: %d", code)
	}
	if code, _, _ := post(t, h, "/n/research/cache", edit, editor...); code != http.StatusSeeOther {
		t.Errorf("the editor's save: %d", code)
	}
	if c := lastCommit(t, w.Dir()); !strings.HasPrefix(c, "editor\n") || !strings.Contains(c, "Blackboard-By: person") {
		t.Errorf("the editor's commit:\n%s", c)
	}
	fsstoretest.CheckVersionsAgree(t, w.Dir(), nil)
}

// A body that starts with a blank line round-trips through a digest-only
// edit byte for byte: the page is read as a browser reads it (HTML drops
// the first newline after <textarea>), and its form sent back as it was.
func TestEditKeepsALeadingBlankLine(t *testing.T) {
	w := board(t)
	agent := w.As(fsstore.OpenCaller("scout"))
	body := "\nthe text after a blank line\n"
	if _, err := agent.Update(fsstore.UpdateRequest{URI: "research/blank", Digest: "starts blank", Body: &body}); err != nil {
		t.Fatal(err)
	}
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	_, page := get(t, h, "/n/research/blank")
	form := formValues(t, page, "edit-form")
	if form.Get("body") != body {
		t.Fatalf("the edit form's body reads %q in a browser; want %q", form.Get("body"), body)
	}
	form.Set("digest", "starts blank, digest edited")
	if code, _, _ := post(t, h, "/n/research/blank", form); code != http.StatusSeeOther {
		t.Fatalf("the digest-only edit: %d", code)
	}
	n, err := agent.Get("research/blank", true)
	if err != nil || n.Content != body || n.Digest != "starts blank, digest edited" {
		t.Errorf("after the edit: %+v, %v; want the body %q kept", n, err, body)
	}
}

// formValues parses page as a browser does and returns the fields of the
// form with the id, as a browser would send them.
func formValues(t *testing.T, page, id string) url.Values {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var form *html.Node
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == "form" && attr(n, "id") == id {
			form = n
		}
	}
	if form == nil {
		t.Fatalf("no form %s on the page:\n%s", id, page)
	}
	out := url.Values{}
	for n := range form.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		switch n.Data {
		case "input":
			out.Set(attr(n, "name"), attr(n, "value"))
		case "textarea":
			var text strings.Builder
			for c := range n.ChildNodes() {
				text.WriteString(c.Data)
			}
			out.Set(attr(n, "name"), text.String())
		}
	}
	return out
}

func attr(n *html.Node, name string) string {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }
