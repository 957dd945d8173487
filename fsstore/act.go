package fsstore

import (
	"strconv"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// People act on the board from the page (cmd/internal/web) and from the
// board's view inside an agent's host (tools, board_act): the same actions,
// each one write through the one write path, authored by the caller and
// marked as a person's, under the version the person saw. Act is the one
// place that turns an action into that write; the page and the view only
// carry it.

// The actions a person takes (Action.Kind).
const (
	ActNew    = "new"    // a note that does not exist yet
	ActEdit   = "edit"   // its digest and body
	ActAppend = "append" // a line after whatever the note holds
	ActLink   = "link"   // typed links to other notes
	ActClaim  = "claim"  // take (for ClaimFor), release or finish its claim
)

// Action is one thing a person does to a note.
type Action struct {
	Kind string
	URI  string
	// Seen is the version the person saw: the write's expect_version. A
	// new note expects none; an append never conflicts.
	Seen         int
	Digest, Body string        // ActNew, ActEdit
	Text         string        // ActAppend
	Rel          string        // ActLink
	Dst          []string      // ActLink
	Claim        string        // ActClaim: ClaimTake, ClaimRelease or ClaimDone
	ClaimFor     string        // ActClaim with ClaimTake: the agent given the claim
	Lease        time.Duration // ActClaim with ClaimTake; 0 for the default
}

// Act makes a person's action as the caller, marked as a person's.
func (v *View) Act(a Action) (*UpdateResult, error) {
	p := v.w.As(v.c.AsPerson())
	seen := a.Seen
	switch a.Kind {
	case ActNew:
		zero := 0
		return p.Update(UpdateRequest{URI: a.URI, Digest: a.Digest, Body: &a.Body, ExpectVersion: &zero})
	case ActEdit:
		return p.Update(UpdateRequest{URI: a.URI, Digest: a.Digest, Body: &a.Body, ExpectVersion: &seen})
	case ActAppend:
		text := strings.TrimRight(a.Text, "\n") + "\n"
		return p.Update(UpdateRequest{URI: a.URI, AppendText: &text})
	case ActLink:
		return p.LinkSeen(a.URI, a.Rel, a.Dst, &seen)
	case ActClaim:
		req := UpdateRequest{URI: a.URI, Claim: a.Claim, ExpectVersion: &seen}
		if a.Claim == ClaimTake {
			req.ClaimFor, req.Lease = strings.TrimSpace(a.ClaimFor), a.Lease
		}
		return p.Update(req)
	}
	return nil, errorf("act", "", ErrInvalid, "an action is %s, %s, %s, %s or %s", ActNew, ActEdit, ActAppend, ActLink, ActClaim)
}

// Moved is the note at uri as the person saw it, at version seen, and as
// it is now: what a refused action shows them changed since.
func (v *View) Moved(uri string, seen int) (then, now *NoteView, err error) {
	if then, err = v.Get(uri+note.VersionMark+strconv.Itoa(seen), true); err != nil {
		return nil, nil, err
	}
	if now, err = v.Get(uri, true); err != nil {
		return nil, nil, err
	}
	return then, now, nil
}
