package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/rpcguard"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/web"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// Streamable HTTP, made safe to expose: the MCP library serves the protocol,
// and this file stands in front of it. Each request is checked in this
// order: its Host and Origin (DNS rebinding), its bearer token (with an
// access file), its size, its session; then it is a JSON-RPC message, or a
// batch of them under the one protocol version that allows batches. Every
// refusal is a JSON-RPC error with the HTTP status the transport prescribes.

const (
	// maxRequestBytes bounds an HTTP request: the largest note, escaped as
	// JSON, and its arguments.
	maxRequestBytes = 2*note.MaxContentBytes + 1<<20
	// bodyReadTimeout bounds how long a client may take to send a request's
	// body, so that a slow one cannot hold a request open.
	bodyReadTimeout = time.Minute
	// sessionIdleTTL ends a session nothing used for that long (a client
	// that went away without DELETE); its next request gets 404, after which
	// clients start a new session. An open event stream keeps its session
	// alive through the heartbeat.
	sessionIdleTTL = time.Hour
	// heartbeat pings each open event stream, which keeps its session alive
	// and keeps proxies from closing a stream that is quiet.
	heartbeat = 30 * time.Second
	// shutdownGrace is how long a stop waits for requests in flight to be
	// answered before it closes their connections (the requests themselves
	// still finish: a write is never cut mid-way).
	shutdownGrace = 10 * time.Second
)

// JSON-RPC error codes of the transport's own refusals.
const (
	// codeRefused: the request was refused before it was read as a message
	// (no or unknown token, a foreign Origin or Host, no session, a method
	// the endpoint does not take).
	codeRefused = -32000
	// codeSessionNotFound: the session the request names ended or never
	// existed; the client starts a new one with initialize.
	codeSessionNotFound = -32001
)

// httpFlags are serve's flags for streamable HTTP.
type httpFlags struct {
	addr           string     // --http HOST:PORT; "" serves stdio
	tlsCert        string     // --tls-cert: the certificate chain, PEM
	tlsKey         string     // --tls-key: its private key, PEM
	allowOrigins   stringList // --allow-origin: browser origins trusted besides this machine's
	openToNetwork  bool       // --open-to-network: a board without access file beyond loopback
	behindTLSProxy bool       // --behind-tls-proxy: plain HTTP beyond loopback, TLS being a proxy's
}

func (f *httpFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve streamable HTTP at /mcp on this address (e.g. 127.0.0.1:8080) instead of stdio")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "with --http: serve HTTPS with this certificate (PEM, the chain)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "with --http: the certificate's private key (PEM)")
	fs.Var(&f.allowOrigins, "allow-origin", "with --http: a browser origin allowed to call the server, e.g. https://app.example.com (repeatable; default: none but this machine's)")
	fs.BoolVar(&f.openToNetwork, "open-to-network", false, "with --http: serve a board without access file on an address other machines reach (everyone there may do everything)")
	fs.BoolVar(&f.behindTLSProxy, "behind-tls-proxy", false, "with --http: serve plain HTTP with tokens on an address other machines reach, as a reverse proxy in front terminates TLS")
}

// httpConfig is what the flags ask for, checked before anything is opened.
type httpConfig struct {
	addr           string
	tls            *tls.Config     // nil: plain HTTP
	origins        map[string]bool // --allow-origin, normalized by parseOrigin
	openToNetwork  bool
	behindTLSProxy bool
}

// check turns the flags into a configuration, or says what is wrong with
// them. It returns nil, nil when serve is to speak stdio.
func (f *httpFlags) check() (*httpConfig, error) {
	if f.addr == "" {
		if f.tlsCert != "" || f.tlsKey != "" || len(f.allowOrigins) > 0 || f.openToNetwork || f.behindTLSProxy {
			return nil, cli.Usagef("--tls-cert, --tls-key, --allow-origin, --open-to-network and --behind-tls-proxy go with --http ADDR")
		}
		return nil, nil
	}
	if err := checkListenAddr(f.addr); err != nil {
		return nil, err
	}
	cfg := &httpConfig{addr: f.addr, origins: map[string]bool{}, openToNetwork: f.openToNetwork, behindTLSProxy: f.behindTLSProxy}
	for _, o := range f.allowOrigins {
		norm, ok := parseOrigin(o)
		if !ok {
			return nil, cli.Usagef("--allow-origin %q: want an origin, a scheme and a host with an optional port and no path, such as https://app.example.com", o)
		}
		cfg.origins[norm] = true
	}
	switch {
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return nil, cli.Usagef("--tls-cert and --tls-key go together: the certificate and its private key")
	case f.tlsCert != "":
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert %s, --tls-key %s: %w", f.tlsCert, f.tlsKey, err)
		}
		cfg.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return cfg, nil
}

