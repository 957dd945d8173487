package web

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// People act from the page as agents do from their tools, through the one
// write path: a new note, a note's digest and body, a line appended, a
// link, a claim released, handed on or finished. Every form carries the
// version the person saw (expect), and the write is a compare-and-swap on
// it: when the note moved meanwhile, the page shows what changed since,
// with the person's text kept in the form, ready to merge and save again.
// The writes are authored by the person (the token's agent, or the local
// view's name) and marked as a person's in the commit (Blackboard-By).
//
// A form is posted to the page's own origin only: a POST that a browser
// says comes from another site is refused (http.CrossOriginProtection),
// besides the Origin check of guard, and the token's cookie is SameSite
// Strict. A token that may not write the note sees no form, and its
// writes are refused as its agent's would be.

// acting is a person's write that did not go through, for the page that
// shows it again: their text, and why.
type acting struct {
	Draft  draft
	Expect int    // the version the form writes against: the note's, as the page shows it
	Error  string // why the write was refused
	// Moved is set when the note moved on since the version the person
	// saw: Changes is what changed from it to the note as it is.
	Moved   bool
	Seen    int
	Changes []diffLine
	Form    string // the form that failed: edit, append, link, claim
}

// draft is what a person typed into a form.
type draft struct {
	Digest, Body, Text, Rel, Dst, ClaimFor string
}

// maxForm bounds a form's body: a note's content over 10 KB goes to its
// blob file, and a megabyte is more than a person types.
const maxForm = 4 << 20

// act serves POST /n/KEY: one of a note's forms.
func (s *Server) act(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	key := r.PathValue("key")
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read: "+err.Error(), http.StatusBadRequest)
		return
	}
	f := r.PostForm
	d := draft{Digest: f.Get("digest"), Body: crlf(f.Get("body")), Text: crlf(f.Get("text")), Rel: f.Get("rel"),
		Dst: f.Get("dst"), ClaimFor: f.Get("claim_for")}
	seen, err := strconv.Atoi(f.Get("expect"))
	if err != nil || seen < 1 {
		http.Error(w, "the form names no version of the note (expect)", http.StatusBadRequest)
		return
	}
	action := f.Get("action")
	switch action {
	case fsstore.ActEdit, fsstore.ActAppend, fsstore.ActLink, fsstore.ActClaim: // a new note is made at /new
	default:
		http.Error(w, "unknown action", http.StatusBadRequest)
		return
	}
	act := fsstore.Action{Kind: action, URI: key, Seen: seen, Digest: d.Digest, Body: d.Body, Text: d.Text,
		Rel: d.Rel, Dst: strings.Fields(d.Dst), Claim: f.Get("claim"), ClaimFor: d.ClaimFor}
	if hours, err := strconv.ParseFloat(f.Get("hours"), 64); err == nil && hours > 0 {
		act.Lease = time.Duration(hours * float64(time.Hour))
	}
	_, werr := v.Act(act)
	if werr == nil {
		http.Redirect(w, r, "/n/"+key, http.StatusSeeOther)
		return
	}
	s.refused(w, r, v, key, action, seen, d, werr)
}

// refused shows the note page again after a person's write failed: their
// text kept, why it failed, and, when the note moved on since they saw
// it, what changed.
func (s *Server) refused(w http.ResponseWriter, r *http.Request, v *fsstore.View, key, action string, seen int, d draft, err error) {
	act := &acting{Draft: d, Form: action, Seen: seen, Error: message(err)}
	status := statusOf(err)
	if status == http.StatusInternalServerError {
		s.log.Error("page write", "path", r.URL.Path, "err", err)
	}
	if errors.Is(err, fsstore.ErrConflict) {
		if changes, ok := changedSince(v, key, seen); ok {
			act.Moved, act.Changes = true, changes
		}
	}
	if errors.Is(err, fsstore.ErrNotFound) {
		s.fail(w, r, err)
		return
	}
	if !v.MayWrite(key) {
		// No form to show it in: the page says why alone.
		s.render(w, r, status, "error", page{Board: s.ws.Name(), Title: "not saved", Data: "Not saved: " + act.Error})
		return
	}
	s.notePage(w, r, v, status, act)
}

// changedSince is the line diff of the note's content from version seen to
// now; ok is false when either cannot be read.
func changedSince(v *fsstore.View, key string, seen int) ([]diffLine, bool) {
	then, now, err := v.Moved(key, seen)
	if err != nil {
		return nil, false
	}
	changes := lineDiff(then.Content, now.Content)
	if then.Digest != now.Digest {
		changes = append([]diffLine{{Op: "-", Text: "digest: " + then.Digest}, {Op: "+", Text: "digest: " + now.Digest}}, changes...)
	}
	return changes, true
}

// newNote serves GET /new (the form) and POST /new (a note created, with
// expect_version 0: never over one that exists).
func (s *Server) newNote(w http.ResponseWriter, r *http.Request, v *fsstore.View) {
	d := draft{}
	data := map[string]any{"Draft": &d, "CanWrite": true}
	if r.Method == http.MethodGet {
		topic := strings.Trim(r.URL.Query().Get("topic"), "/")
		if topic != "" {
			data["URI"] = topic + "/"
		}
		status := http.StatusOK
		if !v.MayWriteUnder(topic) {
			// A reader is offered no form, rather than one refused after
			// they typed.
			data["CanWrite"], status = false, http.StatusForbidden
		}
		s.render(w, r, status, "new", page{Board: s.ws.Name(), Title: "new note", Data: data})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read: "+err.Error(), http.StatusBadRequest)
		return
	}
	uri := strings.TrimSpace(r.PostForm.Get("uri"))
	d.Digest, d.Body = r.PostForm.Get("digest"), crlf(r.PostForm.Get("body"))
	data["URI"] = uri
	res, err := v.Act(fsstore.Action{Kind: fsstore.ActNew, URI: uri, Digest: d.Digest, Body: d.Body})
	if err == nil {
		http.Redirect(w, r, "/n/"+shortOf(res.URI), http.StatusSeeOther)
		return
	}
	if statusOf(err) == http.StatusInternalServerError {
		s.log.Error("page write", "path", r.URL.Path, "err", err)
	}
	data["Error"] = message(err)
	s.render(w, r, statusOf(err), "new", page{Board: s.ws.Name(), Title: "new note", Data: data})
}

// message is what a person is told of a refused write: the engine's own
// words, without the address it repeats.
func message(err error) string {
	var fe *fsstore.Error
	if errors.As(err, &fe) && fe.Msg != "" {
		return fe.Msg
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return fmt.Sprintf("the form is over %d bytes", tooBig.Limit)
	}
	return "the write failed; the server's log says why"
}

// statusOf is the HTTP status of a refused write.
func statusOf(err error) int {
	switch {
	case errors.Is(err, fsstore.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, fsstore.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, fsstore.ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, fsstore.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, fsstore.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// crlf is a textarea's text with a browser's CRLF line ends made LF, as
// the notes' files have them.
func crlf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }
