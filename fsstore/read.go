package fsstore

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// NoteView is a note as a reader sees it at the branch's head.
type NoteView struct {
	URI        string
	Version    int
	Digest     string
	Kind       string
	Author     string
	Updated    string
	Confidence *float64
	Sources    []string
	Links      map[string][]string
	Columns    []string
	// Content is the body or the table's TSV, inline even when stored out of
	// line. Empty unless asked for.
	Content   string
	Bytes     int
	EstTokens int
	// Problem says why the note's front matter cannot be read; the other
	// fields are then empty.
	Problem string
	// SupersededBy and ContradictedBy name present notes linking here.
	SupersededBy   []string
	ContradictedBy []string
	// The note's claim (README "Claiming work"): who holds it and until
	// when, and who finished the work and when.
	ClaimedBy, ClaimUntil, DoneBy, DoneAt string
	// Commit is the commit that made the version, for a past version named
	// by its address (topic/key@N); "" for the note as it is.
	Commit string
}

// Get reads one note at the branch's head; withContent also returns its body
// or table. A missing note is ErrNotFound. While the index is being built,
// the note is read from git, without backlinks, and without its version (0)
// when counting it would keep the caller waiting (noteFromGit). An address
// with @N reads version N of the note as the commit that made it left it
// (pastNote).
func (v *View) Get(uri string, withContent bool) (*NoteView, error) {
	w := v.w
	addr, version, err := w.reader.parseVersioned(uri)
	if err != nil {
		return nil, err
	}
	if version > 0 {
		n, commit, err := v.pastNote(addr, version)
		if err != nil {
			return nil, err
		}
		nv := v.noteView(n, w.reader.summaryOf(n, nil), withContent)
		nv.URI, nv.Commit = note.VersionedURI(addr, version), commit.String()
		return nv, nil
	}
	notFound := errorf("get", addr.String(), ErrNotFound, "no note at this address")
	if !v.c.CanRead(addr.Short()) {
		return nil, notFound // forbidden and missing look the same
	}
	var n index.Note
	var sum Summary
	_, err = w.reader.readAtHead(func(s *index.Snapshot) error {
		var err error
		if n, _, err = s.Note(addr.Short()); err != nil || !n.Present {
			return err
		}
		sum, err = v.summary(s, n)
		return err
	})
	if v.answersPartly(err) {
		n, err = v.noteFromGit(addr.Short())
		sum = w.reader.summaryOf(n, nil)
	}
	if err != nil {
		return nil, err
	}
	if !n.Present {
		return nil, notFound
	}
	nv := v.noteView(n, sum, withContent)
	nv.URI = addr.String()
	return nv, nil
}

// noteView is the present note n as the caller sees it, with its
// summary's backlinks; withContent adds its body or table.
func (v *View) noteView(n index.Note, sum Summary, withContent bool) *NoteView {
	nv := &NoteView{URI: sum.URI, Version: n.Version, Digest: n.Digest, Kind: n.Kind, Author: n.Author,
		Updated: n.Updated, Bytes: n.Bytes, EstTokens: n.EstTokens, Problem: n.Problem,
		SupersededBy: sum.SupersededBy, ContradictedBy: sum.ContradictedBy}
	nv.ClaimedBy, nv.ClaimUntil = claimOf(n)
	if n.Problem != "" {
		return nv
	}
	f, content, err := v.w.reader.loadNote(n)
	if err != nil {
		nv.Problem = err.Error()
		return nv
	}
	if c, ok := f.Confidence(); ok {
		nv.Confidence = &c
	}
	// Addresses the caller may not read are not shown, even as targets.
	nv.Sources = v.readable(f.Strs(note.KeySources))
	nv.Columns = f.Strs(note.KeyColumns)
	nv.DoneBy, nv.DoneAt = f.Str(note.KeyDoneBy), f.Str(note.KeyDoneAt)
	if rels, targets := f.Links(); len(rels) > 0 {
		for rel, t := range targets {
			if t = v.readable(t); len(t) > 0 {
				if nv.Links == nil {
					nv.Links = map[string][]string{}
				}
				nv.Links[rel] = t
			}
		}
	}
	if withContent {
		nv.Content = content
	}
	return nv
}

