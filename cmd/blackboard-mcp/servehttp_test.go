package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// `serve --http` as a network service sees it: the real binary in its own
// process, driven by real MCP clients (mcp-go's and the official Go SDK's
// streamable HTTP clients) and by raw HTTP requests for what a client would
// never send: foreign origins, made-up sessions, batches, oversized bodies,
// signals while a client holds the event stream.

// httpServe is one `serve --http` process.
type httpServe struct {
	t      *testing.T
	dir    string
	cmd    *exec.Cmd
	url    string // the endpoint, always reached on loopback
	stderr *lockedBuffer
	client *http.Client
	exited chan struct{}
}

// servingURL finds the endpoint in the server's "serving" log line.
var servingURL = regexp.MustCompile(`msg="serving over streamable HTTP".* url=(\S+)`)

// startHTTP starts `serve` as o says, over HTTP (--http 127.0.0.1:0 unless
// o.flags name an address), and waits for it to say where it serves; the
// server is sent SIGTERM (and killed after 10 s) when the test ends.
func startHTTP(t *testing.T, o serverOpts) *httpServe {
	t.Helper()
	if !slices.Contains(o.flags, "--http") {
		o.flags = append([]string{"--http", "127.0.0.1:0"}, o.flags...)
	}
	args, env := o.launch(t)
	flags := args[1:]
	s := &httpServe{t: t, dir: o.dir, stderr: &lockedBuffer{}, exited: make(chan struct{}), client: &http.Client{}}
	s.cmd = exec.Command(testBinary, args...)
	s.cmd.Env = env
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	deadline := time.After(30 * time.Second)
	for {
		if m := servingURL.FindStringSubmatch(s.stderr.String()); m != nil {
			u, err := url.Parse(m[1])
			if err != nil {
				t.Fatalf("serving at %q: %v", m[1], err)
			}
			// An address of every interface is reached on loopback.
			u.Host = net.JoinHostPort("127.0.0.1", u.Port())
			s.url = u.String()
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("serve %s exited before serving: %v\n%s", strings.Join(flags, " "), s.cmd.ProcessState, s.stderr.String())
		case <-deadline:
			t.Fatalf("serve %s did not say it serves within 30 s\n%s", strings.Join(flags, " "), s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// httpAnswer is one HTTP response, read whole.
type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

// do sends one request with headers (key, value pairs); a POST is JSON and
// accepts JSON or an event stream, as clients send it.
func (s *httpServe) do(method, body string, header ...string) httpAnswer {
	s.t.Helper()
	return s.doReader(method, strings.NewReader(body), header...)
}

func (s *httpServe) doReader(method string, body io.Reader, header ...string) httpAnswer {
	s.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.url, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "Host") {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v\nserver log:\n%s", method, s.url, err, s.stderr.String())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the answer: %v", method, s.url, err)
	}
	return httpAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// rpc decodes the answer as one JSON-RPC message.
func (a httpAnswer) rpc(t *testing.T, what string) rpcResponse {
	t.Helper()
	if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q; want application/json (body %q)", what, ct, a.body)
	}
	m, err := parseRPCLine(string(a.body))
	if err != nil {
		t.Errorf("%s: %v", what, err)
	}
	return m
}

// wantRPCError checks that the answer has the HTTP status and is a JSON-RPC
// error with code, whose message says says.
func (a httpAnswer) wantRPCError(t *testing.T, what string, status, code int, says string) {
	t.Helper()
	if a.status != status {
		t.Errorf("%s: status %d; want %d (body %q)", what, a.status, status, a.body)
	}
	m := a.rpc(t, what)
	if m.Error == nil || m.Error.Code != code || !strings.Contains(m.Error.Message, says) {
		t.Errorf("%s: %s; want a JSON-RPC error %d saying %q", what, a.body, code, says)
	}
}

func initializeBody(version string) string {
	return `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"e2e-http","version":"1.0.0"}}}`
}

// initialize makes the handshake at a protocol version and returns the
// session id.
func (s *httpServe) initialize(version string, header ...string) string {
	s.t.Helper()
	a := s.do(http.MethodPost, initializeBody(version), header...)
	m := a.rpc(s.t, "initialize")
	sid := a.header.Get("Mcp-Session-Id")
	if a.status != http.StatusOK || m.Error != nil || sid == "" {
		s.t.Fatalf("initialize: status %d, session %q, %s\nserver log:\n%s", a.status, sid, a.body, s.stderr.String())
	}
	header = append(header, "Mcp-Session-Id", sid, "MCP-Protocol-Version", version)
	if n := s.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, header...); n.status != http.StatusAccepted {
		s.t.Fatalf("notifications/initialized: status %d %s", n.status, n.body)
	}
	return sid
}

// stream opens a session's event stream and returns its body once the
// server answered 200; the stream ends with the test.
func (s *httpServe) stream(sid string, header ...string) io.ReadCloser {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s.t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("GET event stream: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		s.t.Fatalf("GET event stream: status %d %q, %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return resp.Body
}

// ended reports whether an event stream reaches its end within d.
func ended(body io.Reader, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, body)
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// listening has mcp-go's client open the event stream after initialize, as
// SDK clients do. (It is deprecated for the stateless protocol of
// 2026-07-28, which has no such stream.)
var listening = transport.WithContinuousListening() //nolint:staticcheck // see above

// quiet keeps mcp-go's client from logging its reconnections to the test's
// output.
var quiet = transport.WithHTTPLogger(slog.New(slog.DiscardHandler))

// mcpGoHTTP connects mcp-go's streamable HTTP client to the server as a
// session of the e2e helpers; pinned keeps it on the protocol version the
// tests pin (otherwise it first probes for the stateless protocol, as
// mcp-go's client does by default).
func (s *httpServe) mcpGoHTTP(t *testing.T, pinned bool, opts ...transport.StreamableHTTPCOption) (*session, *transport.StreamableHTTP) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(s.url, append([]transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(s.client), quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var copts []client.ClientOption
	if pinned {
		copts = append(copts, client.WithProtocolVersion(protocolVersion))
	}
	c := client.NewClient(tr, copts...)
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start mcp-go HTTP client: %v", err)
	}
	sess := &session{t: t, conn: &conn{dir: s.dir, client: "mcp-go-http", stderr: s.stderr, stop: c.Close}}
	t.Cleanup(func() { _ = sess.close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-mcp-go-http", Version: "1.0.0"}
	if pinned {
		req.Params.ProtocolVersion = protocolVersion
	}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("mcp-go HTTP initialize: %v\nserver log:\n%s", err, s.stderr.String())
	}
	if res.ServerInfo.Name != "blackboard-mcp" || res.Capabilities.Tools == nil {
		t.Fatalf("mcp-go HTTP initialize: %+v", res)
	}
	bindMCPGo(sess, c)
	return sess, tr
}

// mcpGoHTTPInit only tries mcp-go's handshake, for a server that must refuse.
func (s *httpServe) mcpGoHTTPInit(opts ...transport.StreamableHTTPCOption) error {
	tr, err := transport.NewStreamableHTTP(s.url, append([]transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(s.client), quiet}, opts...)...)
	if err != nil {
		return err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(protocolVersion))
	defer c.Close()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return err
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-mcp-go-http", Version: "1.0.0"}
	_, err = c.Initialize(ctx, req)
	return err
}

// goSDKHTTP connects the official Go SDK's streamable HTTP client (which
// opens the event stream after initialize) as a session of the e2e helpers.
func (s *httpServe) goSDKHTTP(t *testing.T, header ...string) *session {
	t.Helper()
	hc := s.client
	if len(header) > 0 {
		hc = &http.Client{Transport: headerTransport{base: s.client.Transport, header: header}}
	}
	ctx, cancel := contextWithTimeout()
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "e2e-go-sdk-http", Version: "1.0.0"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("go-sdk HTTP connect: %v\nserver log:\n%s", err, s.stderr.String())
	}
	sess := &session{t: t, conn: &conn{dir: s.dir, client: "go-sdk-http", stderr: s.stderr, stop: cs.Close}}
	t.Cleanup(func() { _ = sess.close() })
	bindGoSDK(sess, cs)
	return sess
}

// headerTransport adds headers (key, value pairs) to every request.
type headerTransport struct {
	base   http.RoundTripper
	header []string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for i := 0; i+1 < len(h.header); i += 2 {
		r.Header.Set(h.header[i], h.header[i+1])
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// TestHTTPOrigin: a browser page of a foreign origin gets 403 before
// anything else happens (DNS rebinding); clients that send no Origin, pages
// of this machine and origins allowed by --allow-origin are served.
func TestHTTPOrigin(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, serverOpts{dir: newWorkspaceDir(t), agent: "origin"})
	u, _ := url.Parse(s.url)
	port := u.Port()

	for _, origin := range []string{"http://evil.example", "https://evil.example:" + port, "null", "http://127.0.0.1.evil.example:" + port} {
		a := s.do(http.MethodPost, initializeBody(protocolVersion), "Origin", origin)
		a.wantRPCError(t, "initialize from Origin "+origin, http.StatusForbidden, -32000, "Origin")
		if sid := a.header.Get("Mcp-Session-Id"); sid != "" {
			t.Errorf("initialize from Origin %s started session %q", origin, sid)
		}
	}
	// The loopback Host check stays: a name that is not this machine's,
	// reached on loopback, is a rebinding.
	s.do(http.MethodPost, initializeBody(protocolVersion), "Host", "evil.example:"+port).
		wantRPCError(t, "initialize with Host evil.example", http.StatusForbidden, -32000, "Host")

	// No Origin (every non-browser client), this machine's pages, the
	// server's own origin: served.
	for _, origin := range []string{"", "http://127.0.0.1:" + port, "http://localhost:5173", "http://[::1]:3000"} {
		a := s.do(http.MethodPost, initializeBody(protocolVersion), "Origin", origin)
		if a.status != http.StatusOK || a.header.Get("Mcp-Session-Id") == "" {
			t.Errorf("initialize from Origin %q: status %d %s; want 200 and a session", origin, a.status, a.body)
		}
	}

	// A session does not make a foreign origin welcome: its event stream,
	// its calls and its end are refused, and the session lives on.
	sid := s.initialize(protocolVersion)
	evil := []string{"Origin", "http://evil.example", "Mcp-Session-Id", sid}
	s.do(http.MethodGet, "", evil...).wantRPCError(t, "GET from a foreign origin", http.StatusForbidden, -32000, "Origin")
	s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, evil...).
		wantRPCError(t, "tools/list from a foreign origin", http.StatusForbidden, -32000, "Origin")
	s.do(http.MethodDelete, "", evil...).wantRPCError(t, "DELETE from a foreign origin", http.StatusForbidden, -32000, "Origin")
	if a := s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", sid); a.status != http.StatusOK {
		t.Errorf("the session after a foreign origin's DELETE: status %d %s", a.status, a.body)
	}

	// A real client: refused with a foreign Origin, served without one.
	if err := s.mcpGoHTTPInit(transport.WithHTTPHeaders(map[string]string{"Origin": "http://evil.example"})); err == nil {
		t.Error("mcp-go initialize from Origin http://evil.example succeeded")
	}
	c, _ := s.mcpGoHTTP(t, true)
	c.write(map[string]any{"uri": "origin/ok", "digest": "served without an Origin", "body": "x", "expect_version": 0})

	// --allow-origin names an origin a browser app is served from: CORS
	// preflights are answered for it, and other origins stay refused.
	app := startHTTP(t, serverOpts{dir: newWorkspaceDir(t), agent: "origin", flags: []string{"--allow-origin", "https://app.example.com"}})
	a := app.do(http.MethodPost, initializeBody(protocolVersion), "Origin", "https://app.example.com")
	if a.status != http.StatusOK || a.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("initialize from the allowed origin: status %d, Access-Control-Allow-Origin %q, %s",
			a.status, a.header.Get("Access-Control-Allow-Origin"), a.body)
	}
	// Origins compare as browsers serialize them: case and default port aside.
	if a := app.do(http.MethodPost, initializeBody(protocolVersion), "Origin", "https://APP.example.com:443"); a.status != http.StatusOK {
		t.Errorf("initialize from the allowed origin spelled otherwise: status %d %s", a.status, a.body)
	}
	pre := app.do(http.MethodOptions, "", "Origin", "https://app.example.com", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "authorization, content-type, mcp-session-id, mcp-protocol-version")
	allowed := strings.ToLower(pre.header.Get("Access-Control-Allow-Headers"))
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(allowed, "mcp-session-id") || !strings.Contains(allowed, "mcp-protocol-version") || !strings.Contains(allowed, "authorization") {
		t.Errorf("preflight from the allowed origin: status %d, headers %v", pre.status, pre.header)
	}
	app.do(http.MethodPost, initializeBody(protocolVersion), "Origin", "https://other.example.com").
		wantRPCError(t, "initialize from an origin not allowed", http.StatusForbidden, -32000, "--allow-origin")
	ac, _ := app.mcpGoHTTP(t, true, transport.WithHTTPHeaders(map[string]string{"Origin": "https://app.example.com"}))
	ac.write(map[string]any{"uri": "origin/app", "digest": "served to the allowed origin", "body": "x", "expect_version": 0})
}

