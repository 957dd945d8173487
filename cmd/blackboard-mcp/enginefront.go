package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// HTTP in front of the board's engine: `view` and `serve --http` listen
// where browsers and agents reach them, and the engine serves each
// request, over a connection of its own, with the board it holds.

// localAddrHeader carries, from the process in front to the engine, the
// address a request came in on: the endpoint refuses a foreign Host on a
// loopback address (DNS rebinding), as it does where it listens itself.
// The process in front always sets it, over whatever the client sent.
const localAddrHeader = "Blackboard-Mcp-Local-Addr"

// engineFront is an HTTP handler that passes every request to the board's
// engine.
type engineFront struct {
	proxy *httputil.ReverseProxy
	// gate checks an agent's request to serve --http's endpoint before
	// this process reads its body; nil for the page.
	gate *httpGate
	// streams is the context of the requests passed on: a stop cancels
	// it, which ends the event streams.
	streams context.Context
	stop    func()
}

// pageThroughEngine is the board's page as its engine makes it.
func pageThroughEngine(ctx context.Context, dir string, noSync bool, log *slog.Logger) (*engineFront, error) {
	return throughEngine(ctx, dir, noSync, engine.Hello{Version: version, Agent: agentName(), PID: os.Getpid(), Page: true}, log)
}

// endpointThroughEngine is serve --http's endpoint as the engine serves it.
func endpointThroughEngine(ctx context.Context, dir string, noSync bool, ep httpEndpoint, log *slog.Logger) (*engineFront, error) {
	raw, err := json.Marshal(ep)
	if err != nil {
		return nil, err
	}
	front, err := throughEngine(ctx, dir, noSync, engine.Hello{Version: version, Agent: agentName(), PID: os.Getpid(), Page: true, HTTP: raw}, log)
	if err != nil {
		return nil, err
	}
	// The engine checks each request again; this process checks it
	// first, to read no body a request without a token sends.
	front.gate = ep.gate(dir, func(c *fsstore.Caller) *fsstore.Caller { return c })
	return front, nil
}

// throughEngine is a handler whose requests the board's engine serves,
// starting one when none runs: each request goes to the engine over a
// connection of its own, and this process holds one more, so that the
// engine stays while it serves, and a new one starts should it die. It
// returns engine.ErrUnavailable (wrapped) when no engine can serve the
// board.
func throughEngine(ctx context.Context, dir string, noSync bool, hello engine.Hello, log *slog.Logger) (*engineFront, error) {
	place, err := engine.Locate(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	relay := &engine.Relay{
		Place:    place,
		Hello:    hello,
		Start:    func() error { return startEngine(place, noSync) },
		Log:      log,
		Patience: 15 * time.Second,
	}
	held, err := relay.Dial(ctx)
	if err != nil {
		return nil, err
	}
	log.Info("the board's engine serves the requests", "socket", place.Socket)
	go holdEngine(ctx, relay, held, log)
	streams, stop := context.WithCancel(context.WithoutCancel(ctx))
	return &engineFront{
		proxy: &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "engine"
				pr.Out.Host = pr.In.Host // the checks of origin compare it
				pr.Out.Header.Del(localAddrHeader)
				if local, ok := pr.In.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
					pr.Out.Header.Set(localAddrHeader, local.String())
				}
			},
			Transport:     relay.Transport(),
			FlushInterval: -1, // event streams
			ErrorLog:      slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				msg := "the board's engine did not answer: " + err.Error()
				if r.URL.Path == "/mcp" {
					writeRPCError(w, http.StatusBadGateway, codeRefused, msg) // an agent's
					return
				}
				http.Error(w, msg, http.StatusBadGateway) // a person's browser
			},
		},
		streams: streams,
		stop:    stop,
	}, nil
}

func (f *engineFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if f.gate != nil && r.URL.Path == "/mcp" {
		// An agent's request: checked as the endpoint checks it, before
		// its body is read, then read whole, in the time a client is
		// given for it (a slow client holds this process, not the
		// engine), to be sent again should the engine die under it.
		if r = f.gate.pass(w, r); r == nil || r.Method == http.MethodOptions {
			if r != nil {
				f.proxy.ServeHTTP(w, r) // a CORS preflight, answered by the engine
			}
			return
		}
		if r.ContentLength > maxRequestBytes {
			writeTooLarge(w)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
		_ = rc.SetReadDeadline(time.Time{})
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			writeTooLarge(w)
			return
		case err != nil:
			writeRPCError(w, http.StatusBadRequest, codeRefused, "bad request: the body could not be read: "+err.Error())
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	if isEventStream(r.Method, body) {
		// A stop ends event streams, which end only when their client
		// leaves; the other requests are answered first.
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(f.streams, cancel)()
		r = r.WithContext(ctx)
	}
	f.proxy.ServeHTTP(w, r)
}

// isEventStream reports whether a request asks for an event stream that lasts
// until its client leaves: a session's GET, or a subscriptions/listen.
func isEventStream(method string, body []byte) bool {
	if method == http.MethodGet {
		return true
	}
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(body, &m) == nil && m.Method == string(mcp.MethodSubscriptionsListen)
}

// holdEngine holds a connection to the engine until ctx ends: the engine
// stays while this process serves, and when it dies, the next is started
// at once.
func holdEngine(ctx context.Context, relay *engine.Relay, held net.Conn, log *slog.Logger) {
	closeOnEnd := func(c net.Conn) func() bool { return context.AfterFunc(ctx, func() { c.Close() }) }
	stop := closeOnEnd(held)
	for {
		_, _ = io.Copy(io.Discard, held) // until the engine closes it
		stop()
		held.Close()
		var err error
		for ctx.Err() == nil {
			if held, err = relay.Dial(ctx); err == nil {
				break
			}
			log.Warn("the board's engine cannot be reached", "err", err)
			time.Sleep(time.Second)
		}
		if ctx.Err() != nil {
			return
		}
		stop = closeOnEnd(held)
	}
}

// absolute is paths made absolute, those that cannot be left out.
func absolute(paths []string) []string {
	var abs []string
	for _, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			abs = append(abs, a)
		}
	}
	return abs
}