// checkListenAddr refuses an --http value net.Listen would refuse, or would
// take as something else (a service name for a port), saying what is wanted.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		return cli.Usagef("--http %q: want HOST:PORT, such as 127.0.0.1:8080, or :8080 for every interface (%v)", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return cli.Usagef("--http %q: the port must be a number from 0 to 65535, such as 127.0.0.1:8080", addr)
	}
	return nil
}

// checkExposure refuses to serve, on an address other machines reach, a
// board anyone there could use, or tokens that would cross the network in
// clear, unless the flags say it is meant.
func checkExposure(bound net.Addr, cfg *httpConfig, restricted bool) error {
	if isLoopbackAddr(bound) {
		return nil
	}
	_, port, _ := net.SplitHostPort(bound.String())
	if !restricted && !cfg.openToNetwork {
		return fmt.Errorf("refusing to serve this board on %s: it has no access file, so anyone who can reach that address could read and write every topic. "+
			"Give each agent a token (blackboard-mcp token add NAME --read TOPIC --write TOPIC; then every request needs it), "+
			"or serve on 127.0.0.1:%s, or pass --open-to-network if everyone who can reach %s may do everything", cfg.addr, port, cfg.addr)
	}
	if restricted && cfg.tls == nil && !cfg.behindTLSProxy {
		return fmt.Errorf("refusing to serve on %s over plain HTTP: the agents' bearer tokens would cross the network in clear. "+
			"Pass --tls-cert FILE --tls-key FILE to serve HTTPS, or, when a reverse proxy in front terminates TLS, serve on 127.0.0.1:%s "+
			"if the proxy is on this machine, or pass --behind-tls-proxy if it reaches this one over a network you trust", cfg.addr, port)
	}
	return nil
}

func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// isLoopbackHost reports whether host (a Host header, with or without a
// port) names this machine: localhost or a loopback address.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// parseOrigin normalizes a browser origin (scheme://host[:port]): lower
// case, without the scheme's default port. ok is false for anything else,
// "null" included.
func parseOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme != "http" && scheme != "https") || u.Hostname() == "" {
		return "", false
	}
	return scheme + "://" + normalizeHost(u.Host, scheme), true
}

// normalizeHost is a host[:port] in lower case, without the scheme's default
// port.
func normalizeHost(host, scheme string) string {
	host = strings.ToLower(host)
	if h, port, err := net.SplitHostPort(host); err == nil && (scheme == "http" && port == "80" || scheme == "https" && port == "443") {
		if strings.Contains(h, ":") {
			return "[" + h + "]"
		}
		return h
	}
	return host
}

// originAllowed decides on a request's Origin. A request without one (what
// every client but a browser sends) passes. A browser's passes when its
// origin was allowed by --allow-origin, when both the page and the Host are
// this machine (a page can't claim a loopback origin from elsewhere), or
// when the page is the server's own origin and the Host is an address, not
// a name (DNS rebinding needs a name that the attacker controls).
func originAllowed(origin, host string, allowed map[string]bool) bool {
	if origin == "" {
		return true
	}
	norm, ok := parseOrigin(origin)
	if !ok {
		return false
	}
	if allowed[norm] {
		return true
	}
	scheme, originHost, _ := strings.Cut(norm, "://")
	if isLoopbackHost(originHost) && isLoopbackHost(host) {
		return true
	}
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	_, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && originHost == normalizeHost(host, scheme)
}

// callerKey carries an HTTP request's caller to the tools.
type callerKey struct{}

// httpHandler is the /mcp endpoint.
type httpHandler struct {
	gate     *httpGate
	mcp      *server.StreamableHTTPServer
	sessions *sessionTable
	inflight requestGate // POSTs being served: a stop waits for them
	// readable decides resources/read before the library serves it.
	readable rpcguard.ResourceCheck
}

// requestGate counts the requests being served, so that a stop can wait
// for them; once closed, it lets no new one in.
type requestGate struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (g *requestGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	return true
}

