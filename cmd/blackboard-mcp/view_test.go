package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
)

// TestViewShowsTheBoardLive: `view` serves the page on loopback and prints
// its URL; a write through MCP from another process and a person's save
// reach an open page's event stream within a second or two, and the page
// then shows the new digest.
func TestViewShowsTheBoardLive(t *testing.T) {
	dir := newWorkspaceDir(t)
	agent := startServer(t, serverOpts{dir: dir, agent: "writer"})
	agent.write(map[string]any{"uri": "research/cache", "digest": "first finding", "body": "x", "expect_version": 0})

	base := startView(t, dir)
	page := func(path string) string {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if p := page("/"); !strings.Contains(p, "first finding") {
		t.Fatalf("the board's page:\n%s", p)
	}
	resp, err := http.Get(base + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 8)
	go func() {
		s := bufio.NewScanner(resp.Body)
		for s.Scan() {
			if s.Text() == "event: moved" {
				events <- "moved"
			}
		}
	}()
	waitMoved := func(what string, start time.Time) {
		t.Helper()
		select {
		case <-events:
			t.Logf("%s reached the open page's stream after %v", what, time.Since(start).Round(time.Millisecond))
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no event within 2 s", what)
		}
	}
	time.Sleep(300 * time.Millisecond) // the stream has looked once
	start := time.Now()
	agent.write(map[string]any{"uri": "research/cache", "digest": "second finding", "body": "y", "expect_version": 1})
	waitMoved("a write through MCP", start)
	if p := page("/t/research"); !strings.Contains(p, "second finding") {
		t.Fatalf("the topic's page after the write:\n%s", p)
	}
	start = time.Now()
	note := filepath.Join(dir, "research", "cache.md")
	b, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(note, []byte(strings.Replace(string(b), "second finding", "a person's finding", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitMoved("a person's save", start)
	if p := page("/n/research/cache"); !strings.Contains(p, "a person&#39;s finding") {
		t.Fatalf("the note's page after the save:\n%s", p)
	}
}

// TestViewThroughTheEngine: `view` has the board's engine make the page,
// starting one when none runs, and keeps it while the page is served: a
// note an agent writes shows, a request naming another Host is refused, a
// killed engine is followed by a new one under the page, and the engine
// leaves once the view is gone.
func TestViewThroughTheEngine(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runCLI(t, dir, "init")
	base, stop := startViewOn(t, dir, "127.0.0.1:0")
	first := enginePID(t, dir)
	if first == 0 {
		t.Fatal("view started no engine")
	}
	agent := startMCPGo(t, dir, "writer")
	agent.write(map[string]any{"uri": "research/cache", "digest": "first finding", "body": "x", "expect_version": 0})
	get := func(path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, p := get("/n/research/cache", ""); code != http.StatusOK || !strings.Contains(p, "first finding") {
		t.Fatalf("the note's page through the engine: %d\n%s", code, p)
	}
	if code, _ := get("/", "rebound.example:80"); code != http.StatusForbidden {
		t.Errorf("a request for another Host: %d, want 403", code)
	}
	agent.closeClean()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second := newEngine(t, dir, first)
	if code, p := get("/n/research/cache", ""); code != http.StatusOK || !strings.Contains(p, "first finding") {
		t.Fatalf("the note's page after its engine was killed: %d\n%s", code, p)
	}
	if place, _ := engine.Locate(dir); !strings.Contains(readFileString(place.Log), "engine serves the board") {
		t.Errorf("the engine's log does not say it serves the board:\n%s", tail(readFileString(place.Log)))
	}
	stop()
	engineStopped(t, dir)
	t.Logf("engines %d, then %d, made the page", first, second)
}

// startView runs `view` on dir on a free loopback port until the test ends
// and returns the page's URL (without the final /), as it printed it.
func startView(t *testing.T, dir string) string {
	t.Helper()
	base, _ := startViewOn(t, dir, "127.0.0.1:0")
	return base
}

// startViewOn runs `view` on dir at addr until stop is called or the test
// ends, with env added to its environment, and returns the page's URL
// (without the final /), as it printed it.
func startViewOn(t *testing.T, dir, addr string, env ...string) (base string, stop func()) {
	t.Helper()
	view := cliCommand(dir, "view", "--http", addr)
	view.Env = append(view.Env, env...)
	out, err := view.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := view.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { _ = view.Process.Kill(); _ = view.Wait() }) }
	t.Cleanup(stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "http://127.0.0.1:") {
		t.Fatalf("view printed %q: %v", line, err)
	}
	return strings.TrimSuffix(strings.TrimSpace(line), "/"), stop
}