// TestHTTPSessions: a session is what initialize started and nothing ended:
// a request that needs one and has none gets 400, an unknown or ended one
// 404, DELETE ends it (and its event stream), and a new initialize starts
// a new one. Session ids are random; no call runs under a made-up one.
func TestHTTPSessions(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, serverOpts{dir: newWorkspaceDir(t), agent: "sessions"})
	write := func(key string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"update_state","arguments":{"uri":"` + key +
			`","digest":"written","body":"x","expect_version":0}}}`
	}

	// Before initialize: ping only.
	s.do(http.MethodPost, write("sessions/none")).wantRPCError(t, "tools/call without a session", http.StatusBadRequest, -32000, "initialize")
	s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`).wantRPCError(t, "tools/list without a session", http.StatusBadRequest, -32000, "initialize")
	s.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).wantRPCError(t, "a notification without a session", http.StatusBadRequest, -32000, "session")
	s.do(http.MethodGet, "").wantRPCError(t, "GET without a session", http.StatusBadRequest, -32000, "session")
	s.do(http.MethodDelete, "").wantRPCError(t, "DELETE without a session", http.StatusBadRequest, -32000, "session")
	if m := s.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"ping"}`).rpc(t, "ping without a session"); m.Error != nil || string(m.ID) != "5" {
		t.Errorf("ping without a session: %+v; want an answer", m)
	}

	sid := s.initialize(protocolVersion)
	sid2 := s.initialize(protocolVersion)
	if sid == sid2 || len(sid) < 22 {
		t.Errorf("session ids %q and %q: want two different ids of at least 128 random bits", sid, sid2)
	}
	// Made-up ids: well-formed for the library, one character off a real
	// one, empty-looking: none runs anything.
	offByOne := sid[:len(sid)-1] + "A"
	if offByOne == sid {
		offByOne = sid[:len(sid)-1] + "B"
	}
	for _, fake := range []string{"mcp-session-6ba7b810-9dad-11d1-80b4-00c04fd430c8", offByOne, "x"} {
		h := []string{"Mcp-Session-Id", fake}
		s.do(http.MethodPost, write("sessions/fake"), h...).wantRPCError(t, "tools/call with made-up session "+fake, http.StatusNotFound, -32001, "initialize")
		s.do(http.MethodGet, "", h...).wantRPCError(t, "GET with made-up session", http.StatusNotFound, -32001, "session")
		s.do(http.MethodDelete, "", h...).wantRPCError(t, "DELETE with made-up session", http.StatusNotFound, -32001, "session")
	}
	if _, err := os.Stat(filepath.Join(s.dir, "sessions", "fake.md")); err == nil {
		t.Error("a tools/call under a made-up session wrote its note")
	}

	// The real session works; DELETE ends it and its event stream.
	if m := s.do(http.MethodPost, write("sessions/real"), "Mcp-Session-Id", sid).rpc(t, "tools/call in the session"); m.Error != nil {
		t.Fatalf("tools/call in the session: %+v", m.Error)
	}
	events := s.stream(sid)
	if a := s.do(http.MethodDelete, "", "Mcp-Session-Id", sid); a.status != http.StatusOK {
		t.Errorf("DELETE the session: status %d %s", a.status, a.body)
	}
	if !ended(events, 5*time.Second) {
		t.Error("the session's event stream is still open 5 s after DELETE")
	}
	s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", sid).
		wantRPCError(t, "tools/list after DELETE", http.StatusNotFound, -32001, "session")
	s.do(http.MethodGet, "", "Mcp-Session-Id", sid).wantRPCError(t, "GET after DELETE", http.StatusNotFound, -32001, "session")
	s.do(http.MethodDelete, "", "Mcp-Session-Id", sid).wantRPCError(t, "DELETE twice", http.StatusNotFound, -32001, "session")
	// The other session is untouched, and a new initialize starts over.
	if a := s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", sid2); a.status != http.StatusOK {
		t.Errorf("the other session after DELETE: status %d %s", a.status, a.body)
	}
	sid3 := s.initialize(protocolVersion, "Mcp-Session-Id", sid)
	if sid3 == sid || sid3 == sid2 {
		t.Errorf("initialize after DELETE gave session %q again", sid3)
	}

	// Real clients: mcp-go's (pinned, and as it comes: with the event
	// stream it listens on, it keeps to a revision with sessions) and the
	// Go SDK's, which opens the event stream. Each ends its session on
	// close; the id is dead after.
	for _, pinned := range []bool{true, false} {
		c, tr := s.mcpGoHTTP(t, pinned, listening)
		key := "sessions/mcp-go-" + strconv.FormatBool(pinned)
		c.write(map[string]any{"uri": key, "digest": "written over HTTP", "body": "x", "expect_version": 0})
		if got := c.get([]string{key}, "ref", 0); len(got.Items) != 1 || got.Items[0].Version != 1 {
			t.Errorf("mcp-go (pinned %v) reads %+v", pinned, got.Items)
		}
		id := tr.GetSessionId()
		if err := c.close(); err != nil {
			t.Errorf("mcp-go close: %v", err)
		}
		s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Mcp-Session-Id", id).
			wantRPCError(t, "mcp-go's session after close", http.StatusNotFound, -32001, "session")
	}
	g := s.goSDKHTTP(t)
	g.write(map[string]any{"uri": "sessions/go-sdk", "digest": "written over HTTP", "body": "x", "expect_version": 0})
	if err := g.close(); err != nil {
		t.Errorf("go-sdk close: %v", err)
	}
}

