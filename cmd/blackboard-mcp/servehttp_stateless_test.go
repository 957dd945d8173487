package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessClient connects mcp-go's streamable HTTP client in the
// stateless revision (2026-07-28: no initialize, no session, the version
// and the token on every request) as a session of the e2e helpers, with the
// agent's token.
func (s *httpServe) statelessClient(t *testing.T, token string) (*session, *client.Client) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(s.url, transport.WithHTTPBasicClient(s.client), quiet,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20260728))
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start mcp-go HTTP client: %v", err)
	}
	sess := &session{t: t, conn: &conn{dir: s.dir, client: "mcp-go-http-stateless", stderr: s.stderr, stop: c.Close}}
	t.Cleanup(func() { _ = sess.close() })
	ctx, cancel := contextWithTimeout()
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-mcp-go-stateless", Version: "1.0.0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("mcp-go stateless connect: %v\nserver log:\n%s", err, s.stderr.String())
	}
	if v := c.ProtocolVersion(); v != mcp.ProtocolVersion20260728 {
		t.Fatalf("mcp-go speaks %q with the server; want %s", v, mcp.ProtocolVersion20260728)
	}
	bindMCPGo(sess, c)
	return sess, c
}

// The stateless revision over HTTP: a client that speaks only 2026-07-28
// (mcp-go's, which discovers the server instead of initializing) drives
// the five tools with a token that reads one topic and writes another,
// reads notes and past versions as resources, and hears on its
// subscriptions/listen stream of another agent's write, made by a client
// of the pinned revision, with a session, on the same server at the same
// time. Raw requests check what the revision says a server refuses.
func TestHTTPStatelessProtocol(t *testing.T) {
	t.Parallel()
	dir, alice, _ := accessBoard(t) // alice reads ops and writes research
	s := startHTTP(t, serverOpts{dir: dir})
	asAlice := []string{"Authorization", "Bearer " + alice}
	modern := func(method string, extra ...string) []string {
		return append(slices.Clone(asAlice), append([]string{"MCP-Protocol-Version", mcp.ProtocolVersion20260728, "Mcp-Method", method}, extra...)...)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"e2e-raw","version":"1.0.0"}}`

	// server/discover, as the revision's first request: served without a
	// session, and none is made.
	d := s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+meta+`}}`, modern("server/discover")...)
	if m := d.rpc(t, "server/discover"); d.status != http.StatusOK || m.Error != nil ||
		!strings.Contains(string(m.Result), `"2026-07-28"`) || !strings.Contains(string(m.Result), `"blackboard-mcp"`) {
		t.Fatalf("server/discover: status %d %s", d.status, d.body)
	}
	if sid := d.header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("server/discover made a session %q", sid)
	}

	a, ac := s.statelessClient(t, alice)
	// The five tools, as alice.
	if w := a.write(map[string]any{"uri": "research/stateless", "digest": "Written without a session", "body": "x", "expect_version": 0}); w.Version != 1 {
		t.Fatalf("update_state: version %d", w.Version)
	}
	got := a.get([]string{"research/stateless", "ops/deploy", "secret/plan"}, "ref", 0)
	if len(got.Items) != 3 || got.Items[0].Version != 1 || got.Items[1].Version != 1 || got.Items[2].Error == "" {
		t.Errorf("get_state as alice: %+v; want her note and ops/deploy, and secret/plan refused", got.Items)
	}
	if res := a.call("list_keys", map[string]any{"topic": "research", "mode": "ref"}); !strings.Contains(res.text, "research/stateless") {
		t.Errorf("list_keys: %s", res.text)
	}
	if res := a.call("search_keys", map[string]any{"q": "written without a session"}); !strings.Contains(res.text, "research/stateless") {
		t.Errorf("search_keys: %s", res.text)
	}
	if l := a.link("research/stateless", "cites", "ops/deploy"); l.Version != 2 {
		t.Errorf("link_state: version %d; want 2", l.Version)
	}
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if res, err := a.callTool(ctx, "update_state", map[string]any{"uri": "ops/deploy", "digest": "not hers", "body": "x"}); err != nil || !res.isError {
		t.Errorf("alice writes ops/deploy: %v %s; want it refused", err, res.text)
	}

	// Resources: the note, and its first version by address.
	for uri, want := range map[string]string{"bb://acme/research/stateless": "version: 2", "bb://acme/research/stateless@1": "version: 1"} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		res, err := ac.ReadResource(ctx, req)
		if err != nil || len(res.Contents) != 1 {
			t.Errorf("resources/read %s: %v %+v", uri, err, res)
			continue
		}
		if text, ok := res.Contents[0].(mcp.TextResourceContents); !ok || !strings.Contains(text.Text, want) {
			t.Errorf("resources/read %s: %+v; want it to say %q", uri, res.Contents[0], want)
		}
	}

	// How long each answer may be kept: the tools as long as the server
	// runs unchanged (ten minutes), a note not without asking again, a past
	// version a day, and only by the caller.
	for _, c := range []struct {
		method, name, params string
		ttl                  int64
		scope                mcp.CacheScope
	}{
		{"tools/list", "", `{` + meta + `}`, 600000, mcp.CacheScopePublic},
		{"resources/read", "bb://acme/research/stateless", `{"uri":"bb://acme/research/stateless",` + meta + `}`, 0, mcp.CacheScopePrivate},
		{"resources/read", "bb://acme/research/stateless@1", `{"uri":"bb://acme/research/stateless@1",` + meta + `}`, 86400000, mcp.CacheScopePrivate},
	} {
		h := modern(c.method)
		if c.name != "" {
			h = modern(c.method, "Mcp-Name", c.name)
		}
		ans := s.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"`+c.method+`","params":`+c.params+`}`, h...)
		var r struct {
			Result struct {
				TTL   *int64         `json:"ttlMs"`
				Scope mcp.CacheScope `json:"cacheScope"`
			} `json:"result"`
		}
		if err := json.Unmarshal(ans.body, &r); err != nil || r.Result.TTL == nil || *r.Result.TTL != c.ttl || r.Result.Scope != c.scope {
			t.Errorf("%s %s: %s; want ttlMs %d, cacheScope %s", c.method, c.name, ans.body, c.ttl, c.scope)
		}
	}

	// A listen stream hears of a write by a client of the pinned revision,
	// with a session, on the same server.
	updated := make(chan string, 16)
	ac.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationResourceUpdated) {
			updated <- fmt.Sprint(n.Params.AdditionalFields["uri"])
		}
	})
	stop, err := ac.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{"bb://acme/research/stateless"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	time.Sleep(200 * time.Millisecond) // the stream is open
	legacy, tr := s.mcpGoHTTP(t, true, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + alice}))
	if tr.GetSessionId() == "" {
		t.Error("the pinned client has no session")
	}
	legacy.write(map[string]any{"uri": "research/stateless", "digest": "Written in a session", "body": "y", "expect_version": 2})
	select {
	case uri := <-updated:
		if uri != "bb://acme/research/stateless" {
			t.Errorf("resources/updated for %q", uri)
		}
	case <-time.After(notifySoon):
		t.Fatalf("the listen stream heard nothing within %s\nserver log:\n%s", notifySoon, s.stderr.String())
	}

	// What the revision refuses: a method or name header that does not
	// match the body, a missing name, versions that disagree; no token;
	// GET and DELETE, which it has no more.
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_keys","arguments":{},` + meta + `}}`
	s.do(http.MethodPost, call, modern("tools/list", "Mcp-Name", "list_keys")...).
		wantRPCError(t, "Mcp-Method unlike the body", http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Method")
	s.do(http.MethodPost, call, modern("tools/call", "Mcp-Name", "get_state")...).
		wantRPCError(t, "Mcp-Name unlike the body", http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Name")
	s.do(http.MethodPost, call, modern("tools/call")...).
		wantRPCError(t, "no Mcp-Name", http.StatusBadRequest, mcp.HEADER_MISMATCH, "Mcp-Name")
	older := strings.Replace(call, "2026-07-28", "2025-11-25", 1)
	s.do(http.MethodPost, older, modern("tools/call", "Mcp-Name", "list_keys")...).
		wantRPCError(t, "versions that disagree", http.StatusBadRequest, mcp.HEADER_MISMATCH, "does not match")
	s.do(http.MethodPost, call, "MCP-Protocol-Version", mcp.ProtocolVersion20260728, "Mcp-Method", "tools/call", "Mcp-Name", "list_keys").
		wantRPCError(t, "no token", http.StatusUnauthorized, -32000, "bearer token")
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		if a := s.do(method, "", modern("")...); a.status != http.StatusMethodNotAllowed {
			t.Errorf("%s under 2026-07-28: status %d %s; want 405", method, a.status, a.body)
		}
	}
	ok := s.do(http.MethodPost, call, modern("tools/call", "Mcp-Name", "list_keys")...)
	var res struct {
		Result *mcp.CallToolResult `json:"result"`
	}
	if ok.status != http.StatusOK || json.Unmarshal(ok.body, &res) != nil || res.Result == nil || res.Result.IsError {
		t.Errorf("a raw tools/call with every header right: status %d %s", ok.status, ok.body)
	}
}