func (g *requestGate) leave() { g.wg.Done() }

// closeAndWait lets no new request in and waits for those being served.
func (g *requestGate) closeAndWait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// httpEndpoint says how serve --http's endpoint (/mcp for agents, the
// page at / for people) is made, besides the board: the same whether the
// process that listens serves the board itself or the board's engine
// serves it for that process (engine.Hello.HTTP, this encoded as JSON).
type httpEndpoint struct {
	// Agent makes every call on a board without access file.
	Agent string `json:"agent,omitempty"`
	// Restricted: the board has an access file, and every request needs
	// a bearer token of a known agent.
	Restricted bool `json:"restricted,omitempty"`
	// Origins are the browser origins trusted besides this machine's
	// (--allow-origin, normalized by parseOrigin), sorted.
	Origins []string `json:"origins,omitempty"`
	// Secure: TLS, in this process or at a proxy in front; the page's
	// cookies are Secure.
	Secure bool `json:"secure,omitempty"`
	// Dir is the listening process's directory, and SourceRoots the
	// directories its source_path may read from (absolute).
	Dir         string   `json:"dir,omitempty"`
	SourceRoots []string `json:"source_roots,omitempty"`
}

// gate is the endpoint's gate on the board at dir, its callers made by
// reading.
func (ep httpEndpoint) gate(dir string, reading func(*fsstore.Caller) *fsstore.Caller) *httpGate {
	g := &httpGate{restricted: ep.Restricted, origins: map[string]bool{}, access: access.NewReader(filepath.Join(dir, note.AccessFile)),
		reading: reading, open: reading(fsstore.OpenCaller(ep.Agent))}
	for _, o := range ep.Origins {
		g.origins[o] = true
	}
	return g
}

// httpGate lets a request to the endpoint in, or refuses it, before its
// body is read: its Host and Origin first (DNS rebinding), then its bearer
// token, on a board with an access file, looked at again for each request
// so that a revoked token stops working at once.
type httpGate struct {
	restricted bool
	origins    map[string]bool // --allow-origin
	access     *access.Reader
	reading    func(*fsstore.Caller) *fsstore.Caller
	open       *fsstore.Caller // every request's caller on a board without access file
}

