// Package web is the page where people watch the board and act on it: its
// topics and notes, a note's text and history, search, updated live when
// the branch moves; and forms that write a note, append to it, link it,
// and release, hand on or finish a claim (write.go). It reads and writes
// through the same View as the tools, so a token sees and touches on the
// page exactly what its agent may.
//
// Pages are rendered on the server with html/template (every value is
// escaped) and Markdown through goldmark without raw HTML or dangerous
// links; a little JavaScript, embedded like the rest, swaps in the parts
// that changed when the server says the branch moved (server-sent events).
// With JavaScript off the pages work, without live updates.
package web

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

//go:embed assets
var assets embed.FS

// tokenCookie holds a person's token on a board with an access file.
const tokenCookie = "bb_token"

// Server serves the page of one workspace.
type Server struct {
	ws    *fsstore.Workspace
	log   *slog.Logger
	pages *template.Template
	// tls: the page is served over TLS (directly or behind a proxy that
	// terminates it): the token cookie is then Secure.
	tls bool
	// poll is how often the event streams look whether the branch moved.
	poll  time.Duration
	moves moves
	parts parts
}

// New returns the page server of ws; tls says whether people reach it over
// TLS.
func New(ws *fsstore.Workspace, log *slog.Logger, tls bool) *Server {
	return &Server{ws: ws, log: log, tls: tls, poll: 250 * time.Millisecond,
		pages: template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))}
}

// Handler routes the page's paths: / (the board), /t/TOPIC, /n/KEY (and
// its forms, posted there), /new, /activity, /search, /events (the live
// stream), /login and /assets/.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", http.FileServerFS(assets))
	mux.HandleFunc("GET /login", s.loginForm)
	mux.HandleFunc("POST /login", s.login)
	mux.Handle("GET /events", s.reader(s.events))
	mux.Handle("GET /search", s.reader(s.search))
	mux.Handle("GET /activity", s.reader(s.activity))
	mux.Handle("GET /t/{topic...}", s.reader(s.topic))
	mux.Handle("GET /n/{key...}", s.reader(s.note))
	mux.Handle("POST /n/{key...}", s.reader(s.act))
	mux.Handle("GET /new", s.reader(s.newNote))
	mux.Handle("POST /new", s.reader(s.newNote))
	mux.Handle("GET /{$}", s.reader(s.board))
	// A form posted from another site is refused: the browser's
	// Sec-Fetch-Site says where it comes from, or else its Origin (the
	// page's no-referrer policy makes that "null" on a form's post, so
	// Sec-Fetch-Site is what modern browsers are judged by).
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "forbidden: a request from another origin", http.StatusForbidden)
	}))
	return s.guard(csrf.Handler(mux))
}

// guard refuses what the MCP endpoint refuses too: on a loopback address,
// a Host that is not this machine (DNS rebinding). A POST from another
// origin is refused by the cross-origin protection inside it (Handler).
func (s *Server) guard(next http.Handler) http.Handler {
	return LoopbackHostOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	}))
}

// LoopbackHostOnly refuses, on a server that listens on a loopback
// address, a request whose Host is not this machine (DNS rebinding). The
// page's Handler does so itself; a front that passes requests on to the
// board's engine (`view`) does so before, as the engine sees no address of
// the front's.
func LoopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && loopback(local) && !loopbackHost(r.Host) {
			http.Error(w, "forbidden: the Host is not this machine's, and the server listens on loopback only", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// reader serves h with the View of the person asking: on a board without
// access file, everything; with one, what their token may read, and the
// login form without a token.
func (s *Server) reader(h func(http.ResponseWriter, *http.Request, *fsstore.View)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, reader, ok := s.caller(r)
		if !ok {
			if r.URL.Path == "/events" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		v := s.ws.As(caller.AsPerson()) // whoever uses the page is a person
		if r.Header.Get("X-Part") == "main" && r.Method == http.MethodGet {
			s.servePart(w, r, reader, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r, v) }))
			return
		}
		h(w, r, v)
	})
}

// caller is the person asking: the open caller on a board without access
// file, else the agent of the token in the cookie (or a bearer header).
// reader says who that is and what they may read, for parts made for them.
func (s *Server) caller(r *http.Request) (c *fsstore.Caller, reader string, ok bool) {
	af, _, err := s.ws.Access()
	if err != nil {
		return nil, "", false
	}
	if af == nil {
		// BLACKBOARD_AGENT names the person: the view's, passed through
		// the engine that serves its page (AsPerson), else this process's.
		name := s.ws.Agent()
		if p, ok := r.Context().Value(personKey{}).(string); ok && p != "" {
			name = p
		}
		return fsstore.OpenCaller(name), "", true
	}
	token := BearerToken(r)
	if c, err := r.Cookie(tokenCookie); err == nil {
		token = c.Value
	}
	if token == "" {
		return nil, "", false
	}
	agent, ok := af.Authenticate(token)
	if !ok {
		return nil, "", false
	}
	return fsstore.AgentCaller(agent), agent.Name + "\x00" + strings.Join(agent.Read, "\x00"), true
}

type personKey struct{}

// AsPerson is ctx of a request made by the person name on a board without
// an access file: the board's engine serves the page of a `view` process
// for the person that process names.
func AsPerson(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, personKey{}, name)
}

// BearerToken is the token of a request's "Authorization: Bearer" header,
// "" for none.
func BearerToken(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login", map[string]any{"Board": s.ws.Name()})
}

// login keeps a valid token in a cookie the page's scripts cannot read,
// sent to this site alone.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	token := strings.TrimSpace(r.PostFormValue("token"))
	af, _, err := s.ws.Access()
	if err == nil && af != nil {
		if _, ok := af.Authenticate(token); ok {
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: token, Path: "/", HttpOnly: true, Secure: s.tls,
				SameSite: http.SameSiteStrictMode, MaxAge: 30 * 24 * 3600})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
	}
	s.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Board": s.ws.Name(), "Failed": true})
}

func loopback(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return false
}

func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
