package tools

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Notes are MCP resources too: a host lists them, shows them and attaches
// them (Claude Code's @-mentions) without a tool call and without a token
// of tool surface. resources/list pages through the notes the caller may
// read, newest change first; resources/read gives a note as Markdown with
// its front matter (a table as TSV); the template bb://<workspace>/{topic}/{+key}
// completes topics and keys, and bb://<workspace>/{topic}/{+key}@{version}
// reads one past version of a note; and a subscriber hears
// notifications/resources/updated within a second of any change to the
// note, whoever made it, and notifications/resources/list_changed when
// notes it may read appear or go. Everything is scoped by the caller as the
// tools are.

const (
	// resourcePage is how many notes one resources/list page holds.
	resourcePage = 100
	// completionMax is the most values completion/complete may send.
	completionMax = 100
	// boardPollEvery is how often the board's branch is looked at for
	// changes to tell subscribers of: one ref read.
	boardPollEvery = 200 * time.Millisecond

	// surfaceTTL is how long a client may keep the tools and the
	// templates; pastVersionTTL, a past version of a note (its answer is
	// private: a token decides who may read it).
	surfaceTTL     = 10 * time.Minute
	pastVersionTTL = 24 * time.Hour

	mimeMarkdown = "text/markdown"
	mimeTSV      = "text/tab-separated-values"
)

// resourceOptions are the server options resources need.
func (s *Server) resourceOptions() []server.ServerOption {
	hooks := &server.Hooks{}
	hooks.AddAfterListResources(s.listResources)
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcp.SubscribeRequest, _ *mcp.EmptyResult) {
		s.watchers.subscribe(ctx, s, req.Params.URI, false)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcp.UnsubscribeRequest, _ *mcp.EmptyResult) {
		s.watchers.unsubscribe(ctx, s, req.Params.URI)
	})
	// From protocol 2026-07-28 a client subscribes in its
	// subscriptions/listen request instead. Over HTTP that request has a
	// session of its own, known to no table, that ends with its stream.
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, _ any, req *mcp.SubscriptionsListenRequest) {
		for _, uri := range req.Params.Notifications.ResourceSubscriptions {
			s.watchers.subscribe(ctx, s, uri, true)
		}
		if req.Params.Notifications.ResourcesListChanged {
			s.watchers.lister(ctx, s, true)
		}
		if session := server.ClientSessionFromContext(ctx); session != nil && session.SessionID() == "" {
			go func() {
				<-ctx.Done()
				s.watchers.forget(session)
			}()
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		s.watchers.forget(session)
	})
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, _ *mcp.SetLevelRequest, _ *mcp.EmptyResult) {
		s.watchers.setLogs(ctx, s)
	})
	// A past version (topic/key@N) never changes: it may be kept.
	hooks.AddAfterReadResource(func(_ context.Context, _ any, req *mcp.ReadResourceRequest, res *mcp.ReadResourceResult) {
		if res != nil && strings.Contains(req.Params.URI, note.VersionMark) {
			res.SetCacheHints(pastVersionTTL.Milliseconds(), mcp.CacheScopePrivate)
		}
	})
	return []server.ServerOption{
		// How long a client of 2026-07-28 on may keep an answer (ttlMs):
		// a note and the board's list of notes only until they change, so
		// not at all without asking again (0, the default); the tools and
		// the templates of addresses, which are the same for every caller,
		// as long as a server runs unchanged.
		server.WithMethodCacheHints(mcp.MethodToolsList, surfaceTTL.Milliseconds(), mcp.CacheScopePublic),
		server.WithMethodCacheHints(mcp.MethodResourcesTemplatesList, surfaceTTL.Milliseconds(), mcp.CacheScopePublic),
		server.WithLogging(),
		server.WithResourceCapabilities(true, true),
		server.WithCompletions(),
		server.WithResourceCompletionProvider(completer{s}),
		server.WithHooks(hooks),
	}
}