// pass returns r carrying its caller, or answers its refusal and returns
// nil. A CORS preflight (OPTIONS, with origins allowed) passes without
// one, for the library to answer.
func (g *httpGate) pass(w http.ResponseWriter, r *http.Request) *http.Request {
	// The library checks the Host too, answering in plain text; this check
	// comes first so that the answer is JSON-RPC.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopbackAddr(local) && !isLoopbackHost(r.Host) {
		writeRPCError(w, http.StatusForbidden, codeRefused, fmt.Sprintf("forbidden: the Host %q is not this machine's, and the server listens on loopback only", r.Host))
		return nil
	}
	if origin := r.Header.Get("Origin"); !originAllowed(origin, r.Host, g.origins) {
		writeRPCError(w, http.StatusForbidden, codeRefused, fmt.Sprintf("forbidden: the Origin %q is not trusted; the server's operator may allow it with --allow-origin", origin))
		return nil
	}
	if r.Method == http.MethodOptions && len(g.origins) > 0 {
		return r
	}
	caller := g.open
	if g.restricted {
		var ok bool
		if caller, ok = g.authenticate(r); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="blackboard-mcp"`)
			writeRPCError(w, http.StatusUnauthorized, codeRefused, "unauthorized: a bearer token of a known agent is required (Authorization: Bearer <token>)")
			return nil
		}
	}
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, caller))
}

// authenticate returns the caller the request's bearer token names.
func (g *httpGate) authenticate(r *http.Request) (*fsstore.Caller, bool) {
	af, _, err := g.access.Load()
	if err != nil || af == nil {
		return nil, false
	}
	agent, ok := af.Authenticate(web.BearerToken(r))
	if !ok {
		return nil, false
	}
	return g.reading(fsstore.AgentCaller(agent)), true
}

// endpoint is serve --http's endpoint on an open board.
type endpoint struct {
	http.Handler
	mcp *httpHandler
}

// newEndpoint builds serve --http's endpoint on the board of srv, as ep
// says. The server's calls are made as the caller each request carries
// (requestCaller).
func newEndpoint(ws *fsstore.Workspace, srv *tools.Server, log *slog.Logger, ep httpEndpoint) *endpoint {
	reading := func(c *fsstore.Caller) *fsstore.Caller { return c.ReadingFrom(ws.Dir(), ep.Dir, ep.SourceRoots) }
	h := &httpHandler{gate: ep.gate(ws.Dir(), reading), sessions: newSessionTable(), readable: srv.NoteReadable}
	h.sessions.watch(srv.MCP())
	opts := []server.StreamableHTTPOption{
		server.WithSessionIdManager(h.sessions),
		server.WithSessionIdleTTL(sessionIdleTTL),
		server.WithHeartbeatInterval(heartbeat),
		// Every revision is served on the one endpoint: the older ones in a
		// session (initialize, then Mcp-Session-Id), 2026-07-28 on without
		// one, each request carrying its version, and its token checked.
		server.WithStreamableHTTPLogger(log),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if c, ok := r.Context().Value(callerKey{}).(*fsstore.Caller); ok {
				return context.WithValue(ctx, callerKey{}, c)
			}
			return ctx
		}),
	}
	if len(ep.Origins) > 0 {
		opts = append(opts, server.WithStreamableHTTPCORS(
			server.WithCORSAllowedOrigins(ep.Origins...),
			server.WithCORSAllowedHeaders("Content-Type", "Authorization", server.HeaderKeySessionID, mcp.HeaderProtocolVersion, "Last-Event-ID",
				mcp.HeaderMethod, mcp.HeaderName),
		))
	}
	h.mcp = server.NewStreamableHTTPServer(srv.MCP(), opts...)

	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	// People watch the board and act on it at /, under the same access rules.
	mux.Handle("/", web.New(ws, log, ep.Secure).Handler())
	return &endpoint{Handler: mux, mcp: h}
}

// closeStreams ends the event streams: their handlers return only when the
// client leaves, and a stop waits for every handler.
func (e *endpoint) closeStreams() { e.mcp.sessions.closeStreams() }

// finish waits for the requests in flight (a write still running finishes
// before the board is closed) and stops the library's idle-session
// sweeper.
func (e *endpoint) finish() {
	e.mcp.inflight.closeAndWait()
	_ = e.mcp.mcp.Shutdown(context.Background())
}

// requestCaller is the caller an HTTP request's context carries (every
// request to the endpoint does), nil for any other call.
func requestCaller(ctx context.Context) *fsstore.Caller {
	c, _ := ctx.Value(callerKey{}).(*fsstore.Caller)
	return c
}

// serveHTTP serves streamable HTTP at /mcp, and the page at /, until ctx
// ends: through the board's engine (starting one when none runs), or from
// the board opened here with --no-engine or when no engine can serve it.
// With an access file, every request needs a bearer token of a known
// agent (401 otherwise), and the file is read again for each request, so
// a revoked token stops working at once.
func serveHTTP(ctx context.Context, dir string, noSync, alone bool, roots []string, cfg *httpConfig, log *slog.Logger) error {
	_, restricted, err := access.Load(filepath.Join(dir, note.AccessFile))
	if err != nil {
		return fmt.Errorf("the access file %s is unreadable, so the server will not start: %w", note.AccessFile, err)
	}
	l, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("cannot serve on %s: %w (is another server using that port? pick another with --http)", cfg.addr, err)
	}
	defer l.Close()
	if err := checkExposure(l.Addr(), cfg, restricted); err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	ep := httpEndpoint{Agent: agentName(), Restricted: restricted, Secure: cfg.tls != nil || cfg.behindTLSProxy,
		Dir: cwd, SourceRoots: absolute(roots)}
	for o := range cfg.origins {
		ep.Origins = append(ep.Origins, o)
	}
	slices.Sort(ep.Origins)
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops the server gracefully; a second one, should
	// that take too long, kills it (the board survives a kill).
	context.AfterFunc(ctx, stop)

	// The board's engine serves the endpoint; this process listens.
	var front *engineFront
	if !alone {
		front, err = endpointThroughEngine(ctx, dir, noSync, ep, log)
		if err != nil && !errors.Is(err, engine.ErrUnavailable) {
			return err
		}
		if err != nil {
			log.Warn("this process serves the board itself", "why", err)
		}
	}
	abs, _ := filepath.Abs(dir)
	served := httpServed{cfg: cfg, restricted: restricted, dir: abs}
	if front != nil {
		served.Handler, served.by, served.closeStreams, served.finish = front, "engine", front.stop, func() {}
		return served.listen(ctx, l, log)
	}
	b, err := openBoard(dir, noSync, roots, log)
	if err != nil {
		return err
	}
	defer b.close()
	// Subscribers of notes (MCP resources) hear of every change.
	go b.srv.WatchBoard(ctx)
	b.srv.SetCaller(requestCaller)
	e := newEndpoint(b.ws, b.srv, b.transportLog, ep)
	served.Handler, served.by, served.closeStreams, served.finish = e, "this process", e.closeStreams, e.finish
	return served.listen(ctx, l, log)
}

// httpServed is what serve --http serves, and how it stops.
type httpServed struct {
	http.Handler
	cfg        *httpConfig
	restricted bool
	dir        string // the board, for the log
	by         string // who serves the board: "engine" or "this process"
	// closeStreams ends the event streams (a stop waits for every
	// handler); finish runs once the requests in flight were answered.
	closeStreams, finish func()
}

// listen serves on l until ctx ends. A stop closes the listener first,
// then ends the event streams, waits for the requests in flight up to
// shutdownGrace, then finishes.
func (s *httpServed) listen(ctx context.Context, l net.Listener, log *slog.Logger) error {
	cfg, restricted := s.cfg, s.restricted
	hs := &http.Server{
		Handler:           s.Handler,
		TLSConfig:         cfg.tls,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(s.closeStreams)

	scheme := "http"
	if cfg.tls != nil {
		scheme = "https"
	}
	served := make(chan error, 1)
	go func() {
		if cfg.tls != nil {
			served <- hs.ServeTLS(l, "", "")
		} else {
			served <- hs.Serve(l)
		}
	}()
	// The warning comes before the line that says the board is served, so
	// that whoever waits for that line has read the warning too.
	if !restricted && !isLoopbackAddr(l.Addr()) {
		log.Warn("the board has no access file: everyone who can reach this address may read and write every topic", "addr", l.Addr().String())
	}
	log.Info("serving over streamable HTTP", "dir", s.dir, "url", scheme+"://"+l.Addr().String()+"/mcp",
		"access_control", restricted, "tls", cfg.tls != nil, "behind_tls_proxy", cfg.behindTLSProxy, "board_served_by", s.by)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	start := time.Now()
	log.Info("stopping: ending event streams, finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("requests still running after the grace period: closing their connections, and letting them finish", "grace", shutdownGrace, "err", err)
		_ = hs.Close()
	}
	s.finish()
	log.Info("stopped", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r = h.gate.pass(w, r); r == nil {
		return
	}
	if r.Method == http.MethodOptions && len(h.gate.origins) > 0 {
		h.mcp.ServeHTTP(w, r) // a CORS preflight, answered by the library
		return
	}
	switch r.Method {
	case http.MethodPost:
		if !h.inflight.enter() {
			writeRPCError(w, http.StatusServiceUnavailable, codeRefused, "the server is stopping")
			return
		}
		defer h.inflight.leave()
		h.post(w, r)
	case http.MethodGet:
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeRPCError(w, http.StatusMethodNotAllowed, codeRefused, "method not allowed: POST a JSON-RPC message, GET the event stream, DELETE the session")
	}
}

// agentOf is the name of the agent a request's context carries: the
// token's, or on a board without access file the endpoint's (Agent).
func agentOf(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(*fsstore.Caller); ok && c != nil {
		return c.Name
	}
	return ""
}

// statelessVersion is the protocol version a request of the stateless
// revisions (2026-07-28 on) names, in its MCP-Protocol-Version header or
// its message's _meta (a batch: its first message's), and whether it names
// one: such a request has no session. The library checks that the two
// agree.
func statelessVersion(r *http.Request, body []byte) (version string, ok bool) {
	if v := r.Header.Get(mcp.HeaderProtocolVersion); mcp.IsModernProtocol(v) {
		return v, true
	}
	var one struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	if rpcguard.IsBatch(body) {
		var members []json.RawMessage
		if json.Unmarshal(body, &members) != nil || len(members) == 0 {
			return "", false
		}
		body = members[0]
	}
	if json.Unmarshal(body, &one) != nil {
		return "", false
	}
	if v := one.Params.Meta.ProtocolVersion(); mcp.IsModernProtocol(v) {
		return v, true
	}
	return "", false
}

// session checks the request's Mcp-Session-Id, answering 400 without one
// and 404 for one that ended, never existed or is another agent's.
func (h *httpHandler) session(w http.ResponseWriter, r *http.Request) (version string, ok bool) {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		writeRPCError(w, http.StatusBadRequest, codeRefused, "bad request: no session: send initialize first, then the Mcp-Session-Id header it answered with on every request")
		return "", false
	}
	version, ok = h.sessions.lookup(id, agentOf(r.Context()))
	if !ok {
		writeRPCError(w, http.StatusNotFound, codeSessionNotFound, "session not found: it ended or never existed; send initialize to start a new one")
		return "", false
	}
	return version, true
}

func (h *httpHandler) post(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength > maxRequestBytes {
		writeTooLarge(w)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeTooLarge(w)
			return
		}
		writeRPCError(w, http.StatusBadRequest, mcp.PARSE_ERROR, "parse error: the request body could not be read")
		return
	}
	if rpcguard.IsBatch(body) {
		h.postBatch(w, r, body)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	version, modern := statelessVersion(r, body)
	if modern {
		// No session: the library checks the version and the headers that
		// mirror the body, and serves the request on its own. A listen
		// stream lasts until its client leaves or the server stops.
		if json.Unmarshal(body, &m) == nil && m.Method == string(mcp.MethodSubscriptionsListen) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			release, ok := h.sessions.addListen(cancel)
			if !ok {
				writeRPCError(w, http.StatusServiceUnavailable, codeRefused, "the server is stopping")
				return
			}
			defer release()
			r = r.WithContext(ctx)
		}
	} else if json.Unmarshal(body, &m) == nil && m.Method != string(mcp.MethodInitialize) {
		if r.Header.Get(server.HeaderKeySessionID) == "" && m.Method == string(mcp.MethodPing) && m.ID != nil && string(m.ID) != "null" {
			// ping is answered before initialize, as over stdio.
			writeJSON(w, http.StatusOK, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`))
			return
		}
		var ok bool
		if version, ok = h.session(w, r); !ok {
			return
		}
	}
	// What does not parse is answered by the library (-32700); an
	// initialize starts a new session whatever header it carries.
	if reply := rpcguard.Check(body, true); reply != nil {
		writeJSON(w, http.StatusOK, reply)
		return
	}
	if reply := rpcguard.CheckRead(r.Context(), body, h.readable, version); reply != nil {
		writeJSON(w, http.StatusOK, reply)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.serveMCP(w, r)
}

