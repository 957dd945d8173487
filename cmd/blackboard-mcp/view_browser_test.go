package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestViewInABrowser drives the page in a real browser (headless Chromium,
// which .ci/run installs): open the board, click into a topic and a note,
// see its history and a diff; then an agent's write through MCP from
// another process, and a person's save, show on the open page within 2 s
// without a reload. With BLACKBOARD_SCREENSHOTS=DIR it writes screenshots
// of the board, a note and its graph there (the README's come from it).
func TestViewInABrowser(t *testing.T) {
	bctx := browserFor(t)
	dir := newWorkspaceDir(t)
	agent := startServer(t, serverOpts{dir: dir, agent: "scout"})
	agent.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell after the deploy",
		"body": "## Findings\n\nThe LRU is **undersized**.\n\n| shard | hit rate |\n|---|---|\n| 12 | 71% |\n", "expect_version": 0, "kind": "finding"})
	agent.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell after the 2.4.7 deploy",
		"body": "## Findings\n\nThe LRU is **undersized**: 4 GB for 9 GB of keys.\n", "expect_version": 1, "kind": "finding"})
	agent.write(map[string]any{"uri": "ops/deploy-2.4.7", "digest": "Deploy 2.4.7 went out at 14:02 UTC", "body": "rollout", "expect_version": 0})
	agent.write(map[string]any{"uri": "research/old-theory", "digest": "The CDN was to blame", "body": "no", "expect_version": 0})
	agent.write(map[string]any{"uri": "ops/postmortem-2.4.7", "digest": "Postmortem: the deploy did not cause the misses", "body": "traffic did", "expect_version": 0})
	agent.write(map[string]any{"uri": "research/db/replicas", "digest": "Two replicas lag by seconds", "body": "lag", "expect_version": 0})
	agent.link("research/cache", "cites", "ops/deploy-2.4.7")
	agent.link("research/cache", "supersedes", "research/old-theory")
	agent.link("ops/postmortem-2.4.7", "contradicts", "research/cache")
	agent.link("research/db/replicas", "depends_on", "research/cache")

	base, stopView := startViewOn(t, dir, "127.0.0.1:0")

	ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
	defer cancel()
	shots := os.Getenv("BLACKBOARD_SCREENSHOTS")
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	// shoot writes the whole page, or the element sel, as name.
	shoot := func(name string, sel ...string) chromedp.Action[chromedp.Void] {
		return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			if shots == "" {
				return chromedp.Void{}, nil
			}
			take := chromedp.FullScreenshot(100) // 100: PNG
			if len(sel) > 0 {
				take = chromedp.Screenshot(css(sel[0]))
			}
			png, err := take(ctx, tg)
			if err != nil {
				return chromedp.Void{}, err
			}
			return chromedp.Void{}, os.WriteFile(filepath.Join(shots, name), png, 0o644)
		}
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(css(`a[href="/t/research"]`)),
		chromedp.WaitVisible(css(`#live.on`)), // the event stream is open
		shoot("board.png"),
		clickLive(`a[href="/t/research"]`),
		chromedp.WaitVisible(css(`a[href="/n/research/cache"]`)),
		clickLive(`a[href="/n/research/cache"]`),
		chromedp.WaitVisible(css(`svg.graph`)),
		chromedp.WaitVisible(css(`#live.on`)),
		shoot("note.png"),
		shoot("graph.png", `svg.graph`),
		clickLive(`table.history tbody tr:nth-last-child(2) a[href*="from="]`), // v1 to v2
		chromedp.WaitVisible(css(`pre.diff .dadd`)),
	); err != nil {
		t.Fatalf("browsing the page: %v", err)
	}
	main, err := chromedp.Run(ctx, chromedp.Text(css(`#main`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(main, "+ The LRU is **undersized**: 4 GB for 9 GB of keys.") || !strings.Contains(main, "supersedes") {
		t.Fatalf("the note's page after the diff:\n%s", main)
	}
	// Live: an agent's write through MCP, from another process.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css(`#live.on`))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	agent.write(map[string]any{"uri": "research/cache", "digest": "A digest written while the page is open",
		"body": "The LRU is fine now.\n", "expect_version": 4})
	seen(ctx, t, "A digest written while the page is open", start, "an agent's write")
	// Live: a person's save.
	start = time.Now()
	p := filepath.Join(dir, "research", "cache.md")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "A digest written while the page is open", "A person saved this", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	seen(ctx, t, "A person saved this", start, "a person's save")
	// The page's server stops, an agent writes meanwhile, and the server
	// starts again: the open page reconnects by itself (the stream asks the
	// browser to retry after a second), shows what it missed, and is live
	// again.
	stopView()
	agent.write(map[string]any{"uri": "research/cache", "digest": "Written while the page's server was down",
		"body": "The LRU is fine now.\n", "expect_version": 6})
	startViewOn(t, dir, strings.TrimPrefix(base, "http://"))
	seen(ctx, t, "Written while the page's server was down", time.Now(), "a write while the page's server was down")
	start = time.Now()
	agent.write(map[string]any{"uri": "research/cache", "digest": "Written after the page's server restarted",
		"body": "The LRU is fine now.\n", "expect_version": 7})
	seen(ctx, t, "Written after the page's server restarted", start, "a write after the server restarted")
}

// clickLive clicks the element sel finds, again when the page swapped it
// for a fresh one between finding and clicking it (a live update puts a
// new #main in place when the board moves): a person's click lands on
// the new one.
func clickLive(sel string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for try := 1; ; try++ {
			v, err := chromedp.Click(chromedp.CSS(sel))(ctx, tg)
			if err == nil || try == 5 || !strings.Contains(err.Error(), "Could not find node with given id") {
				return v, err
			}
		}
	}
}

// seen waits until the open page shows text, at most 2 s after start.
func seen(ctx context.Context, t *testing.T, text string, start time.Time, what string) {
	t.Helper()
	for {
		main, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#main`)))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(main, text) {
			t.Logf("%s showed on the open page after %v", what, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("%s: the open page does not show %q after 2 s:\n%s", what, text, main)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// browserFor starts headless Chromium for a test, or skips the test when
// none is installed (.ci/run installs it and requires it).
func browserFor(t *testing.T) context.Context {
	t.Helper()
	browser := findBrowser()
	if browser == "" {
		if os.Getenv("BLACKBOARD_REQUIRE_BROWSER") == "1" {
			t.Fatal("no chromium installed, and BLACKBOARD_REQUIRE_BROWSER=1")
		}
		t.Skip("no chromium installed (.ci/run installs it)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.WindowSize(1200, 900), chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	// The browser lives as long as the context of its first action: no
	// timeout on that one.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return bctx
}

func findBrowser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}
