package web

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
)

// board makes a workspace with a few notes, hostile ones among them, and
// returns it open.
func board(t *testing.T) *fsstore.Workspace {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "writer"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	v := w.As(fsstore.OpenCaller("writer"))
	zero := 0
	for _, n := range []struct{ uri, digest, body string }{
		{"research/cache", "Cache hit rate fell <b>after</b> the deploy", "# Findings\n\nThe LRU is **undersized**.\n\n" +
			"<script>alert(1)</script>\n\n[click](javascript:alert(2)) <img src=x onerror=alert(3)>\n"},
		{"secret/plan", "The secret plan", "only for the planner"},
		{"research/big", "A long report", strings.Repeat("a line of the long report\n", 800)},
		{"research/db/replicas", "Two replicas lag", "by seconds"},
		{"research/db/pg/tuning", "work_mem is too small", "raise it"},
	} {
		body := n.body
		if _, err := v.Update(fsstore.UpdateRequest{URI: n.uri, Digest: n.digest, Body: &body, ExpectVersion: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.Update(fsstore.UpdateRequest{URI: "research/table", Digest: "A table", Columns: []string{"k", "v"},
		Rows: [][]string{{"<i>x</i>", "1"}}, ExpectVersion: &zero}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Link("research/cache", "depends_on", []string{"secret/plan"}); err != nil {
		t.Fatal(err)
	}
	return w
}

// revise writes research/cache anew with body, over the version it is at.
func revise(t *testing.T, w *fsstore.Workspace, body string) {
	t.Helper()
	v := w.As(fsstore.OpenCaller("writer"))
	n, err := v.Get("research/cache", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Update(fsstore.UpdateRequest{URI: "research/cache", Digest: "revised", Body: &body, ExpectVersion: &n.Version}); err != nil {
		t.Fatal(err)
	}
}

// withAccess gives the board of w an access file of agents.
func withAccess(t *testing.T, w *fsstore.Workspace, agents ...access.Agent) {
	t.Helper()
	data, err := (&access.File{Agents: agents}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Dir(), ".blackboard", "access.yaml"), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, h http.Handler, path string, header ...string) (int, string) {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec.Code, rec.Body.String()
}

func TestPagesOfAnOpenBoard(t *testing.T) {
	w := board(t)
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	code, page := get(t, h, "/")
	if code != 200 || !strings.Contains(page, `href="/t/research"`) || !strings.Contains(page, "research/cache") {
		t.Fatalf("the board: %d\n%s", code, page)
	}
	code, page = get(t, h, "/n/research/cache")
	if code != 200 {
		t.Fatalf("a note: %d\n%s", code, page)
	}
	for _, want := range []string{"<h1>Findings</h1>", "<strong>undersized</strong>", "Cache hit rate fell &lt;b&gt;after&lt;/b&gt; the deploy",
		`href="/n/secret/plan"`, "depends_on", "History"} {
		if !strings.Contains(page, want) {
			t.Errorf("the note's page lacks %q", want)
		}
	}
	// The edit form holds the body as text, escaped: "javascript:" and
	// "onerror=" are words there, and nowhere else.
	shown, form, _ := strings.Cut(page, `<section id="act"`)
	for _, hostile := range []string{"<script>alert", "javascript:", "onerror=alert", "<b>after</b>"} {
		if strings.Contains(shown, hostile) {
			t.Errorf("the note's page holds %q unescaped:\n%s", hostile, shown)
		}
	}
	if !strings.Contains(form, "&lt;script&gt;alert(1)&lt;/script&gt;") || strings.Contains(form, "<script>") || strings.Contains(form, "<img") {
		t.Errorf("the edit form does not hold the body escaped:\n%s", form)
	}
	if !strings.Contains(page, `<svg class="graph"`) || !strings.Contains(page, `class="rel-depends_on"`) {
		t.Errorf("the note's page draws no graph of its links")
	}
	if _, page = get(t, h, "/n/secret/plan"); !strings.Contains(page, "depends_on from") || !strings.Contains(page, `<a href="/n/research/cache"><text`) {
		t.Errorf("the linked note's page shows no backlink:\n%s", page)
	}
	if code, page = get(t, h, "/n/research/table"); code != 200 || !strings.Contains(page, "<th>k</th>") || !strings.Contains(page, "&lt;i&gt;x&lt;/i&gt;") {
		t.Errorf("a table note: %d\n%s", code, page)
	}
	if code, page = get(t, h, "/n/research/big"); code != 200 || strings.Count(page, "a line of the long report") != 2*800 {
		t.Errorf("an out-of-line note: %d, %d lines (in the page and in its edit form)", code, strings.Count(page, "a line of the long report"))
	}
	if code, _ = get(t, h, "/n/research/none"); code != 404 {
		t.Errorf("a missing note: %d", code)
	}
	if code, _ = get(t, h, "/n/../../etc/passwd"); code == 200 {
		t.Errorf("a hostile address: %d", code)
	}
	if code, page = get(t, h, "/activity"); code != 200 || !strings.Contains(page, "link research/cache v2: depends_on bb://acme/secret/plan") ||
		!strings.Contains(page, `href="/n/secret/plan"`) {
		t.Errorf("activity: %d\n%s", code, page)
	}
	if code, page = get(t, h, "/search?q=undersized"); code != 200 || !strings.Contains(page, "research/cache") {
		t.Errorf("search: %d\n%s", code, page)
	}
	// The topic tree: a topic's folders with their counts, its notes with
	// their links, the way back up.
	if code, page = get(t, h, "/t/research"); code != 200 || !strings.Contains(page, `<a href="/t/research/db">db/</a> <span class="count">2</span>`) ||
		!strings.Contains(page, `<span class="rel-depends_on">depends_on</span> <a href="/n/secret/plan">`) {
		t.Errorf("a topic: %d\n%s", code, page)
	}
	if code, page = get(t, h, "/t/research/db"); code != 200 || !strings.Contains(page, `<a href="/t/research">research</a> / db</h1>`) ||
		!strings.Contains(page, `<a href="/t/research/db/pg">pg/</a> <span class="count">1</span>`) || strings.Contains(page, "research/cache") {
		t.Errorf("a folder of a topic: %d\n%s", code, page)
	}
	if code, _ = get(t, h, "/t/research/none"); code != 404 {
		t.Errorf("a missing folder: %d", code)
	}
	// The live update's request gets the main part alone, made again once
	// the board moved.
	if _, part := get(t, h, "/t/research", "X-Part", "main"); strings.Contains(part, "<html") || !strings.Contains(part, "research/cache") {
		t.Errorf("the main part:\n%s", part)
	}
	v := w.As(fsstore.OpenCaller("writer"))
	body, two := "new", 2 // the link made it v2
	if _, err := v.Update(fsstore.UpdateRequest{URI: "research/cache", Digest: "revised after the page was made", Body: &body, ExpectVersion: &two}); err != nil {
		t.Fatal(err)
	}
	if _, part := get(t, h, "/t/research", "X-Part", "main"); !strings.Contains(part, "revised after the page was made") {
		t.Errorf("the main part after a write:\n%s", part)
	}
}

// A topic page of a task list marks the tasks that can be taken now; one
// of findings marks none.
func TestTopicPageMarksReadyTasks(t *testing.T) {
	w := board(t)
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	v := w.As(fsstore.OpenCaller("writer"))
	zero := 0
	for _, key := range []string{"tasks/a", "tasks/b"} {
		body := "to do"
		if _, err := v.Update(fsstore.UpdateRequest{URI: key, Digest: key, Body: &body, ExpectVersion: &zero}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.Link("tasks/b", "depends_on", []string{"tasks/a"}); err != nil {
		t.Fatal(err)
	}
	ready := func(page, key string) bool {
		_, row, _ := strings.Cut(page, `<tr><td><a href="/n/`+key+`">`)
		row, _, _ = strings.Cut(row, "</tr>")
		return strings.Contains(row, `<span class="tag ready">ready</span>`)
	}
	_, page := get(t, h, "/t/tasks")
	if !ready(page, "tasks/a") || ready(page, "tasks/b") {
		t.Fatalf("before a is done, a ready: %v, b ready: %v; want a alone\n%s", ready(page, "tasks/a"), ready(page, "tasks/b"), page)
	}
	for _, claim := range []string{fsstore.ClaimTake, fsstore.ClaimDone} {
		if _, err := v.Update(fsstore.UpdateRequest{URI: "tasks/a", Claim: claim}); err != nil {
			t.Fatal(err)
		}
	}
	if _, page = get(t, h, "/t/tasks"); ready(page, "tasks/a") || !ready(page, "tasks/b") {
		t.Fatalf("once a is done, a ready: %v, b ready: %v; want b alone\n%s", ready(page, "tasks/a"), ready(page, "tasks/b"), page)
	}
	// research/cache depends on a note of another topic: findings, not tasks.
	if _, page = get(t, h, "/t/research"); strings.Contains(page, `class="tag ready"`) {
		t.Errorf("a topic of findings has notes marked ready:\n%s", page)
	}
}

func TestPagesShowOnlyWhatTheTokenMayRead(t *testing.T) {
	w := board(t)
	withAccess(t, w, access.Agent{Name: "reader", TokenSHA256: access.HashToken("tok-reader"), Read: []string{"research"}},
		access.Agent{Name: "dba", TokenSHA256: access.HashToken("tok-dba"), Read: []string{"research/db"}})
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	if code, _ := get(t, h, "/"); code != http.StatusSeeOther {
		t.Errorf("the board without a token: %d, want a redirect to the login", code)
	}
	// Logging in sets a cookie the page's scripts cannot read.
	r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {"tok-reader"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	cookie := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookie) != 1 || !cookie[0].HttpOnly || cookie[0].SameSite != http.SameSiteStrictMode || cookie[0].Secure {
		t.Fatalf("login: %d %+v", rec.Code, cookie)
	}
	// Served over TLS (serve --http with a certificate, or behind a proxy
	// that terminates TLS), the cookie is sent over TLS only.
	r = httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {"tok-reader"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = httptest.NewRecorder()
	New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), true).Handler().ServeHTTP(rec, r)
	if c := rec.Result().Cookies(); len(c) != 1 || !c[0].Secure {
		t.Fatalf("login over TLS: %+v", c)
	}
	// A login posted from another site is refused.
	r = httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {"tok-reader"}}.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "https://evil.example")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusForbidden || len(rec.Result().Cookies()) != 0 {
		t.Fatalf("a login from another origin: %d %+v", rec.Code, rec.Result().Cookies())
	}
	auth := []string{"Cookie", tokenCookie + "=tok-reader"}
	for path, hidden := range map[string]string{"/": "secret", "/n/research/cache": "secret/plan", "/search?q=secret": "secret/plan",
		"/activity": "secret", "/t/research": "secret"} {
		code, page := get(t, h, path, auth...)
		if code != 200 || strings.Contains(page, hidden) {
			t.Errorf("%s as reader: %d, shows %q:\n%s", path, code, hidden, page)
		}
	}
	if code, _ := get(t, h, "/n/secret/plan", auth...); code != 404 {
		t.Errorf("a hidden note: %d, want 404", code)
	}
	if code, page := get(t, h, "/n/secret/plan@1", auth...); code != 404 || strings.Contains(page, "version") {
		t.Errorf("a hidden note's past version: %d\n%s", code, page)
	}
	// A token for part of a topic sees that part of the tree alone.
	dba := []string{"Cookie", tokenCookie + "=tok-dba"}
	if code, page := get(t, h, "/", dba...); code != 200 || !strings.Contains(page, `<a href="/t/research">research</a> <span class="count">2</span>`) ||
		strings.Contains(page, "research/cache") {
		t.Errorf("the board for part of a topic: %d\n%s", code, page)
	}
	if code, page := get(t, h, "/t/research", dba...); code != 200 || !strings.Contains(page, `db/</a> <span class="count">2</span>`) ||
		strings.Contains(page, "research/cache") || strings.Contains(page, "research/big") {
		t.Errorf("a topic for part of it: %d\n%s", code, page)
	}
	// The live updates' parts, made once for each reader at a cursor, are
	// never another reader's.
	for range 2 {
		if _, part := get(t, h, "/", append([]string{"X-Part", "main"}, dba...)...); strings.Contains(part, "research/cache") {
			t.Errorf("the dba's live part of the board shows research/cache:\n%s", part)
		}
		if _, part := get(t, h, "/", append([]string{"X-Part", "main"}, auth...)...); !strings.Contains(part, "research/cache") {
			t.Errorf("the reader's live part of the board lacks research/cache:\n%s", part)
		}
	}
	if code, _ := get(t, h, "/", "Cookie", tokenCookie+"=wrong"); code != http.StatusSeeOther {
		t.Errorf("a wrong token: %d", code)
	}
}

// TestEventsSayWhenTheBranchMoves: every open stream names the new cursor
// when a write lands; they share one look at the branch, which ends with
// the last stream.
func TestEventsSayWhenTheBranchMoves(t *testing.T) {
	w := board(t)
	s := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	s.poll = 20 * time.Millisecond
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	var streams []*http.Response
	for range 2 {
		resp, err := http.Get(srv.URL + "/events")
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		streams = append(streams, resp)
	}
	time.Sleep(100 * time.Millisecond)
	revise(t, w, "new")
	want, _ := w.Cursor()
	for i, resp := range streams {
		lines := bufio.NewScanner(resp.Body)
		deadline := time.AfterFunc(2*time.Second, func() { resp.Body.Close() })
		got := ""
		for got == "" && lines.Scan() {
			if lines.Text() == "event: moved" && lines.Scan() {
				got = lines.Text()
			}
		}
		deadline.Stop()
		if got != "data: "+itoa(want) {
			t.Fatalf("stream %d: moved to %q within 2 s of a write, want cursor %d", i, got, want)
		}
		resp.Body.Close()
	}
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		s.moves.mu.Lock()
		open := s.moves.streams
		s.moves.mu.Unlock()
		if open == 0 {
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("%d streams still counted after all closed", open)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestNoteDiff: the note's page shows the changes between two of its
// versions, and only of its own commits.
func TestNoteDiff(t *testing.T) {
	w := board(t)
	v := w.As(fsstore.OpenCaller("writer"))
	n, err := v.Get("research/cache", true)
	if err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(n.Content, "The LRU is **undersized**.", "The LRU is <em>fine</em> now.", 1)
	if _, err := v.Update(fsstore.UpdateRequest{URI: "research/cache", Digest: "revised", Body: &body, ExpectVersion: &n.Version}); err != nil {
		t.Fatal(err)
	}
	log, err := v.Log("research/cache", 10)
	if err != nil || len(log) != 3 {
		t.Fatalf("log: %v %v", log, err)
	}
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	code, page := get(t, h, "/n/research/cache?from="+log[2].Commit+"&to="+log[0].Commit)
	if code != 200 {
		t.Fatalf("diff: %d\n%s", code, page)
	}
	for _, want := range []string{`<span class="ddel">- The LRU is **undersized**.</span>`,
		`<span class="dadd">&#43; The LRU is &lt;em&gt;fine&lt;/em&gt; now.</span>`, `<span class="dkeep">  # Findings</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the diff lacks %q:\n%s", want, page)
		}
	}
	other, err := v.Log("secret/plan", 1)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, h, "/n/research/cache?from="+other[0].Commit+"&to="+log[0].Commit); code != 404 {
		t.Errorf("a diff with another note's commit: %d, want 404", code)
	}
}

// A note's past version has its page, at key@N, linked from the history:
// its content as that version left it, escaped as every note's is; a
// version past the note's is not found and says which it is at
// (TestPagesShowOnlyWhatTheTokenMayRead: a reader without the topic sees
// no version of it).
func TestPastVersionPage(t *testing.T) {
	w := board(t)
	revise(t, w, "The LRU is <em>fine</em> now.\n")
	v := w.As(fsstore.OpenCaller("writer"))
	log, err := v.Log("research/cache", 10)
	if err != nil || len(log) != 3 {
		t.Fatalf("log: %v %v", log, err)
	}
	h := New(w, slog.New(slog.NewTextHandler(io.Discard, nil)), false).Handler()
	code, page := get(t, h, "/n/research/cache")
	if code != 200 || !strings.Contains(page, `<a href="/n/research/cache@2">2</a>`) {
		t.Fatalf("the history links no past version: %d\n%s", code, page)
	}
	code, page = get(t, h, "/n/research/cache@2")
	if code != 200 {
		t.Fatalf("version 2: %d\n%s", code, page)
	}
	for _, want := range []string{"The LRU is <strong>undersized</strong>", "Version 2, as commit <code>" + log[1].Commit[:7],
		`<a href="/n/research/cache">The note as it is</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("version 2's page lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "fine</em> now") {
		t.Errorf("version 2's page shows a script or the later text:\n%s", page)
	}
	if code, page := get(t, h, "/n/research/cache@4"); code != 404 || !strings.Contains(page, "at version 3") {
		t.Errorf("a version past the note's: %d\n%s", code, page)
	}
}