// postBatch answers a JSON-RPC batch: each message in it, the answers
// together as one array, under the protocol version that allows batches
// (the session's); under any other, the batch is refused whole.
func (h *httpHandler) postBatch(w http.ResponseWriter, r *http.Request, body []byte) {
	version, modern := statelessVersion(r, body)
	if !modern {
		var ok bool
		if version, ok = h.session(w, r); !ok {
			return
		}
	}
	if version != rpcguard.BatchVersion {
		writeRPCError(w, http.StatusBadRequest, mcp.INVALID_REQUEST, fmt.Sprintf(
			"invalid request: batches are not part of protocol version %s (only %s has them); send one message per request", version, rpcguard.BatchVersion))
		return
	}
	var members []json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil {
		writeRPCError(w, http.StatusBadRequest, mcp.PARSE_ERROR, "parse error: not valid JSON")
		return
	}
	if len(members) == 0 {
		writeRPCError(w, http.StatusBadRequest, mcp.INVALID_REQUEST, "invalid request: an empty batch")
		return
	}
	ids := map[string]bool{}
	for _, raw := range members {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(raw, &m) != nil || m.ID == nil || string(m.ID) == "null" {
			continue
		}
		if ids[string(m.ID)] || m.Method == string(mcp.MethodInitialize) {
			writeRPCError(w, http.StatusBadRequest, mcp.INVALID_REQUEST, "invalid request: a batch with initialize, or with an id twice")
			return
		}
		ids[string(m.ID)] = true
	}
	var answers [][]byte
	for _, raw := range members {
		if reply := rpcguard.Check(raw, true); reply != nil {
			answers = append(answers, reply)
			continue
		}
		if reply := rpcguard.CheckRead(r.Context(), raw, h.readable, version); reply != nil {
			answers = append(answers, reply)
			continue
		}
		if a := h.one(r, raw); a != nil {
			answers = append(answers, a)
		}
	}
	if len(answers) == 0 {
		w.WriteHeader(http.StatusAccepted) // notifications and responses only
		return
	}
	writeJSON(w, http.StatusOK, append(append([]byte{'['}, bytes.Join(answers, []byte{','})...), ']'))
}