// pastNote is version of the note at addr (an address's @N) as the commit
// that made it left the note's files, read from git, with that version and
// that commit. A version the note never had is ErrNotFound naming the
// version it is at; so is one that deleted it.
func (v *View) pastNote(addr note.Address, version int) (index.Note, gitver.Hash, error) {
	w := v.w
	uri := note.VersionedURI(addr, version)
	if !v.c.CanRead(addr.Short()) {
		return index.Note{}, gitver.ZeroHash, errorf("get", uri, ErrNotFound, "no note at this address")
	}
	var e index.Event
	var total int
	var ok bool
	if _, err := w.reader.readAtHead(func(s *index.Snapshot) error {
		var err error
		e, total, ok, err = s.EventAt(addr.Short(), version)
		return err
	}); err != nil {
		return index.Note{}, gitver.ZeroHash, err
	}
	switch {
	case total == 0:
		return index.Note{}, gitver.ZeroHash, errorf("get", uri, ErrNotFound, "no note at this address")
	case !ok:
		return index.Note{}, gitver.ZeroHash, errorf("get", uri, ErrNotFound, "no version %d: the note is at version %d", version, total)
	}
	n, err := w.catch.NoteAt(e.Hash, addr.Short())
	if err != nil {
		return index.Note{}, gitver.ZeroHash, err
	}
	if !n.Present {
		return index.Note{}, gitver.ZeroHash, errorf("get", uri, ErrNotFound, "version %d deleted the note; it is at version %d", version, total)
	}
	n.Version = version
	return n, e.Hash, nil
}

// LogEntry is one commit in a note's provenance.
type LogEntry struct {
	Version int
	Commit  string
	Author  string
	Time    time.Time
	Subject string
	// Digest is the note's digest after the commit; "" when it was deleted
	// or its front matter could not be read.
	Digest  string
	Deleted bool
	// MovedFrom is the address the note was moved from by this commit.
	MovedFrom string
	// ByProgram is set for the program's own commits (tool writes and
	// people's edits it committed, which carry a Blackboard-Agent trailer);
	// for a person's own git commit, Subject is their message.
	ByProgram bool
	// SameAs is an earlier version whose content this commit brought back
	// (a person's `git checkout` of an old version), 0 when none. Only
	// the versions listed are compared.
	SameAs int
}

