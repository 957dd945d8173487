package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// People write from the page in a real browser, through the local `view`
// (BLACKBOARD_AGENT names the person): a new note, an edit, a line
// appended, a link, an agent's claim released. Each is one commit by the
// person, marked as a person's, at the version an agent then reads through
// MCP. Two tabs edit one note: the second save shows what changed and
// keeps its text, and its save after the merge goes through. A form posted
// from another site changes nothing; a token that may only read sees no
// form, and its post is refused.
func TestPeopleWriteFromThePageInABrowser(t *testing.T) {
	bctx := browserFor(t)
	dir := newWorkspaceDir(t)
	agent := startServer(t, serverOpts{dir: dir, agent: "scout"})
	agent.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell", "body": "The LRU is undersized.\n", "expect_version": 0})
	agent.write(map[string]any{"uri": "research/db", "digest": "Two replicas lag", "body": "lag\n", "expect_version": 0})
	agent.write(map[string]any{"uri": "research/task", "digest": "Resize the LRU", "body": "todo\n", "expect_version": 0, "claim": "take"})
	base, _ := startViewOn(t, dir, "127.0.0.1:0", "BLACKBOARD_AGENT=ana")

	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	run := func(ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			// What the browser shows, to tell why.
			shown, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
			t.Fatalf("%s: %v\nthe page:\n%s", what, err, shown)
		}
	}
	// byPerson checks the branch's last commit: the person's, marked so,
	// with subject; and the note's version as an agent reads it.
	byPerson := func(subject, uri string, version int) {
		t.Helper()
		c := fixtures.Git(t, dir, "log", "-1", "--format=%an%n%s%n%(trailers)")
		if !strings.HasPrefix(c, "ana\n"+subject) || !strings.Contains(c, "Blackboard-By: person") {
			t.Errorf("the last commit is not ana's %q:\n%s", subject, c)
		}
		if got := agent.get([]string{uri}, "ref", 0).Items[0].Version; got != version {
			t.Errorf("%s: an agent reads v%d, want v%d", uri, got, version)
		}
	}

	run(ctx, "create a note",
		chromedp.Navigate(base+"/new?topic=research"),
		chromedp.SetValue(css(`#new-form input[name=uri]`), "research/from-the-page"),
		chromedp.SetValue(css(`#new-form input[name=digest]`), "Written by a person in the page"),
		chromedp.SetValue(css(`#new-form textarea[name=body]`), "found by hand\n"),
		chromedp.Click(css(`#new-form button`)),
		chromedp.WaitVisible(css(`h1[data-version="1"]`)),
	)
	byPerson("update research/from-the-page v1: Written by a person in the page", "research/from-the-page", 1)

	// Two tabs open the note at v1.
	tab2, cancel2 := chromedp.NewContext(ctx)
	defer cancel2()
	run(ctx, "open the note", chromedp.Navigate(base+"/n/research/cache"), chromedp.WaitVisible(css(`#act`)))
	run(tab2, "open the note in a second tab", chromedp.Navigate(base+"/n/research/cache"), chromedp.WaitVisible(css(`#act`)))
	run(ctx, "edit in the first tab",
		chromedp.SetAttributeValue(css(`#act details:has(#edit-form)`), "open", ""), chromedp.WaitVisible(css(`#edit-form button`)),
		chromedp.SetValue(css(`#edit-form input[name=digest]`), "Cache hit rate fell, checked by hand"),
		chromedp.SetValue(css(`#edit-form textarea[name=body]`), "The LRU is undersized: 4 GB for 9 GB.\n"),
		chromedp.Click(css(`#edit-form button`)),
		chromedp.WaitVisible(css(`h1[data-version="2"]`)),
	)
	byPerson("update research/cache v2: Cache hit rate fell, checked by hand", "research/cache", 2)
	run(tab2, "edit in the second tab",
		chromedp.SetAttributeValue(css(`#act details:has(#edit-form)`), "open", ""), chromedp.WaitVisible(css(`#edit-form button`)),
		chromedp.SetValue(css(`#edit-form textarea[name=body]`), "The second tab's own words.\n"),
		chromedp.Click(css(`#edit-form button`)),
		chromedp.WaitVisible(css(`.refused`)),
	)
	refused, err := chromedp.Run(tab2, chromedp.Text(css(`#act`)))
	if err != nil {
		t.Fatal(err)
	}
	kept, err := chromedp.Run(tab2, chromedp.Value(css(`#edit-form textarea[name=body]`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refused, "you expected version 1") || !strings.Contains(refused, "+ The LRU is undersized: 4 GB for 9 GB.") ||
		!strings.Contains(refused, "- The LRU is undersized.") || kept != "The second tab's own words.\n" {
		t.Fatalf("the second tab's refused save shows:\n%s\nand keeps %q", refused, kept)
	}
	run(tab2, "save the merge",
		chromedp.SetValue(css(`#edit-form textarea[name=body]`), "The LRU is undersized: 4 GB for 9 GB.\nThe second tab's own words.\n"),
		chromedp.Click(css(`#edit-form button`)),
		chromedp.WaitVisible(css(`h1[data-version="3"]`)),
	)
	byPerson("update research/cache v3: Cache hit rate fell", "research/cache", 3)

	run(ctx, "append a line",
		chromedp.Navigate(base+"/n/research/cache"),
		chromedp.SetAttributeValue(css(`#act details:has(#append-form)`), "open", ""), chromedp.WaitVisible(css(`#append-form button`)),
		chromedp.SetValue(css(`#append-form textarea[name=text]`), "Appended from the page."),
		chromedp.Click(css(`#append-form button`)),
		chromedp.WaitVisible(css(`h1[data-version="4"]`)),
	)
	byPerson("append research/cache v4", "research/cache", 4)
	run(ctx, "link two notes",
		chromedp.SetAttributeValue(css(`#act details:has(#link-form)`), "open", ""), chromedp.WaitVisible(css(`#link-form button`)),
		chromedp.SetValue(css(`#link-form select[name=rel]`), "cites"),
		chromedp.SetValue(css(`#link-form input[name=dst]`), "research/db"),
		chromedp.Click(css(`#link-form button`)),
		chromedp.WaitVisible(css(`h1[data-version="5"]`)),
	)
	byPerson("link research/cache v5: cites bb://acme/research/db", "research/cache", 5)
	run(ctx, "release an agent's claim",
		chromedp.Navigate(base+"/n/research/task"),
		chromedp.SetAttributeValue(css(`#act details:has(#claim-form)`), "open", ""), chromedp.WaitVisible(css(`#claim-form button`)),
		chromedp.Click(css(`#claim-form button[value=release]`)),
		chromedp.WaitVisible(css(`h1[data-version="2"]`)),
	)
	byPerson("release research/task v2", "research/task", 2)
	if it := agent.get([]string{"research/task"}, "fields", 0, "claimed_by").Items[0]; strings.Contains(fmt.Sprint(it), "scout") {
		t.Errorf("the claim is still held: %+v", it)
	}

	// A page of another site posts a form to the board: refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><body><form id="f" method="post" action="%s/n/research/cache"><input name="action" value="edit"><input name="expect" value="5">`+
			`<input name="digest" value="forged"><input name="body" value="forged"></form><script>document.getElementById("f").submit()</script></body></html>`, base)
	}))
	defer evil.Close()
	var forbidden string
	run(ctx, "a form from another site",
		chromedp.Navigate(evil.URL),
		chromedp.WaitReady(css(`body`)),
	)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(forbidden, "forbidden") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		forbidden, _ = chromedp.Run(ctx, chromedp.Text(css(`body`)))
	}
	if !strings.Contains(forbidden, "forbidden") {
		t.Errorf("the other site's form was not refused: %q", forbidden)
	}
	if v := agent.get([]string{"research/cache"}, "ref", 0).Items[0].Version; v != 5 {
		t.Errorf("the other site's form wrote: v%d", v)
	}

	// A token that may only read: no form, and a post is refused.
	viewer := tokenAdd(t, dir, "viewer", "--read", "research")
	run(ctx, "log in as a reader",
		chromedp.Navigate(base+"/login"),
		chromedp.SetValue(css(`input[name=token]`), viewer),
		chromedp.Click(css(`form button`)),
		chromedp.WaitVisible(css(`a[href="/t/research"]`)),
		chromedp.Navigate(base+"/n/research/cache"),
		chromedp.WaitVisible(css(`h1[data-version]`)),
	)
	forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#act, form[method=post]").length`))
	if err != nil || forms != 0 {
		t.Errorf("a reader's page has %d write forms (%v)", forms, err)
	}
	status, err := chromedp.Run(ctx, chromedp.Evaluate[int](`fetch("/n/research/cache", {method: "POST",
		body: new URLSearchParams({action: "edit", expect: "6", digest: "by a reader", body: "x"})}).then(r => r.status)`,
		chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Errorf("a reader's post: %d (%v), want 403", status, err)
	}
	if c := fixtures.Git(t, dir, "log", "-1", "--format=%s", "--", "research/cache.md"); !strings.HasPrefix(c, "link research/cache v5") {
		t.Errorf("research/cache was written after the link: %s", c)
	}
}