// one has the library answer one message of a batch; nil when it answers
// nothing (a notification or a response).
func (h *httpHandler) one(r *http.Request, raw json.RawMessage) []byte {
	header := r.Header.Clone()
	header.Set("Content-Type", "application/json")
	rec := &recorder{header: http.Header{}}
	h.mcp.Handle(rec, &server.HTTPRequest{Method: http.MethodPost, URL: r.URL, Header: header, Body: raw, Context: r.Context()})
	answer := bytes.TrimSpace(rec.body.Bytes())
	if rec.status == http.StatusAccepted || len(answer) == 0 {
		return nil
	}
	if !json.Valid(answer) || answer[0] != '{' {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(raw, &m)
		return rpcguard.ErrorResponse(m.ID, codeForStatus(rec.status), strings.TrimSpace(string(answer)))
	}
	return answer
}

// get serves a session's event stream, which ends when the client leaves,
// the session is deleted or the server stops.
func (h *httpHandler) get(w http.ResponseWriter, r *http.Request) {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		h.serveMCP(w, r) // 405: from 2026-07-28 a client listens with subscriptions/listen
		return
	}
	if _, ok := h.session(w, r); !ok {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	release, ok := h.sessions.addStream(r.Header.Get(server.HeaderKeySessionID), cancel)
	if !ok {
		writeRPCError(w, http.StatusServiceUnavailable, codeRefused, "the server is stopping")
		return
	}
	defer release()
	h.serveMCP(w, r.WithContext(ctx))
}