// Log lists the commits that changed a note, newest first: who, when, the
// digest after each, and what the commit says.
func (v *View) Log(uri string, limit int) ([]LogEntry, error) {
	w := v.w
	addr, err := w.reader.parseAddress(uri)
	if err != nil {
		return nil, err
	}
	if !v.c.CanRead(addr.Short()) {
		return nil, errorf("log", addr.String(), ErrNotFound, "no note has ever been at this address")
	}
	var events []index.Event
	_, err = w.reader.readAtHead(func(s *index.Snapshot) error {
		if events, err = s.History(addr.Short(), limit); err != nil {
			return err
		}
		for i, e := range events {
			if e.Closed {
				continue
			}
			// A commit of a merge's other side: its version and its note
			// file are its own, read from the graph and from git, not from
			// the commits the index orders before it.
			if events[i].Version, err = w.reader.versionAt(s, addr.Short(), e.Hash); err != nil {
				return err
			}
			if events[i].NoteBlob, err = w.repo.PathBlob(e.Hash, addr.NotePath()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(events) == 0 {
		return nil, errorf("log", addr.String(), ErrNotFound, "no note has ever been at this address")
	}
	out := make([]LogEntry, len(events))
	firstWith := map[gitver.Hash]int{} // note blob -> the oldest listed version holding it
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		le := LogEntry{Version: e.Version, Commit: e.Hash.String(), Author: e.Author,
			Time: time.Unix(e.Time, 0).UTC(), Subject: v.visibleSubject(e.Subject, e.ByProgram), Deleted: e.NoteBlob.IsZero(),
			ByProgram: e.ByProgram}
		if e.MovedFrom != "" && v.c.CanRead(e.MovedFrom) {
			le.MovedFrom = e.MovedFrom
		}
		if !le.Deleted {
			le.Digest = w.reader.digestOf(e.NoteBlob)
			if first, ok := firstWith[e.NoteBlob]; ok && i+1 < len(events) && events[i+1].NoteBlob != e.NoteBlob {
				le.SameAs = first
			} else if !ok {
				firstWith[e.NoteBlob] = e.Version
			}
		}
		out[i] = le
	}
	return out, nil
}

// Activity is a commit of the branch as a caller sees it: the notes it
// changed that the caller may read, by address.
type Activity struct {
	Cursor    int
	Commit    string
	Author    string
	Time      time.Time
	Subject   string
	ByProgram bool
	URIs      []string
}

// Activity lists what the last limit commits of the branch changed, newest
// first: only commits that changed a note the caller may read, and only
// those notes.
func (v *View) Activity(limit int) ([]Activity, error) {
	w := v.w
	var out []Activity
	_, err := w.reader.readAtHead(func(s *index.Snapshot) error {
		commits, err := s.Activity(limit)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, c := range commits {
			a := Activity{Cursor: c.Seq, Commit: c.Hash.String(), Author: c.Author, Time: time.Unix(c.Time, 0).UTC(),
				Subject: v.visibleSubject(c.Subject, c.ByProgram), ByProgram: c.ByProgram}
			for _, key := range c.Notes {
				if v.c.CanRead(key) {
					a.URIs = append(a.URIs, w.reader.uri(key))
				}
			}
			if len(a.URIs) > 0 {
				out = append(out, a)
			}
		}
		return nil
	})
	return out, err
}

// Link is a typed link between two notes, by address.
type Link struct {
	Src, Rel, Dst string
}

// Backlinks lists the present notes that link to uri, by relation and
// address: only the notes the caller may read.
func (v *View) Backlinks(uri string) ([]Link, error) {
	w := v.w
	addr, err := w.reader.parseAddress(uri)
	if err != nil {
		return nil, err
	}
	if !v.c.CanRead(addr.Short()) {
		return nil, errorf("read", addr.String(), ErrNotFound, "no such note")
	}
	var out []Link
	_, err = w.reader.readAtHead(func(s *index.Snapshot) error {
		back, err := s.Backlinks(addr.Short(), note.Relations...)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, b := range back {
			if v.c.CanRead(b.Src) {
				out = append(out, Link{Src: w.reader.uri(b.Src), Rel: b.Rel, Dst: addr.String()})
			}
		}
		return nil
	})
	return out, err
}

// LinksFrom returns the links of the notes uris (as List gives them) that
// the caller may see: only those to notes it may read, by note URI.
func (v *View) LinksFrom(uris []string) (map[string][]Link, error) {
	w := v.w
	keys := make([]string, 0, len(uris))
	for _, u := range uris {
		if addr, err := w.reader.parseAddress(u); err == nil && v.c.CanRead(addr.Short()) {
			keys = append(keys, addr.Short())
		}
	}
	out := map[string][]Link{}
	_, err := w.reader.readAtHead(func(s *index.Snapshot) error {
		links, err := s.LinksFrom(keys)
		if err != nil {
			return err
		}
		clear(out)
		for src, ls := range links {
			for _, l := range ls {
				if v.c.CanRead(l.Dst) {
					out[w.reader.uri(src)] = append(out[w.reader.uri(src)], Link{Src: w.reader.uri(src), Rel: l.Rel, Dst: w.reader.uri(l.Dst)})
				}
			}
		}
		return nil
	})
	return out, err
}

// visibleSubject is a commit's subject as the caller may see it. A subject
// can name other notes (a link's targets; a person's message, anything), so
// for a caller that may not read every topic the addresses it may not read
// are hidden, and a person's own message is left out.
func (v *View) visibleSubject(subject string, byProgram bool) string {
	if v.c.ReadsAll() {
		return subject
	}
	if !byProgram {
		return "(a commit made with git)"
	}
	words := strings.Fields(subject)
	for i, word := range words {
		if !strings.HasPrefix(word, "bb://") {
			continue
		}
		if a, err := v.w.reader.parseAddress(strings.TrimRight(word, ",.;:)")); err != nil || !v.c.CanRead(a.Short()) {
			words[i] = "(an address you may not read)"
		}
	}
	return strings.Join(words, " ")
}

// ContentAt is the note's content (its body, or its table as TSV) as the
// commit left it: one of the last maxContentAtLog commits that changed it,
// by the index (no other commit's files are read). A commit that deleted
// the note leaves none.
func (v *View) ContentAt(uri, commit string) (string, error) {
	w := v.w
	addr, err := w.reader.parseAddress(uri)
	if err != nil {
		return "", err
	}
	notFound := errorf("read", addr.String(), ErrNotFound, "no version of the note was made by commit %s", note.QuoteInput(commit))
	h, err := gitver.ParseHash(commit)
	if err != nil || !v.c.CanRead(addr.Short()) {
		return "", notFound
	}
	changed := false
	if _, err := w.reader.readAtHead(func(s *index.Snapshot) error {
		events, err := s.History(addr.Short(), maxContentAtLog)
		changed = slices.ContainsFunc(events, func(e index.Event) bool { return e.Hash == h })
		return err
	}); err != nil {
		return "", err
	}
	if !changed {
		return "", notFound
	}
	n := index.Note{}
	if n.NoteBlob, err = w.repo.PathBlob(h, addr.NotePath()); err != nil || n.NoteBlob.IsZero() {
		return "", err // deleted by that commit: no content
	}
	for _, p := range note.BlobFiles(addr.Short()) {
		b, err := w.repo.PathBlob(h, p)
		if err != nil {
			return "", err
		}
		if !b.IsZero() {
			n.ContentBlob = b
		}
	}
	_, content, err := w.reader.loadNote(n)
	return content, err
}

// maxContentAtLog bounds the commits ContentAt looks among.
const maxContentAtLog = 1000

// FormatConfidence renders a confidence for people.
func FormatConfidence(c float64) string { return strconv.FormatFloat(c, 'f', -1, 64) }

// EstimateTokens is the index's estimate of what reading n bytes of content
// costs a model (note.EstimateTokens).
func EstimateTokens(n int) int { return note.EstimateTokens(n) }
