package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// appHost serves a page that hosts the board's view with the official MCP
// Apps SDK's host side (AppBridge, which .ci/node-tools bundles), and is the
// MCP client behind it: the page's tool calls and reads come to /call and
// /read, and /model is the call the model made (list_keys), whose answer
// the view opens with.
func appHost(t *testing.T, app *appClient, bridgeJS string) *httptest.Server {
	t.Helper()
	page, err := os.ReadFile(filepath.Join("testdata", "apphost", "host.html"))
	if err != nil {
		t.Fatal(err)
	}
	answer := func(w http.ResponseWriter, v any, err error) {
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	mux.HandleFunc("GET /app-bridge.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		http.ServeFile(w, r, bridgeJS)
	})
	mux.HandleFunc("GET /view", func(w http.ResponseWriter, r *http.Request) {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = tools.ViewURI
		res, err := app.c.ReadResource(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.WriteString(w, res.Contents[0].(mcp.TextResourceContents).Text)
	})
	mux.HandleFunc("POST /call", func(w http.ResponseWriter, r *http.Request) {
		var p struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// A host relays only the tools a view may call (visibility app).
		if p.Name != "board_view" && p.Name != "board_act" {
			http.Error(w, "not a tool of the view", http.StatusForbidden)
			return
		}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = p.Name, p.Arguments
		res, err := app.c.CallTool(r.Context(), req)
		answer(w, res, err)
	})
	mux.HandleFunc("POST /model", func(w http.ResponseWriter, r *http.Request) {
		args := map[string]any{"topic": "research"}
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "list_keys", args
		res, err := app.c.CallTool(r.Context(), req)
		if err != nil {
			answer(w, nil, err)
			return
		}
		// The result as the protocol has it, without the fields mcp-go
		// leaves empty (AppBridge checks its shape).
		result := map[string]any{"content": res.Content, "isError": res.IsError}
		answer(w, map[string]any{"arguments": args, "result": result}, nil)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// The board as an MCP App in a host built on the official SDK (AppBridge),
// in headless Chromium: the view loads from `serve`, opens with the topic
// list_keys listed, opens a note, its history and a diff, shows an agent's
// write made through MCP within 2 s, writes as a person, and runs nothing
// a hostile note holds. With BLACKBOARD_SCREENSHOTS=DIR it writes the view
// in its host there (app.png, the README's).
func TestBoardViewInAnAppHost(t *testing.T) {
	nodeTools := os.Getenv(nodeToolsEnv)
	if nodeTools == "" {
		t.Skip(nodeToolsEnv + " is not set (.ci/node-tools installs the MCP Apps SDK)")
	}
	bridgeJS := filepath.Join(nodeTools, "app-bridge.js")
	if _, err := os.Stat(bridgeJS); err != nil {
		t.Fatalf("no AppBridge bundle in %s (run .ci/node-tools): %v", nodeTools, err)
	}
	bctx := browserFor(t)
	dir := newWorkspaceDir(t)
	agent := startServer(t, serverOpts{dir: dir, agent: "scout"})
	agent.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell after the deploy",
		"body": "## Findings\n\nThe LRU is undersized.\n", "expect_version": 0, "kind": "finding"})
	agent.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell after the 2.4.7 deploy",
		"body": "## Findings\n\nThe LRU is undersized: 4 GB for 9 GB of keys.\n", "expect_version": 1, "kind": "finding"})
	agent.write(map[string]any{"uri": "research/db/replicas", "digest": "Two replicas lag by seconds", "body": "lag", "expect_version": 0})
	agent.write(map[string]any{"uri": "ops/deploy", "digest": "Deploy 2.4.7 went out at 14:02 UTC", "body": "rollout", "expect_version": 0, "claim": "take"})
	agent.link("research/cache", "cites", "ops/deploy")
	hostile := `<img src=x onerror="document.body.dataset.pwned=1"><script>document.body.dataset.pwned=1</script>`
	agent.write(map[string]any{"uri": "research/hostile", "digest": "A note " + hostile, "body": hostile + "\n[x](javascript:document.body.dataset.pwned=1)\n", "expect_version": 0})
	app := startAppClient(t, serverOpts{dir: dir, agent: "ana"})
	host := appHost(t, app, bridgeJS)

	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	defer cancel()
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(host.URL+"/"), chromedp.WaitReady(css(`iframe#app`))); err != nil {
		t.Fatalf("load the host: %v", err)
	}
	// Chromium runs a sandboxed frame in a process of its own: the view is
	// a target of its own, attached to here.
	var view context.Context
	for view == nil {
		targets, err := chromedp.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets {
			if tg.Type == "iframe" {
				var cancelView context.CancelFunc
				view, cancelView = chromedp.NewContext(ctx, chromedp.WithTargetID(tg.TargetID))
				defer cancelView()
			}
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("the host shows no frame")
		}
		time.Sleep(20 * time.Millisecond)
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(view, actions...); err != nil {
			shown, _ := chromedp.Run(view, chromedp.Text(css(`body`)))
			t.Fatalf("%s: %v\nthe view shows:\n%s", what, err, shown)
		}
	}
	viewText := func() string {
		t.Helper()
		text, err := chromedp.Run(view, chromedp.Text(css(`#main`)))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	// The view opens with what the model listed: the topic research.
	run("the view renders", chromedp.WaitVisible(css(`#main[data-page="topic:research"] a[data-key="research/cache"]`)))
	firstRender := time.Since(start)
	t.Logf("first render of the view in the host: %v (page load, AppBridge handshake, list_keys, board_view)", firstRender.Round(time.Millisecond))
	if text := viewText(); !strings.Contains(text, "Cache hit rate fell after the 2.4.7 deploy") || strings.Contains(text, "ops/deploy") {
		t.Errorf("the view did not open with the topic list_keys listed:\n%s", text)
	}

	shots := os.Getenv("BLACKBOARD_SCREENSHOTS")
	run("open a note", openNote("research/cache")...)
	run("a diff", clickLive(`tr:nth-last-child(2) a.diff-link`), chromedp.WaitVisible(css(`pre.diff .dadd`))) // v1 to v2
	if text := viewText(); !strings.Contains(text, "+ The LRU is undersized: 4 GB for 9 GB of keys.") || !strings.Contains(text, "cites") {
		t.Errorf("the note and its diff in the view:\n%s", text)
	}
	if shots != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(shots, "app.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// An agent's write through MCP shows in the open view within 2 s.
	run("open the note again", openNote("research/cache")...)
	written := time.Now()
	agent.write(map[string]any{"uri": "research/cache", "digest": "Written while the view is open", "body": "fine now\n", "expect_version": 3})
	for !strings.Contains(viewText(), "Written while the view is open") {
		if time.Since(written) > 2*time.Second {
			t.Fatalf("the view does not show an agent's write 2 s after it:\n%s", viewText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("an agent's write showed in the open view after %v", time.Since(written).Round(time.Millisecond))

	// A person's edit from the view: one commit, theirs.
	run("edit from the view",
		chromedp.SetAttributeValue(css(`#edit`), "open", ""), chromedp.WaitVisible(css(`#edit button`)),
		chromedp.SetValue(css(`#edit input[name=digest]`), "Checked from the view"),
		chromedp.Click(css(`#edit button`)),
		chromedp.WaitVisible(css(`h1[data-version="5"]`)),
	)
	if c := fixtures.Git(t, dir, "log", "-1", "--format=%an%n%s%n%(trailers)"); !strings.HasPrefix(c, "ana\nupdate research/cache v5: Checked from the view") ||
		!strings.Contains(c, "Blackboard-By: person") {
		t.Errorf("the view's edit:\n%s", c)
	}

	// A hostile note runs nothing: its markup is text.
	run("open the hostile note", openNote("research/hostile")...)
	time.Sleep(300 * time.Millisecond) // what would run, runs
	bad, err := chromedp.Run(ctx, chromedp.Nodes(css(`#main img, #main script, #main a[href^="javascript"], body[data-pwned]`), chromedp.AtLeast(0)))
	if err != nil || len(bad) != 0 {
		t.Errorf("the hostile note made %d elements in the view (%v)", len(bad), err)
	}
	if text := viewText(); !strings.Contains(text, `<img src=x onerror="document.body.dataset.pwned=1">`) {
		t.Errorf("the hostile note's text is not shown as text:\n%s", text)
	}
}

// openNote opens a note in the view by its link, from the board.
func openNote(key string) []chromedp.Action[chromedp.Void] {
	return []chromedp.Action[chromedp.Void]{
		chromedp.Click(chromedp.CSS(`#go-board`)),
		chromedp.WaitVisible(chromedp.CSS(`#main[data-page="board"] a[data-key="` + key + `"]`)),
		clickLive(`#main[data-page="board"] a[data-key="` + key + `"]`),
		chromedp.WaitVisible(chromedp.CSS(`#main[data-page="note"] h1[data-version]`)),
	}
}