func (h *httpHandler) delete(w http.ResponseWriter, r *http.Request) {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		h.serveMCP(w, r) // 405: from 2026-07-28 there is no session to end
		return
	}
	if _, ok := h.session(w, r); !ok {
		return
	}
	h.serveMCP(w, r) // the library ends the session (sessionTable.Terminate)
}

// serveMCP passes a request to the library, with its plain-text errors
// turned into JSON-RPC ones.
func (h *httpHandler) serveMCP(w http.ResponseWriter, r *http.Request) {
	ew := &rpcErrorWriter{ResponseWriter: w}
	h.mcp.ServeHTTP(ew, r)
	ew.finish()
}

// writeRPCError answers with a JSON-RPC error (id null: the request was not
// read as a message) and an HTTP status.
func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, rpcguard.ErrorResponse(nil, code, msg))
}

func writeTooLarge(w http.ResponseWriter) {
	writeRPCError(w, http.StatusRequestEntityTooLarge, mcp.INVALID_REQUEST,
		fmt.Sprintf("request too large: at most %d MiB (a note holds at most %d MiB)", maxRequestBytes>>20, note.MaxContentBytes>>20))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// codeForStatus is the JSON-RPC code of an HTTP error the library answered
// in plain text.
func codeForStatus(status int) int {
	switch status {
	case http.StatusNotFound:
		return codeSessionNotFound
	case http.StatusBadRequest:
		return mcp.INVALID_REQUEST
	case http.StatusInternalServerError:
		return mcp.INTERNAL_ERROR
	}
	return codeRefused
}

// rpcErrorWriter passes the library's response on, but for an HTTP error
// in plain text, which it holds back and sends as a JSON-RPC error.
type rpcErrorWriter struct {
	http.ResponseWriter
	status int
	held   bool         // an error in plain text
	text   bytes.Buffer // its body
}

func (w *rpcErrorWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if status >= 400 && !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		w.held = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *rpcErrorWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.held {
		return w.text.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Flush lets the library stream events.
func (w *rpcErrorWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && !w.held {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *rpcErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *rpcErrorWriter) finish() {
	if w.held {
		writeRPCError(w.ResponseWriter, w.status, codeForStatus(w.status), strings.TrimSpace(w.text.String()))
	}
}

// recorder is the response of one message of a batch.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}
func (r *recorder) Flush()          {}
func (r *recorder) CanStream() bool { return false } // one JSON answer, never an event stream

// sessionTable is the library's session id manager: the sessions initialize
// started and nothing ended since, with their agent and protocol version,
// and the event streams open on each.
type sessionTable struct {
	mu       sync.Mutex
	sessions map[string]*httpSession
	// listens are the subscriptions/listen streams of the stateless
	// revisions, which belong to no session.
	listens  map[*context.CancelFunc]struct{}
	stopping bool // no new event streams
}

type httpSession struct {
	used    time.Time // when it was made or last named by a request
	ready   bool      // initialize succeeded: the id may be used
	agent   string    // who initialized it ("" on a board without access file)
	version string    // the protocol version initialize agreed on
	streams map[*context.CancelFunc]struct{}
}

func newSessionTable() *sessionTable {
	return &sessionTable{sessions: map[string]*httpSession{}, listens: map[*context.CancelFunc]struct{}{}}
}

// watch has the server tell the table what each initialize agreed on.
func (t *sessionTable) watch(s *server.MCPServer) {
	hooks := s.GetHooks()
	if hooks == nil {
		hooks = &server.Hooks{}
		server.WithHooks(hooks)(s)
	}
	hooks.AddAfterInitialize(func(ctx context.Context, _ any, _ *mcp.InitializeRequest, res *mcp.InitializeResult) {
		cs := server.ClientSessionFromContext(ctx)
		if cs == nil || res == nil {
			return
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		if s, ok := t.sessions[cs.SessionID()]; ok {
			s.ready, s.agent, s.version = true, agentOf(ctx), res.ProtocolVersion
		}
	})
}

// maxSessions bounds the sessions a server keeps: each initialize makes
// one, and a client that goes away without DELETE leaves it for an hour.
const maxSessions = 1000

// Generate makes a session id for an initialize: 130 random bits, so that
// none can be guessed. With maxSessions already kept, the one without an
// event stream that was used least lately ends (its client, if any, gets
// 404 and initializes again).
func (t *sessionTable) Generate() string {
	id := rand.Text()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.sessions) >= maxSessions {
		var idlest string
		for sid, s := range t.sessions {
			if len(s.streams) == 0 && (idlest == "" || s.used.Before(t.sessions[idlest].used)) {
				idlest = sid
			}
		}
		delete(t.sessions, idlest)
	}
	t.sessions[id] = &httpSession{used: time.Now(), streams: map[*context.CancelFunc]struct{}{}}
	return id
}

// Validate accepts a session that initialize started and nothing ended.
func (t *sessionTable) Validate(id string) (isTerminated bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	if !ok || !s.ready {
		return false, errors.New("session not found")
	}
	s.used = time.Now()
	return false, nil
}

// Terminate ends a session (a DELETE, the idle sweeper, a stop) and its
// event streams.
func (t *sessionTable) Terminate(id string) (isNotAllowed bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.sessions[id]; ok {
		for cancel := range s.streams {
			(*cancel)()
		}
		delete(t.sessions, id)
	}
	return false, nil
}

// lookup returns a session's protocol version; ok is false for a session
// that is not (or no longer) there, or is another agent's.
func (t *sessionTable) lookup(id, agent string) (version string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, found := t.sessions[id]
	if !found || !s.ready || s.agent != agent {
		return "", false
	}
	return s.version, true
}

// addStream records an event stream of a session, to be ended with it;
// release forgets it. ok is false when the session is gone or the server
// is stopping.
func (t *sessionTable) addStream(id string, cancel context.CancelFunc) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, found := t.sessions[id]
	if !found || t.stopping {
		return nil, false
	}
	key := &cancel
	s.streams[key] = struct{}{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(s.streams, key)
	}, true
}

// addListen records a subscriptions/listen stream, to be ended by a stop;
// release forgets it. ok is false when the server is stopping.
func (t *sessionTable) addListen(cancel context.CancelFunc) (release func(), ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopping {
		return nil, false
	}
	key := &cancel
	t.listens[key] = struct{}{}
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.listens, key)
	}, true
}

// closeStreams ends every event stream, for a stop.
func (t *sessionTable) closeStreams() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	for _, s := range t.sessions {
		for cancel := range s.streams {
			(*cancel)()
		}
	}
	for cancel := range t.listens {
		(*cancel)()
	}
}