// addResourceTemplate registers the notes' templates, a note as it is and
// one version of it; reads of any note go through them.
func (s *Server) addResourceTemplate() {
	ws := s.ws.Name()
	t := mcp.NewResourceTemplate(note.URI(ws, "{topic}/{+key}"), "note",
		mcp.WithTemplateDescription("A note of the "+ws+" blackboard: Markdown with its front matter (a table note as TSV)."),
		mcp.WithTemplateMIMEType(mimeMarkdown))
	s.mcp.AddResourceTemplate(t, s.readResource)
	past := mcp.NewResourceTemplate(note.URI(ws, "{topic}/{+key}"+note.VersionMark+"{version}"), "note version",
		mcp.WithTemplateDescription("Version N of a note of the "+ws+" blackboard, as the commit that made it left it."),
		mcp.WithTemplateMIMEType(mimeMarkdown))
	s.mcp.AddResourceTemplate(past, s.readResource)
}

// listResources fills a resources/list answer: mcp-go lists only resources
// registered in advance, and the board's are its notes.
func (s *Server) listResources(ctx context.Context, _ any, req *mcp.ListResourcesRequest, res *mcp.ListResourcesResult) {
	v := s.view(ctx)
	s.watchers.lister(ctx, s, false)
	opts := fsstore.ListOptions{Limit: resourcePage}
	if req.Params.Cursor != "" {
		after, err := decodeResourceCursor(string(req.Params.Cursor))
		if err != nil {
			res.Resources, res.NextCursor = []mcp.Resource{}, ""
			return
		}
		opts.After = after
	}
	l, err := v.List(opts)
	if err != nil {
		s.log.Error("resources/list", "err", err)
		res.Resources, res.NextCursor = []mcp.Resource{}, ""
		return
	}
	res.Resources = make([]mcp.Resource, 0, len(l.Notes))
	for _, n := range l.Notes {
		key := s.short(n.URI)
		// A table note reads as TSV; the listing cannot tell it from the
		// index, so it says what most notes are.
		r := mcp.NewResource(n.URI, key, mcp.WithResourceDescription(n.Digest), mcp.WithMIMEType(mimeMarkdown))
		size := int64(n.Bytes)
		r.Size = &size
		if n.Updated != "" {
			r.Annotations = &mcp.Annotations{LastModified: n.Updated}
		}
		res.Resources = append(res.Resources, r)
	}
	res.NextCursor = ""
	if l.Omitted > 0 && len(l.Notes) > 0 {
		last := l.Notes[len(l.Notes)-1]
		res.NextCursor = mcp.Cursor(encodeResourceCursor(index.Position{Seq: last.Seq, Key: s.short(last.URI)}))
	}
}

func encodeResourceCursor(p index.Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(p.Seq) + " " + p.Key))
}

func decodeResourceCursor(c string) (*index.Position, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, err
	}
	seq, key, ok := strings.Cut(string(b), " ")
	n, err := strconv.Atoi(seq)
	if !ok || err != nil || key == "" {
		return nil, errors.New("invalid cursor")
	}
	return &index.Position{Seq: n, Key: key}, nil
}

// NoteReadable reports whether resources/read of uri finds a note the
// caller of ctx may read: the transports answer "resource not found"
// (-32002) themselves when it does not, as the MCP library would report the
// read's failure as an internal error.
func (s *Server) NoteReadable(ctx context.Context, uri string) bool {
	if uri == ViewURI {
		return true // the view's HTML, the same for every caller
	}
	// From the index alone: the read that follows loads the note itself.
	res, _, err := s.view(ctx).Summaries([]string{uri})
	return err == nil && res[0].Err == nil
}

// readResource reads one note for resources/read.
func (s *Server) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	n, err := s.view(ctx).Get(uri, true)
	switch {
	case errors.Is(err, fsstore.ErrNotFound), errors.Is(err, fsstore.ErrInvalid):
		return nil, fmt.Errorf("%w: %s", server.ErrResourceNotFound, uri)
	case err != nil:
		s.log.Error("resources/read", "uri", uri, "err", err)
		return nil, errors.New("internal: the note could not be read")
	}
	if len(n.Columns) > 0 {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: n.URI, MIMEType: mimeTSV, Text: n.Content}}, nil
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: n.URI, MIMEType: mimeMarkdown, Text: noteMarkdown(n)}}, nil
}

