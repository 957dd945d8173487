package web

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// markdown renders notes as GitHub does, but never a note's raw HTML or a
// link to javascript: (goldmark's defaults without WithUnsafe).
var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

var funcs = template.FuncMap{
	// next is the entry after i in a newest-first history: the version
	// before it; nil for the oldest.
	"next": func(h []fsstore.LogEntry, i int) *fsstore.LogEntry {
		if i+1 < len(h) {
			return &h[i+1]
		}
		return nil
	},
	"short": shortOf,
	// age says how long ago an RFC 3339 time was.
	"age": func(rfc3339 string) string {
		t, err := time.Parse(time.RFC3339, rfc3339)
		if err != nil {
			return rfc3339
		}
		return ago(t)
	},
	"ago": ago,
}

// ago says how long ago t was, in the largest unit that fits; a date
// beyond two days.
func ago(t time.Time) string {
	d := time.Since(t).Round(time.Second)
	switch {
	case d < time.Minute:
		return d.String() + " ago"
	case d < time.Hour:
		return d.Round(time.Minute).String() + " ago"
	case d < 48*time.Hour:
		return d.Round(time.Hour).String() + " ago"
	}
	return t.UTC().Format("2006-01-02")
}

// page is what every page template gets.
type page struct {
	Board, Title string
	Cursor       int
	Data         any
}