// TestHTTPShutdown: SIGTERM and SIGINT stop the server within seconds while
// clients hold event streams (mcp-go's listening client and a raw GET) and
// writes are in flight, exit 0, and leave the board whole: every write
// acknowledged is committed, none is cut mid-way.
func TestHTTPShutdown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			s := startHTTP(t, serverOpts{dir: newWorkspaceDir(t), agent: "shutdown"})
			listener, _ := s.mcpGoHTTP(t, true, listening)
			listener.write(map[string]any{"uri": "shutdown/listener", "digest": "write 0", "body": "write 0", "expect_version": 0})
			events := s.stream(s.initialize(protocolVersion))

			// Writers write their own note, version after version, each
			// write naming the version it expects, until the server goes.
			const writers = 4
			acked := make([]int, writers) // the last version each writer was answered
			var mu sync.Mutex
			var wg sync.WaitGroup
			total := make(chan struct{}, 1000)
			for w := range writers {
				sid := s.initialize(protocolVersion)
				wg.Go(func() {
					for k := 0; ; k++ {
						body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"update_state","arguments":{"uri":"shutdown/w%d","digest":"write %d","body":"write %d","expect_version":%d}}}`, k, w, k, k, k)
						ctx, cancel := contextWithTimeout()
						req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Accept", "application/json, text/event-stream")
						req.Header.Set("Mcp-Session-Id", sid)
						resp, err := s.client.Do(req)
						if err != nil {
							cancel()
							return
						}
						b, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						cancel()
						var m rpcResponse
						if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &m) != nil || m.Error != nil || strings.Contains(string(m.Result), `"isError":true`) {
							return
						}
						mu.Lock()
						acked[w] = k + 1
						mu.Unlock()
						select {
						case total <- struct{}{}:
						default:
						}
					}
				})
			}
			for range 4 * writers {
				select {
				case <-total:
				case <-time.After(callTimeout):
					t.Fatalf("writers got no answers\nserver log:\n%s", s.stderr.String())
				}
			}
			start := time.Now()
			if err := s.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-s.exited:
			case <-time.After(5 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
				t.Fatalf("the server did not stop within 5 s of %v while clients held event streams\nserver log:\n%s", sig, s.stderr.String())
			}
			took := time.Since(start)
			wg.Wait()
			if code := s.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("exit status %d after %v; want 0\nserver log:\n%s", code, sig, s.stderr.String())
			}
			if !ended(events, time.Second) {
				t.Error("the raw event stream did not end")
			}
			t.Logf("stopped %s after %v with two event streams held and %v writes acknowledged", took.Round(time.Millisecond), sig, acked)

			checkWorkspace(t, s.dir)
			for w, v := range acked {
				key := fmt.Sprintf("shutdown/w%d", w)
				got := len(gitLog(t, s.dir, key+".md"))
				if got < v {
					t.Errorf("%s: version %d was acknowledged; git has %d", key, v, got)
				}
				if fm, body := readNote(t, s.dir, key); got > 0 && (fm["digest"] != fmt.Sprintf("write %d", got-1) || strings.TrimSpace(body) != fmt.Sprintf("write %d", got-1)) {
					t.Errorf("%s at version %d holds digest %q and body %q; want write %d whole", key, got, fm["digest"], body, got-1)
				}
			}
		})
	}
}

// TestHTTPExposure: a bad --http is refused before the server says it
// serves; on an address other machines reach, an open board needs
// --open-to-network, and tokens need TLS or --behind-tls-proxy; TLS serves
// HTTPS that real clients use.
func TestHTTPExposure(t *testing.T) {
	t.Parallel()
	restricted, alice, _ := accessBoard(t)
	certFile, keyFile, pool := selfSignedCert(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	for _, tc := range []struct {
		name   string
		dir    string // "" is a fresh path: no workspace yet
		flags  []string
		status int
		says   []string
	}{
		{"no port", "", []string{"--http", "nonsense"}, 2, []string{"HOST:PORT", "missing port"}},
		{"port out of range", "", []string{"--http", ":99999"}, 2, []string{"0 to 65535"}},
		{"too many colons", "", []string{"--http", "host:port:x"}, 2, []string{"HOST:PORT", "too many colons"}},
		{"port by name", "", []string{"--http", "127.0.0.1:http"}, 2, []string{"0 to 65535"}},
		{"cert without key", "", []string{"--http", "127.0.0.1:0", "--tls-cert", certFile}, 2, []string{"--tls-key"}},
		{"missing cert files", "", []string{"--http", "127.0.0.1:0", "--tls-cert", "missing.pem", "--tls-key", "missing.key"}, 1, []string{"missing.pem"}},
		{"origin with a path", "", []string{"--http", "127.0.0.1:0", "--allow-origin", "https://app.example.com/ui"}, 2, []string{"--allow-origin", "no path"}},
		{"origin not a URL", "", []string{"--http", "127.0.0.1:0", "--allow-origin", "app.example.com"}, 2, []string{"--allow-origin"}},
		{"HTTP flag without --http", "", []string{"--open-to-network"}, 2, []string{"--http ADDR"}},
		{"port in use", "", []string{"--http", busy.Addr().String()}, 1, []string{"address already in use", "--http"}},
		{"open board on every interface", "", []string{"--http", "0.0.0.0:0"}, 1, []string{"no access file", "token add", "127.0.0.1", "--open-to-network"}},
		{"open board on every interface, short form", "", []string{"--http", ":0"}, 1, []string{"--open-to-network"}},
		{"tokens in clear on the network", restricted, []string{"--http", "0.0.0.0:0"}, 1, []string{"in clear", "--tls-cert", "--behind-tls-proxy"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir
			if dir == "" {
				dir = newWorkspaceDir(t)
			}
			cmd := exec.Command(testBinary, serveArgs(dir, tc.flags...)...)
			cmd.Env = mcpEnv("")
			stderr := &lockedBuffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				_ = cmd.Wait() // the exit status is read from ProcessState
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("serve %s still runs after 30 s; want it refused\n%s", strings.Join(tc.flags, " "), stderr.String())
			}
			log := stderr.String()
			if got := cmd.ProcessState.ExitCode(); got != tc.status {
				t.Errorf("exit status %d; want %d\n%s", got, tc.status, log)
			}
			if strings.Contains(log, "serving over") {
				t.Errorf("the server said it serves before refusing:\n%s", log)
			}
			for _, s := range tc.says {
				if !strings.Contains(log, s) {
					t.Errorf("the refusal does not say %q:\n%s", s, log)
				}
			}
			if tc.status == 2 {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("a refused command line made the workspace %s", dir)
				}
			}
		})
	}

	t.Run("open board with --open-to-network", func(t *testing.T) {
		s := startHTTP(t, serverOpts{dir: newWorkspaceDir(t), agent: "anyone", flags: []string{"--http", "0.0.0.0:0", "--open-to-network"}})
		if !strings.Contains(s.stderr.String(), "no access file") {
			t.Errorf("serving an open board to the network without a warning:\n%s", s.stderr.String())
		}
		c, _ := s.mcpGoHTTP(t, true)
		c.write(map[string]any{"uri": "open/net", "digest": "anyone may write", "body": "x", "expect_version": 0})
	})

	t.Run("tokens behind a TLS proxy", func(t *testing.T) {
		s := startHTTP(t, serverOpts{dir: restricted, flags: []string{"--http", "0.0.0.0:0", "--behind-tls-proxy"}})
		s.do(http.MethodPost, initializeBody(protocolVersion)).wantRPCError(t, "no token", http.StatusUnauthorized, -32000, "bearer token")
		c, _ := s.mcpGoHTTP(t, true, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + alice}))
		c.write(map[string]any{"uri": "research/proxied", "digest": "through the proxy", "body": "x", "expect_version": 0})
	})

	t.Run("TLS", func(t *testing.T) {
		s := startHTTP(t, serverOpts{dir: restricted, flags: []string{"--http", "0.0.0.0:0", "--tls-cert", certFile, "--tls-key", keyFile}})
		if !strings.HasPrefix(s.url, "https://") {
			t.Fatalf("serving at %s; want https", s.url)
		}
		// Plain HTTP to the TLS port is not served.
		plain := strings.Replace(s.url, "https://", "http://", 1)
		if resp, err := http.Post(plain, "application/json", strings.NewReader(initializeBody(protocolVersion))); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Error("plain HTTP to the TLS port was served")
			}
		}
		// A client that does not trust the certificate does not connect.
		if err := s.mcpGoHTTPInit(); err == nil {
			t.Error("a client without the certificate's CA connected")
		}
		s.client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		s.do(http.MethodPost, initializeBody(protocolVersion)).wantRPCError(t, "no token over TLS", http.StatusUnauthorized, -32000, "bearer token")
		c, _ := s.mcpGoHTTP(t, true, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + alice}), listening)
		c.write(map[string]any{"uri": "research/tls", "digest": "over TLS", "body": "x", "expect_version": 0})
		c.fail("update_state", map[string]any{"uri": "ops/tls", "digest": "alice only reads ops", "body": "x", "expect_version": 0}, "forbidden")
		g := s.goSDKHTTP(t, "Authorization", "Bearer "+alice)
		if got := g.get([]string{"research/tls"}, "ref", 0); len(got.Items) != 1 || got.Items[0].Version != 1 {
			t.Errorf("the Go SDK over TLS reads %+v", got.Items)
		}
		// The page beside /mcp: its login keeps the token in a cookie sent
		// over TLS only, out of the page's scripts' reach.
		page := strings.TrimSuffix(s.url, "/mcp")
		noRedirect := *s.client
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := noRedirect.Get(page + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
			t.Errorf("the page without a token: %d to %q, want the login", resp.StatusCode, resp.Header.Get("Location"))
		}
		resp, err = noRedirect.PostForm(page+"/login", url.Values{"token": {alice}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cookies := resp.Cookies()
		if len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
			t.Fatalf("the page's login over TLS sets %+v", cookies)
		}
		req, _ := http.NewRequest(http.MethodGet, page+"/t/research", nil)
		req.AddCookie(cookies[0])
		resp, err = noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "over TLS") {
			t.Errorf("the topic's page with the cookie: %d\n%s", resp.StatusCode, body)
		}
	})
}

// selfSignedCert writes a certificate for 127.0.0.1, ::1 and localhost and
// its key, and returns a pool that trusts it.
func selfSignedCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "blackboard-mcp test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestHTTPProtocolEdges: every refusal is a JSON-RPC error with its HTTP
// status (401 with WWW-Authenticate, 413, 405, 400, 404); batches are
// answered as one array under 2025-03-26 and refused under later versions;
// a made-up tools/list cursor is a short -32602; a session is its agent's.
func TestHTTPProtocolEdges(t *testing.T) {
	t.Parallel()
	dir, alice, bob := accessBoard(t)
	s := startHTTP(t, serverOpts{dir: dir})
	asAlice := []string{"Authorization", "Bearer " + alice}

	// 401: no token, an unknown one, on every method.
	for _, h := range [][]string{nil, {"Authorization", "Bearer bb_wrong"}, {"Authorization", alice}} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			a := s.do(method, initializeBody(protocolVersion), h...)
			a.wantRPCError(t, method+" with "+strings.Join(h, " "), http.StatusUnauthorized, -32000, "bearer token")
			if !strings.Contains(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s without a known token: WWW-Authenticate %q", method, a.header.Get("WWW-Authenticate"))
			}
		}
	}
	if err := s.mcpGoHTTPInit(); err == nil {
		t.Error("mcp-go initialize without a token succeeded")
	}

	// A session is the agent's that started it: bob cannot use alice's.
	sid := s.initialize(protocolVersion, asAlice...)
	s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Authorization", "Bearer "+bob, "Mcp-Session-Id", sid).
		wantRPCError(t, "bob in alice's session", http.StatusNotFound, -32001, "session")
	inSession := append(slices.Clone(asAlice), "Mcp-Session-Id", sid, "MCP-Protocol-Version", protocolVersion)

	// 413: a body larger than a note may be, declared or streamed. Without
	// a token, 401: its body is not read.
	s.doReader(http.MethodPost, io.LimitReader(zeros{}, maxRequestBytes+1), inSession...).
		wantRPCError(t, "a body over the limit", http.StatusRequestEntityTooLarge, -32600, "too large")
	s.doReader(http.MethodPost, io.LimitReader(zeros{}, maxRequestBytes+1)).
		wantRPCError(t, "a body over the limit without a token", http.StatusUnauthorized, -32000, "bearer token")

	// 405, 400 parse error, content type: JSON-RPC too.
	s.do(http.MethodPut, "", inSession...).wantRPCError(t, "PUT", http.StatusMethodNotAllowed, -32000, "POST")
	s.do(http.MethodPost, `{"jsonrpc":"2.0",`, inSession...).wantRPCError(t, "a body that is not JSON", http.StatusBadRequest, -32700, "")
	s.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, append(slices.Clone(inSession), "Content-Type", "text/plain")...).
		wantRPCError(t, "a text/plain body", http.StatusBadRequest, -32600, "application/json")

	// A made-up cursor: a short -32602, not a decoding error.
	for _, cursor := range []string{"!!!not base64", "bm9wZQ=="} {
		m := s.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"`+cursor+`"}}`, inSession...).rpc(t, "tools/list with a cursor")
		if m.Error == nil || m.Error.Code != -32602 || len(m.Error.Message) > 80 || strings.Contains(m.Error.Message, "base64") || strings.Contains(m.Error.Message, "illegal") {
			t.Errorf("tools/list with cursor %q: %+v; want a short -32602", cursor, m.Error)
		}
	}
	c, _ := s.mcpGoHTTP(t, true, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + alice}))
	if _, err := c.listTools(context.Background()); err != nil {
		t.Errorf("mcp-go tools/list: %v", err)
	}
	// A null id is refused, not taken for a notification.
	s.do(http.MethodPost, `{"jsonrpc":"2.0","id":null,"method":"ping"}`, inSession...).wantRPCError(t, "a null id", http.StatusOK, -32600, "id")

	// Batches are not part of 2025-06-18: refused whole, nothing in them run.
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},` +
		`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"update_state","arguments":{"uri":"research/batched","digest":"in a batch","body":"x","expect_version":0}}},` +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"!!"}},` +
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_state","arguments":{"uris":["ops/deploy","secret/plan"]}}}]`
	s.do(http.MethodPost, batch, inSession...).wantRPCError(t, "a batch under 2025-06-18", http.StatusBadRequest, -32600, "2025-06-18")
	if _, err := os.Stat(filepath.Join(dir, "research", "batched.md")); err == nil {
		t.Error("a refused batch wrote its note")
	}
	s.do(http.MethodPost, batch, asAlice...).wantRPCError(t, "a batch without a session", http.StatusBadRequest, -32000, "session")

	// Under 2025-03-26 each message is answered, the answers in one array.
	old := append(slices.Clone(asAlice), "Mcp-Session-Id", s.initialize("2025-03-26", asAlice...))
	a := s.do(http.MethodPost, batch, old...)
	var answers []rpcResponse
	if a.status != http.StatusOK || json.Unmarshal(a.body, &answers) != nil {
		t.Fatalf("a batch under 2025-03-26: status %d %s; want 200 and an array", a.status, a.body)
	}
	byID := map[string]rpcResponse{}
	for _, m := range answers {
		byID[string(m.ID)] = m
	}
	if len(answers) != 4 || len(byID) != 4 {
		t.Errorf("a batch of four requests and a notification got %d answers: %s", len(answers), a.body)
	}
	if m := byID["1"]; m.Error != nil || m.Result == nil {
		t.Errorf("ping in a batch: %s", a.body)
	}
	if m := byID[`"two"`]; m.Error != nil || !strings.Contains(string(m.Result), `\"version\":1`) {
		t.Errorf("update_state in a batch: %+v %s", m.Error, m.Result)
	}
	if m := byID["3"]; m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("a made-up cursor in a batch: %+v", m.Error)
	}
	if m := byID["4"]; m.Error != nil || !strings.Contains(string(m.Result), "Deploy runbook") || strings.Contains(string(m.Result), "Zanzibar") {
		t.Errorf("get_state in a batch as alice: %s; want ops/deploy and nothing of secret/plan", m.Result)
	}
	if got := gitLog(t, dir, "research/batched.md"); len(got) != 1 || !strings.HasPrefix(got[0], "alice") {
		t.Errorf("git log of the batched write: %q; want one commit by alice", got)
	}
	if n := s.do(http.MethodPost, `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`, old...); n.status != http.StatusAccepted {
		t.Errorf("a batch of notifications: status %d %s; want 202", n.status, n.body)
	}
	s.do(http.MethodPost, `[]`, old...).wantRPCError(t, "an empty batch", http.StatusBadRequest, -32600, "empty")
	s.do(http.MethodPost, `[`+initializeBody("2025-03-26")+`]`, old...).wantRPCError(t, "initialize in a batch", http.StatusBadRequest, -32600, "initialize")

	// A batch under the stateless revision (no session) is refused whole:
	// it has no batches (TestHTTPStatelessProtocol covers the rest).
	s.do(http.MethodPost, `[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}]`,
		append(slices.Clone(asAlice), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")...).
		wantRPCError(t, "a batch under 2026-07-28", http.StatusBadRequest, -32600, "batches")
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestOriginAllowed is the Origin policy case by case.
func TestOriginAllowed(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"https://app.example.com": true}
	for _, tc := range []struct {
		origin, host string
		want         bool
	}{
		{"", "board.example.com", true}, // not a browser
		{"https://app.example.com", "board.example.com", true},
		{"HTTPS://App.Example.com:443", "board.example.com", true},
		{"https://app.example.com:8443", "board.example.com", false},
		{"http://app.example.com", "board.example.com", false},
		{"https://app.example.com/ui", "board.example.com", false},
		{"null", "127.0.0.1:8080", false},
		{"file://", "127.0.0.1:8080", false},
		{"http://localhost:5173", "127.0.0.1:8080", true}, // this machine's page, this machine's server
		{"http://[::1]:3000", "localhost:8080", true},
		{"http://localhost:5173", "10.0.0.5:8080", false}, // a page of the browser's machine, a server elsewhere
		{"http://10.0.0.5:8080", "10.0.0.5:8080", true},   // the server's own origin, at an address
		{"http://10.0.0.5", "10.0.0.5:80", true},
		{"http://[fd00::5]:8080", "[fd00::5]:8080", true},
		{"http://evil.example:8080", "evil.example:8080", false}, // a name: DNS rebinding
		{"http://evil.example", "127.0.0.1:8080", false},
		{"http://127.0.0.1.evil.example:8080", "127.0.0.1:8080", false},
	} {
		if got := originAllowed(tc.origin, tc.host, allowed); got != tc.want {
			t.Errorf("Origin %q, Host %q: allowed %v; want %v", tc.origin, tc.host, got, tc.want)
		}
	}
}

// A server keeps at most maxSessions: past that, each initialize ends the
// session used least lately that holds no event stream, and its client
// starts over.
func TestHTTPSessionsBounded(t *testing.T) {
	t.Parallel()
	s := startHTTP(t, serverOpts{dir: newWorkspaceDir(t), agent: "many"})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	streaming := s.initialize(protocolVersion)
	events := s.stream(streaming)
	first := s.initialize(protocolVersion)
	idlest := s.initialize(protocolVersion)
	for range maxSessions - 3 {
		s.initialize(protocolVersion)
	}
	// The first session is used, so the next is the one used least lately.
	if a := s.do(http.MethodPost, list, "Mcp-Session-Id", first); a.status != http.StatusOK {
		t.Fatalf("with %d sessions, the first: status %d %s", maxSessions, a.status, a.body)
	}
	newest := s.initialize(protocolVersion)
	s.do(http.MethodPost, list, "Mcp-Session-Id", idlest).wantRPCError(t, "the idlest session past the bound", http.StatusNotFound, -32001, "session")
	for _, sid := range []string{streaming, first, newest} {
		if a := s.do(http.MethodPost, list, "Mcp-Session-Id", sid); a.status != http.StatusOK {
			t.Errorf("session %s past the bound: status %d %s", sid, a.status, a.body)
		}
	}
	if ended(events, 100*time.Millisecond) {
		t.Error("the session holding an event stream was ended")
	}
}