// noteMarkdown is the note as a file would hold it: front matter, then the
// body (inline even when stored out of line), and its version. Only what
// the caller may see is in it: sources and links to hidden notes are left
// out, as the tools leave them out.
func noteMarkdown(n *fsstore.NoteView) string {
	f := note.New()
	set := func(k string, v any) {
		if err := f.Set(k, v); err != nil {
			f.Body = append(f.Body, "("+k+" cannot be shown: "+err.Error()+")\n"...)
		}
	}
	set("digest", n.Digest)
	if n.Kind != "" {
		set("kind", n.Kind)
	}
	if n.Author != "" {
		set("author", n.Author)
	}
	if n.Updated != "" {
		set("updated", n.Updated)
	}
	if n.Confidence != nil {
		set("confidence", *n.Confidence)
	}
	if len(n.Sources) > 0 {
		set("sources", n.Sources)
	}
	if len(n.Links) > 0 {
		set("links", n.Links)
	}
	if n.Version > 0 { // 0: read from git while the index is being built
		set("version", n.Version)
	}
	if n.Commit != "" {
		set("commit", n.Commit)
	}
	if n.Problem != "" {
		set("problem", n.Problem)
	}
	f.Body = append(f.Body, n.Content...)
	b, err := f.Render()
	if err != nil {
		return n.Content
	}
	return string(b)
}

// completer completes the template's topic and key for the caller.
type completer struct{ s *Server }

func (c completer) CompleteResourceArgument(ctx context.Context, _ string, arg mcp.CompleteArgument,
	cctx mcp.CompleteContext) (*mcp.Completion, error) {
	v := c.s.view(ctx)
	var values []string
	switch arg.Name {
	case "topic":
		topics, err := v.Topics()
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			if strings.HasPrefix(t, strings.ToLower(arg.Value)) {
				values = append(values, t)
			}
		}
	case "key":
		topic := cctx.Arguments["topic"]
		if topic == "" {
			return &mcp.Completion{Values: []string{}}, nil
		}
		l, err := v.List(fsstore.ListOptions{Topic: topic, ByName: true, Limit: fsstore.MaxListLimit,
			KeyPrefix: topic + "/" + strings.ToLower(arg.Value)})
		if errors.Is(err, fsstore.ErrInvalid) {
			return &mcp.Completion{Values: []string{}}, nil
		}
		if err != nil {
			return nil, err
		}
		for _, n := range l.Notes {
			values = append(values, strings.TrimPrefix(c.s.short(n.URI), topic+"/"))
		}
	}
	out := &mcp.Completion{Values: values, Total: len(values)}
	if len(values) > completionMax {
		out.Values, out.HasMore = values[:completionMax], true
	}
	if out.Values == nil {
		out.Values = []string{}
	}
	return out, nil
}

// watchers are the sessions that asked to hear of changes: subscribers of
// notes, and sessions that listed resources (they hear list_changed).
type watchers struct {
	mu sync.Mutex
	// sessions are keyed by sessionKey.
	sessions map[any]*watcher
	logging  int // sessions with logs set
}

// sessionKey is what a session's watcher is kept under: its id, which
// every request of the session carries (over HTTP each may come with a
// session value of its own), or, for one without (a subscriptions/listen
// stream of the stateless revisions over HTTP), the session itself.
func sessionKey(session server.ClientSession) any {
	if id := session.SessionID(); id != "" {
		return id
	}
	return session
}

type watcher struct {
	session server.ClientSession // where its notifications go (notify)
	caller  *fsstore.Caller
	// since is the branch when the session began to watch, until it first
	// hears of changes: it hears of those made after it, not of those the
	// board's watch had yet to look at (a session of a shared engine may
	// come a moment after another made changes).
	since gitver.Hash
	lists bool            // it listed resources
	logs  bool            // it asked for log lines (logging/setLevel)
	uris  map[string]bool // canonical addresses it subscribed to
}

// get is the watcher of ctx's session, made if it has none. A request of
// the stateless revisions (2026-07-28 on) over HTTP has a session of its
// own, without an id, that ends with the request: only its
// subscriptions/listen (listening) watches, until the stream ends.
func (w *watchers) get(ctx context.Context, s *Server, listening bool) *watcher {
	session := server.ClientSessionFromContext(ctx)
	if session == nil || session.SessionID() == "" && !listening {
		return nil
	}
	if w.sessions == nil {
		w.sessions = map[any]*watcher{}
	}
	x := w.sessions[sessionKey(session)]
	if x == nil {
		x = &watcher{session: session, caller: s.callerOf(ctx), uris: map[string]bool{}}
		x.since, _ = s.ws.BranchHead()
		w.sessions[sessionKey(session)] = x
	}
	return x
}

