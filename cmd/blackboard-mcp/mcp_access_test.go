package main

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// accessBoard is a board with three topics and two agents: alice reads and
// writes research, reads ops; bob reads and writes ops only. secret is
// nobody's but the operator's (open-mode writes made before access control).
func accessBoard(t *testing.T) (dir, alice, bob string) {
	t.Helper()
	dir = newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	s := startMCPGo(t, dir, "operator")
	s.write(map[string]any{"uri": "secret/plan", "digest": "Acquisition of Zanzibar Corp", "body": "zanzibar terms", "expect_version": 0})
	s.write(map[string]any{"uri": "research/cache", "digest": "Cache findings", "body": "see zanzibar", "expect_version": 0,
		"sources": []string{"secret/plan"}})
	s.write(map[string]any{"uri": "ops/deploy", "digest": "Deploy runbook", "body": "steps", "expect_version": 0})
	s.link("secret/plan", "supersedes", "research/cache")
	s.link("secret/plan", "contradicts", "ops/deploy")
	s.link("research/cache", "cites", "secret/plan")
	s.closeClean()
	alice = tokenAdd(t, dir, "alice", "--read", "ops", "--write", "research")
	bob = tokenAdd(t, dir, "bob", "--write", "ops")
	return dir, alice, bob
}

func tokenAdd(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(testBinary, append([]string{"token", "add", name, "--dir", dir}, args...)...)
	cmd.Env = mcpEnv("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("token add %s: %v\n%s", name, err, stderr.String())
	}
	token := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(token, "bb_") || strings.Contains(token, "\n") {
		t.Fatalf("token add printed %q on stdout; want the token alone", stdout.String())
	}
	return token
}

// TestAccessScopesEveryTool: each tool sees only the caller's topics, and
// nothing (results, counts, links, backlinks, errors) tells that a hidden
// note exists.
func TestAccessScopesEveryTool(t *testing.T) {
	dir, alice, bob := accessBoard(t)
	if st := fixtures.GitOutput(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after token add: %s", st)
	}
	if got := fixtures.GitOutput(t, dir, "log", "-2", "--format=%an %s"); !strings.Contains(got, "Ada Person token add bob") {
		t.Errorf("token add is not a commit by the person: %q", got)
	}
	a := startServer(t, serverOpts{dir: dir, token: alice})

	// get_state: the hidden note looks exactly like a missing one.
	env := a.get([]string{"secret/plan", "secret/none", "research/cache", "ops/deploy"}, "", 0)
	if env.Items[0].Error != "not_found" || env.Items[1].Error != "not_found" {
		t.Errorf("hidden and missing notes differ: %+v %+v", env.Items[0], env.Items[1])
	}
	if len(env.Items[2].SupersededBy) != 0 || len(env.Items[3].ContradictedBy) != 0 {
		t.Errorf("backlinks from a hidden note are shown: %+v %+v", env.Items[2], env.Items[3])
	}
	full := a.ok("get_state", map[string]any{"uris": []string{"research/cache"}, "mode": "fields"})
	if strings.Contains(full, "secret") {
		t.Errorf("fields of a readable note name a hidden one: %s", full)
	}
	// list_keys: only research and ops, counted as such.
	list := a.ok("list_keys", map[string]any{"mode": "ref"})
	if strings.Contains(list, "secret") || !strings.Contains(list, "research/cache") || !strings.Contains(list, "ops/deploy") {
		t.Errorf("listing: %s", list)
	}
	if got := a.ok("list_keys", map[string]any{"topic": "secret"}); !strings.Contains(got, `"items":[]`) || !strings.Contains(got, `"omitted":0`) {
		t.Errorf("listing a hidden topic: %s", got)
	}
	// search_keys: the hidden note's words find nothing; its link does not
	// demote the note it supersedes.
	if got := a.ok("search_keys", map[string]any{"q": "acquisition"}); strings.Contains(got, "secret") {
		t.Errorf("search found a hidden note: %s", got)
	}
	// Writes: forbidden outside the write topics, even where it may read.
	if msg := a.fail("update_state", map[string]any{"uri": "ops/deploy", "digest": "x", "body": "x", "expect_version": 1}, "forbidden"); strings.Contains(msg, "Deploy") {
		t.Errorf("forbidden message shows content: %s", msg)
	}
	a.fail("update_state", map[string]any{"uri": "secret/plan", "digest": "x", "body": "x", "expect_version": 0}, "forbidden")
	a.fail("link_state", map[string]any{"src": "ops/deploy", "rel": "cites", "dst": []string{"research/cache"}}, "forbidden")
	w := a.write(map[string]any{"uri": "research/new", "digest": "mine", "body": "x", "expect_version": 0, "sources": []string{"secret/plan"}})
	if len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0], "does not exist") {
		t.Errorf("a hidden source should read as missing: %v", w.Warnings)
	}
	l := a.link("research/new", "cites", "secret/plan")
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "does not exist") {
		t.Errorf("a hidden link target should read as missing: %v", l.Warnings)
	}
	a.closeClean()
	if got := fixtures.GitOutput(t, dir, "log", "-1", "--format=%an"); strings.TrimSpace(got) != "alice" {
		t.Errorf("alice's link is authored by %q", got)
	}

	b := startServer(t, serverOpts{dir: dir, token: bob})
	if env := b.get([]string{"research/cache"}, "", 0); env.Items[0].Error != "not_found" {
		t.Errorf("bob reads research: %+v", env.Items[0])
	}
	b.write(map[string]any{"uri": "ops/deploy", "digest": "Deploy runbook v2", "body": "steps", "expect_version": 1})
	b.closeClean()
	checkWorkspace(t, dir)
}

// TestAccessRefusesBadTokens: with an access file, a stdio server needs a
// known token; a revoked one stops working.
func TestAccessRefusesBadTokens(t *testing.T) {
	dir, alice, _ := accessBoard(t)
	for name, token := range map[string]string{"missing": "", "unknown": "bb_not-a-real-token", "prefix": alice[:10]} {
		cmd := exec.Command(testBinary, serveArgs(dir)...)
		cmd.Env = append(mcpEnv(""), "BLACKBOARD_TOKEN="+token)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil || stdout.Len() != 0 || !strings.Contains(stderr.String(), "BLACKBOARD_TOKEN") {
			t.Errorf("%s token: exit %v, stdout %q, stderr %q; want a refusal on stderr", name, err, stdout.String(), stderr.String())
		}
	}
	runBinaryEnv(t, "token", "revoke", "alice", "--dir", dir)
	cmd := exec.Command(testBinary, serveArgs(dir)...)
	cmd.Env = append(mcpEnv(""), "BLACKBOARD_TOKEN="+alice)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Errorf("a revoked token still serves: %s", out)
	}
	if got := runBinaryEnv(t, "token", "list", "--dir", dir); strings.Contains(got, "alice") || !strings.Contains(got, "bob") {
		t.Errorf("token list after revoke: %q", got)
	}
}

// TestAccessHTTPBearer: over HTTP, a request without a known bearer token
// is 401; with one, the agent's scope applies.
func TestAccessHTTPBearer(t *testing.T) {
	dir, alice, _ := accessBoard(t)
	s := startHTTP(t, serverOpts{dir: dir})
	post := func(token string) int {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for post("") == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := post(""); got != http.StatusUnauthorized {
		t.Errorf("no token: status %d, want 401", got)
	}
	if got := post("bb_wrong"); got != http.StatusUnauthorized {
		t.Errorf("unknown token: status %d, want 401", got)
	}
	if got := post(alice); got != http.StatusOK {
		t.Errorf("alice's token: status %d, want 200", got)
	}
}