// render writes a page; a request for the main part alone (the live
// update's) gets that part.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	var b bytes.Buffer
	tmpl := name
	if r.Header.Get("X-Part") == "main" && s.pages.Lookup(name+"-main") != nil {
		tmpl = name + "-main"
	}
	if err := s.pages.ExecuteTemplate(&b, tmpl, data); err != nil {
		s.log.Error("page", "template", tmpl, "err", err)
		http.Error(w, "the page could not be made; the server's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	msg := "the board could not be read; the server's log says why"
	switch {
	case errors.Is(err, fsstore.ErrNotFound), errors.Is(err, fsstore.ErrForbidden):
		status, msg = http.StatusNotFound, "no such note or topic"
		var fe *fsstore.Error
		if errors.As(err, &fe) && strings.Contains(r.PathValue("key"), note.VersionMark) {
			// A past version (key@N): the engine's words say which version
			// the note is at, or the same as for a missing note when the
			// reader may not see it.
			msg = fe.Msg
		}
	case errors.Is(err, fsstore.ErrInvalid):
		status, msg = http.StatusBadRequest, "not an address of this board"
	default:
		s.log.Error("page", "path", r.URL.Path, "err", err)
	}
	s.render(w, r, status, "error", page{Board: s.ws.Name(), Title: msg, Data: msg})
}

func (s *Server) board(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	counts, err := v.TopicCounts()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	recent, err := v.List(fsstore.ListOptions{Limit: 50})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows, err := withLinks(v, recent.Notes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "board", page{Board: s.ws.Name(), Title: s.ws.Name(), Cursor: recent.Cursor,
		Data: map[string]any{"Topics": counts, "Recent": rows, "CanWrite": v.MayWriteUnder("")}})
}

// noteRow is a listed note with the links it makes.
type noteRow struct {
	fsstore.Summary
	Links []fsstore.Link
	// Ready marks a task that can be taken now, on a topic page of a task
	// list (markReady).
	Ready bool
}

// withLinks gives each listed note its links, in one look at the index.
func withLinks(v *fsstore.View, notes []fsstore.Summary) ([]noteRow, error) {
	uris := make([]string, len(notes))
	for i, n := range notes {
		uris[i] = n.URI
	}
	links, err := v.LinksFrom(uris)
	if err != nil {
		return nil, err
	}
	rows := make([]noteRow, len(notes))
	for i, n := range notes {
		rows[i] = noteRow{Summary: n, Links: links[n.URI]}
	}
	return rows, nil
}

// markReady marks the rows that can be taken now (list_keys with
// open=true: not done, no claim held, every dependency done) when they are
// a task list: one of them is claimed, or depends on a note of its topic.
// Elsewhere (findings, plans) nothing is marked: every such note would be.
func markReady(v *fsstore.View, topic string, rows []noteRow) error {
	tasks := false
	for _, r := range rows {
		sameTopic := func(l fsstore.Link) bool {
			return l.Rel == "depends_on" && topicOf(l.Dst) == topicOf(r.URI)
		}
		tasks = tasks || r.ClaimedBy != "" || slices.ContainsFunc(r.Links, sameTopic)
	}
	if !tasks {
		return nil
	}
	open, err := v.List(fsstore.ListOptions{Topic: topic, Limit: fsstore.MaxListLimit, Open: true})
	if err != nil {
		return err
	}
	ready := map[string]bool{}
	for _, n := range open.Notes {
		ready[n.URI] = true
	}
	for i := range rows {
		rows[i].Ready = ready[rows[i].URI]
	}
	return nil
}

// topicOf is the topic of a note's address (bb://board/topic/key...).
func topicOf(uri string) string {
	_, rest, _ := strings.Cut(strings.TrimPrefix(uri, "bb://"), "/")
	t, _, _ := strings.Cut(rest, "/")
	return t
}

// crumb is one step of the way from the board down to a topic.
type crumb struct{ Name, Path string }

func (s *Server) topic(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	t := strings.Trim(r.PathValue("topic"), "/")
	folders, err := v.Folders(t)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	l, err := v.List(fsstore.ListOptions{Topic: t, Limit: 200})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(l.Notes) == 0 && len(folders) == 0 {
		s.fail(w, r, fsstore.ErrNotFound)
		return
	}
	rows, err := withLinks(v, l.Notes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := markReady(v, t, rows); err != nil {
		s.fail(w, r, err)
		return
	}
	var crumbs []crumb
	segs := strings.Split(t, "/")
	for i, seg := range segs[:len(segs)-1] {
		crumbs = append(crumbs, crumb{seg, strings.Join(segs[:i+1], "/")})
	}
	for i := range folders {
		folders[i].Topic = strings.TrimPrefix(folders[i].Topic, t+"/")
	}
	s.render(w, r, http.StatusOK, "topic", page{Board: s.ws.Name(), Title: t, Cursor: l.Cursor,
		Data: map[string]any{"Topic": t, "Name": segs[len(segs)-1], "Crumbs": crumbs, "Folders": folders,
			"Notes": rows, "Omitted": l.Omitted, "CanWrite": v.MayWriteUnder(t)}})
}

func (s *Server) note(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	s.notePage(w, r, v, http.StatusOK, nil)
}

// notePage renders the note the path names with status; act, when not
// nil, is a person's write that did not go through, shown with their text
// kept (write.go).
func (s *Server) notePage(w http.ResponseWriter, r *http.Request, v *fsstore.View, status int, act *acting) {
	// key@N is version N of the note, as the commit that made it left it;
	// its history, links and diffs are the note's.
	asked := r.PathValue("key")
	n, err := v.Get(asked, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	key, _, _ := strings.Cut(asked, note.VersionMark)
	history, err := v.Log(key, 100)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := template.HTML("")
	var table [][]string
	if len(n.Columns) > 0 {
		for _, line := range strings.Split(strings.TrimRight(n.Content, "\n"), "\n") {
			table = append(table, strings.Split(line, "\t"))
		}
	} else {
		var b bytes.Buffer
		if err := markdown.Convert([]byte(n.Content), &b); err != nil {
			s.fail(w, r, err)
			return
		}
		body = template.HTML(b.String()) //nolint:gosec // goldmark without WithUnsafe: raw HTML and dangerous links are not rendered
	}
	var diff []diffLine
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	if from != "" && to != "" {
		a, err := v.ContentAt(key, from)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		b, err := v.ContentAt(key, to)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		diff = lineDiff(a, b)
	}
	back, err := v.Backlinks(key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var out []fsstore.Link
	for rel, dsts := range n.Links {
		for _, d := range dsts {
			out = append(out, fsstore.Link{Src: n.URI, Rel: rel, Dst: d})
		}
	}
	var rels []string
	for rel := range n.Links {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	cursor, _ := s.ws.Cursor()
	past := n.Commit != ""
	if act == nil {
		act = &acting{Draft: draft{Digest: n.Digest, Body: n.Content}}
	}
	act.Expect = n.Version
	s.render(w, r, status, "note", page{Board: s.ws.Name(), Title: key, Cursor: cursor,
		Data: map[string]any{"Key": key, "Past": past, "Note": n, "Body": body, "Table": table, "Rels": rels, "History": history,
			"Diff": diff, "From": from, "To": to, "Graph": graph(n.URI, out, back), "Back": back,
			"CanWrite": !past && v.MayWrite(key), "Act": act, "Relations": note.Relations}})
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	var hits []fsstore.Hit
	if q != "" {
		var err error
		if hits, _, err = v.Search(q, r.URL.Query().Get("topic"), 50); err != nil && !errors.Is(err, fsstore.ErrInvalid) {
			s.fail(w, r, err)
			return
		}
	}
	cursor, _ := s.ws.Cursor()
	s.render(w, r, http.StatusOK, "search", page{Board: s.ws.Name(), Title: "search: " + q, Cursor: cursor,
		Data: map[string]any{"Q": q, "Hits": hits}})
}

func (s *Server) activity(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	commits, err := v.Activity(200)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cursor, _ := s.ws.Cursor()
	s.render(w, r, http.StatusOK, "activity", page{Board: s.ws.Name(), Title: "activity", Cursor: cursor, Data: commits})
}