// The official Go SDK's client in the stateless revision (it discovers the
// server instead of initializing), over HTTP with a token and over stdio:
// the five tools answer it as they answer the older revisions.
func TestStatelessProtocolOfficialGoSDK(t *testing.T) {
	t.Parallel()
	dir, alice, _ := accessBoard(t)
	s := startHTTP(t, serverOpts{dir: dir})
	hc := &http.Client{Transport: headerTransport{base: s.client.Transport, header: []string{"Authorization", "Bearer " + alice}}}
	args, env := serverOpts{dir: dir, agent: "alice", token: alice}.launch(t)
	stdio := exec.Command(testBinary, args...)
	stdio.Env = env
	for _, c := range []struct {
		name string
		tr   sdk.Transport
	}{
		{"http", &sdk.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}},
		{"stdio", &sdk.CommandTransport{Command: stdio}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := contextWithTimeout()
			defer cancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-go-sdk-stateless", Version: "1.0.0"}, nil).
				Connect(ctx, c.tr, &sdk.ClientSessionOptions{ProtocolVersion: mcp.ProtocolVersion20260728})
			if err != nil {
				t.Fatalf("go-sdk connect in 2026-07-28 over %s: %v\nserver log:\n%s", c.name, err, s.stderr.String())
			}
			sess := &session{t: t, conn: &conn{dir: dir, client: "go-sdk-stateless-" + c.name, stderr: s.stderr, stop: cs.Close}}
			t.Cleanup(func() { _ = sess.close() })
			if v := cs.InitializeResult().ProtocolVersion; v != mcp.ProtocolVersion20260728 {
				t.Fatalf("go-sdk over %s speaks %q; want %s", c.name, v, mcp.ProtocolVersion20260728)
			}
			bindGoSDK(sess, cs)
			key := "research/sdk-" + c.name
			if w := sess.write(map[string]any{"uri": key, "digest": "Written by the official SDK over " + c.name, "body": "x", "expect_version": 0}); w.Version != 1 {
				t.Fatalf("update_state: version %d", w.Version)
			}
			if got := sess.get([]string{key, "ops/deploy"}, "ref", 0); len(got.Items) != 2 || got.Items[0].Version != 1 {
				t.Errorf("get_state: %+v", got.Items)
			}
			if res := sess.call("list_keys", map[string]any{"topic": "research", "mode": "ref"}); !strings.Contains(res.text, key) {
				t.Errorf("list_keys: %s", res.text)
			}
			if res := sess.call("search_keys", map[string]any{"q": "written by the official SDK over " + c.name}); !strings.Contains(res.text, key) {
				t.Errorf("search_keys: %s", res.text)
			}
			if l := sess.link(key, "cites", "ops/deploy"); l.Version != 2 {
				t.Errorf("link_state: version %d; want 2", l.Version)
			}
		})
	}
}