func (w *watchers) subscribe(ctx context.Context, s *Server, uri string, listening bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.get(ctx, s, listening); x != nil {
		if canonical, ok := s.canonical(uri); ok {
			x.uris[canonical] = true
		}
	}
}

func (w *watchers) unsubscribe(ctx context.Context, s *Server, uri string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.get(ctx, s, false); x != nil {
		if canonical, ok := s.canonical(uri); ok {
			delete(x.uris, canonical)
		}
	}
}

func (w *watchers) lister(ctx context.Context, s *Server, listening bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.get(ctx, s, listening); x != nil {
		x.lists = true
	}
}

// anyone reports whether some session may hear of changes.
func (w *watchers) anyone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sessions) > 0
}

func (w *watchers) forget(session server.ClientSession) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.sessions[sessionKey(session)]; x != nil && x.logs {
		w.logging--
	}
	delete(w.sessions, sessionKey(session))
}

// notice is what to send for one change of the board.
type notice struct {
	session server.ClientSession
	updated []string // addresses
	listed  bool
}

// notices decides who hears of changes: a subscriber of a note it may read
// that changed, a lister when a note it may read appeared or went.
func (w *watchers) notices(s *Server, ch fsstore.NoteChanges, last, head gitver.Hash) []notice {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []notice
	for _, x := range w.sessions {
		n := notice{session: x.session}
		ch := ch
		if !x.since.IsZero() && x.since != last {
			if ch, _ = s.ws.ChangesBetween(x.since, head); ch.Empty() {
				x.since = gitver.ZeroHash
				continue
			}
		}
		x.since = gitver.ZeroHash
		for _, list := range [][]string{ch.Updated, ch.Added, ch.Removed} {
			for _, key := range list {
				uri := s.ws.URI(key)
				if x.uris[uri] && x.caller.CanRead(key) {
					n.updated = append(n.updated, uri)
				}
			}
		}
		if x.lists {
			for _, list := range [][]string{ch.Added, ch.Removed} {
				for _, key := range list {
					n.listed = n.listed || x.caller.CanRead(key)
				}
			}
		}
		if len(n.updated) > 0 || n.listed {
			out = append(out, n)
		}
	}
	return out
}

// canonical is the full address of uri (full or short) in this workspace.
func (s *Server) canonical(uri string) (string, bool) {
	a, err := note.ParseAddress(uri, s.ws.Name())
	if err != nil {
		return "", false
	}
	return a.String(), true
}

// short is a note's address without scheme and workspace (topic/key...).
func (s *Server) short(uri string) string {
	return strings.TrimPrefix(uri, note.URI(s.ws.Name(), ""))
}

// WatchBoard tells subscribers of changes until ctx ends: it looks at the
// board's branch every boardPollEvery, and when it moved (a write of any
// process, a person's save once committed, a pull), sends
// notifications/resources/updated for each subscribed note that changed
// and notifications/resources/list_changed when notes came or went.
func (s *Server) WatchBoard(ctx context.Context) {
	last, err := s.ws.BranchHead()
	if err != nil {
		s.log.Warn("watching the board for resource subscribers", "err", err)
	}
	t := time.NewTicker(boardPollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		head, err := s.ws.BranchHead()
		if err != nil || head == last {
			continue
		}
		if !s.watchers.anyone() {
			last = head // no one to tell: no diff to make
			continue
		}
		ch, err := s.ws.ChangesBetween(last, head)
		if err != nil {
			s.log.Warn("changes for resource subscribers", "err", err)
			last = head
			continue
		}
		from := last
		last = head
		for _, n := range s.watchers.notices(s, ch, from, head) {
			for _, uri := range n.updated {
				s.notify(n.session, mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
			}
			if n.listed {
				s.notify(n.session, mcp.MethodNotificationResourcesListChanged, nil)
			}
		}
	}
}

// notify sends one notification; a session gone or blocked misses it (a
// log line about it would itself be sent to sessions).
func (s *Server) notify(session server.ClientSession, method string, params map[string]any) {
	if id := session.SessionID(); id != "" {
		_ = s.mcp.SendNotificationToSpecificClient(id, method, params)
		return
	}
	// A subscriptions/listen stream over HTTP, which no table of the
	// library's holds: its stream takes what its channel carries.
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: method, Params: mcp.NotificationParams{AdditionalFields: params}}}
	select {
	case session.NotificationChannel() <- n:
	default:
	}
}
