package fsstore

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/pipeline"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Write limits the engine adds to the format's (note's).
const (
	maxSources   = 100
	maxKindBytes = 64
)

// UpdateRequest is one write of a note. Exactly one content form is set:
// Body, Columns with Rows, AppendText, or AppendRows.
type UpdateRequest struct {
	URI    string
	Digest string

	Body *string
	// SourcePath names a file under the source roots that the server reads
	// as the body, with an extractive summary stored and returned.
	SourcePath string
	Columns    []string
	Rows       [][]string
	AppendText *string
	AppendRows [][]string

	// ExpectVersion is the compare-and-swap: the version the writer last
	// saw, 0 to create. Nil writes unconditionally (with a warning), except
	// for appends, which never need it.
	ExpectVersion *int
	Sources       []string
	Confidence    *float64
	Kind          string

	// Fields are more front-matter fields to set, by name: what a note
	// brought from another tool keeps (the board's own fields are refused).
	Fields map[string]any
	// Links replace the note's typed links (rel -> targets) when not nil.
	Links map[string][]string

	// Claim takes (or renews) the caller's claim on the note for Lease
	// (ClaimTake), releases it (ClaimRelease), or marks the work done
	// (ClaimDone); "" leaves the claim as it is. A claim needs no content
	// form and no digest: the note keeps its own.
	Claim string
	Lease time.Duration
	// ClaimFor hands the claim to another agent (with ClaimTake): only a
	// person does that, from the page, over whoever holds it.
	ClaimFor string
}

// agentName is the shape of an agent's name a claim is handed to.
var agentName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// The claims a write may make (UpdateRequest.Claim).
const (
	ClaimTake    = "take"
	ClaimRelease = "release"
	ClaimDone    = "done"
)

// A claim's lease: how long it holds when the claimer gives no time, and
// the longest it may hold before it is renewed.
const (
	DefaultLease = 10 * time.Minute
	MaxLease     = 24 * time.Hour
)

// UpdateResult is what a write reports.
type UpdateResult struct {
	URI      string
	Version  int
	Digest   string
	Warnings []string
	// Summary describes a source_path file that was stored.
	Summary string
	// Unfinished is a failure past the write's commit point: the write is
	// committed and acknowledged (a warning says so), and the next write
	// finishes what did not (its files, git's index, the derived index).
	// It is for the operator's log; the agent has the warning.
	Unfinished error
	// Unchanged says the note already held what the write asked (its
	// author and time aside): no commit, and Version is the note's.
	Unchanged bool
}

func (r *UpdateRequest) forms() int {
	n := 0
	for _, set := range []bool{r.Body != nil, r.SourcePath != "", r.Columns != nil || r.Rows != nil, r.AppendText != nil, r.AppendRows != nil} {
		if set {
			n++
		}
	}
	return n
}

func (r *UpdateRequest) isAppend() bool { return r.AppendText != nil || r.AppendRows != nil }

// Update writes a note as one commit, after committing any edit a person made
// to it by hand, and only if its version is still ExpectVersion.
func (v *View) Update(req UpdateRequest) (*UpdateResult, error) {
	w := v.w
	op := "update"
	switch {
	case req.Claim == ClaimTake:
		op = "claim"
	case req.Claim != "":
		op = req.Claim // release, done
	case req.isAppend():
		op = "append"
	}
	addr, err := w.reader.parseAddress(req.URI)
	if err != nil {
		return nil, err
	}
	uri := addr.String()
	if !v.c.CanWrite(addr.Short()) {
		return nil, errorf(op, uri, ErrForbidden, "you may not write topic %s", addr.Topic())
	}
	// A claim keeps the note's digest unless it gives one, and so does a
	// person's append from the page: the digest is read under the write
	// lock, so a digest written meanwhile is kept too.
	keepsDigest := req.Claim != "" || req.isAppend() && v.c.person
	digest := ""
	if !keepsDigest || strings.TrimSpace(req.Digest) != "" {
		if digest, err = cleanDigest(op, uri, req.Digest); err != nil {
			return nil, err
		}
	}
	if err := checkUpdate(op, uri, &req); err != nil {
		return nil, err
	}
	var sources []string
	for _, s := range req.Sources {
		a, err := w.reader.parseAddress(s)
		if err != nil {
			return nil, errorf(op, uri, ErrInvalid, "source %s", errMsg(err)).Because(err)
		}
		if !slices.Contains(sources, a.String()) {
			sources = append(sources, a.String())
		}
	}
	summary := ""
	if req.SourcePath != "" {
		content, sum, err := w.readSource(op, uri, req.SourcePath, v.c.sources)
		if err != nil {
			return nil, err
		}
		body := string(content)
		req.Body, req.SourcePath, summary = &body, "", sum
	}
	var res *UpdateResult
	attempt := func(tx *pipeline.Tx) error {
		if version, done, err := v.writtenAs(tx); err != nil || done {
			res = &UpdateResult{URI: uri, Version: version, Digest: digest}
			return err
		}
		res, err = v.updateLocked(tx, op, addr, digest, sources, summary, &req)
		return err
	}
	err = w.pipe.Submit(v.c.Name, op, uri, attempt, func(failed error) {
		if warning, ok := unfinished(&fail.Unfinished{Err: failed}, res.Version); ok {
			res.Warnings, res.Unfinished = append(res.Warnings, warning), failed
		}
	})
	return res, err
}

func checkUpdate(op, uri string, req *UpdateRequest) error {
	switch n := req.forms(); {
	case n > 1 || n == 0 && req.Claim == "":
		return errorf(op, uri, ErrInvalid, "give exactly one content form: body, source_path, columns with rows, or append (got %d)", n)
	case n == 1 && req.isAppend() && req.Claim != "":
		return errorf(op, uri, ErrInvalid, "a claim is not made with append; give body, columns with rows, or no content")
	}
	switch req.Claim {
	case "", ClaimTake, ClaimRelease, ClaimDone:
	default:
		return errorf(op, uri, ErrInvalid, "claim must be %s, %s or %s", ClaimTake, ClaimRelease, ClaimDone)
	}
	if req.ClaimFor != "" && (req.Claim != ClaimTake || !agentName.MatchString(req.ClaimFor)) {
		return errorf(op, uri, ErrInvalid, "claim_for names the agent a claim is taken for: 1 to 64 letters, digits, '.', '_' or '-'")
	}
	if req.Lease != 0 && (req.Claim != ClaimTake || req.Lease < time.Second || req.Lease > MaxLease) {
		return errorf(op, uri, ErrInvalid, "lease is for claim %s: 1 to %d seconds", ClaimTake, int(MaxLease.Seconds()))
	}
	if req.ExpectVersion != nil && *req.ExpectVersion < 0 {
		return errorf(op, uri, ErrInvalid, "expect_version must be 0 (create) or a version the note had")
	}
	if req.Confidence != nil && (math.IsNaN(*req.Confidence) || *req.Confidence < 0 || *req.Confidence > 1) {
		return errorf(op, uri, ErrInvalid, "confidence must be between 0 and 1")
	}
	if len(req.Sources) > maxSources {
		return errorf(op, uri, ErrTooLarge, "at most %d sources", maxSources)
	}
	for name := range req.Fields {
		if !extraFieldName(name) {
			return errorf(op, uri, ErrInvalid, "the field %q is not one a note can carry: a lower-case name of letters, digits and _, not one of the board's own", name)
		}
	}
	for rel := range req.Links {
		if !note.ValidRelation(rel) {
			return errorf(op, uri, ErrInvalid, "rel must be one of %s", strings.Join(note.Relations, ", "))
		}
	}
	if req.Kind != "" {
		if len(req.Kind) > maxKindBytes || strings.ContainsAny(req.Kind, ":#") ||
			strings.IndexFunc(req.Kind, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
			return errorf(op, uri, ErrInvalid, "kind is one word of at most %d bytes (finding, plan, decision...)", maxKindBytes)
		}
	}
	size := 0
	if req.Body != nil {
		size = len(*req.Body)
	}
	if req.AppendText != nil {
		size = len(*req.AppendText)
	}
	if size > note.MaxContentBytes {
		return errorf(op, uri, ErrTooLarge, "content is %d bytes; a note holds at most %d", size, note.MaxContentBytes)
	}
	if req.Columns != nil || req.Rows != nil {
		if why, kind := note.CheckTable(req.Columns, req.Rows); kind != nil {
			return errorf(op, uri, kind, "%s", why)
		}
	}
	if req.AppendRows != nil {
		switch {
		case len(req.AppendRows) == 0:
			return errorf(op, uri, ErrInvalid, "append at least one row")
		case len(req.AppendRows) > note.MaxRows:
			return errorf(op, uri, ErrTooLarge, "append at most %d rows; a table has at most %d", note.MaxRows, note.MaxRows)
		}
	}
	return nil
}

// cleanDigest folds a digest to one line and checks it.
func cleanDigest(op, uri, d string) (string, error) {
	d = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' ' // line breaks, tabs, NUL: a digest is one line of text
		}
		return r
	}, d)
	d = strings.Join(strings.Fields(d), " ")
	if d == "" {
		return "", errorf(op, uri, ErrInvalid, "a digest is required: one line saying what the note holds, so others can decide without reading it")
	}
	if len(d) > note.MaxDigestBytes {
		return "", errorf(op, uri, ErrTooLarge, "the digest is %d bytes, over the limit of %d; a digest is one line, best under %d characters",
			len(d), note.MaxDigestBytes, note.DigestWarnChars)
	}
	return d, nil
}

// updateLocked builds the write of req in tx: checked against the note's
// version where tx builds, and made one commit unless it changes nothing.
// The caller holds the write lock.
func (v *View) updateLocked(tx *pipeline.Tx, op string, addr note.Address, digest string, sources []string, summary string,
	req *UpdateRequest) (*UpdateResult, error) {
	w, agent := v.w, v.c.Name
	uri, key := addr.String(), addr.Short()
	cur, err := tx.NoteIn(key)
	if err != nil {
		return nil, err
	}
	if !v.c.CanRead(key) {
		cur.Digest, cur.LastAuthor = "", "" // a conflict must not show what the caller may not read
	}
	var warnings []string
	if !req.isAppend() {
		switch {
		case req.ExpectVersion == nil:
		case *req.ExpectVersion == 0 && cur.Present:
			return nil, conflict(op, uri, cur, "the note already exists")
		case *req.ExpectVersion > 0 && !cur.Present:
			if cur.Version > 0 {
				return nil, conflict(op, uri, cur, "the note was deleted")
			}
			return nil, errorf(op, uri, ErrConflict, "the note does not exist; pass expect_version 0 to create it")
		case *req.ExpectVersion > 0 && *req.ExpectVersion != cur.Version:
			return nil, conflict(op, uri, cur, fmt.Sprintf("you expected version %d", *req.ExpectVersion))
		}
	}

	f := note.New()
	var content, before string
	var isTable bool
	if cur.Present {
		old, oldContent, err := w.reader.loadNote(cur)
		switch {
		case err == nil:
			f, content, isTable = old, oldContent, old.IsTable()
		case req.isAppend():
			return nil, errorf(op, uri, ErrInvalid, "cannot append: %v; fix the file or rewrite the note with body", err).Because(err)
		}
	}
	before = content
	switch {
	case req.Body != nil:
		content, isTable = *req.Body, false
		f.Remove(note.KeyColumns)
	case req.Columns != nil || req.Rows != nil:
		content, isTable = note.EncodeTable(req.Columns, req.Rows), true
	case req.AppendText != nil:
		if isTable {
			return nil, errorf(op, uri, ErrInvalid, "the note is a table: append rows, not text")
		}
		content = note.Append(content, *req.AppendText)
	case req.AppendRows != nil:
		if !cur.Present || !isTable {
			return nil, errorf(op, uri, ErrInvalid, "append rows needs an existing table note; create it with columns and rows first")
		}
		cols := f.Strs(note.KeyColumns)
		if why, kind := note.CheckTable(cols, req.AppendRows); kind != nil {
			return nil, errorf(op, uri, kind, "%s", why)
		}
		var rows strings.Builder
		note.EncodeRows(&rows, req.AppendRows)
		content = note.Append(content, rows.String())
	}
	if len(content) > note.MaxContentBytes {
		return nil, errorf(op, uri, ErrTooLarge, "the note would hold %d bytes; at most %d", len(content), note.MaxContentBytes)
	}
	if isTable {
		if _, rows := note.DecodeTable(content); len(rows) > note.MaxRows {
			return nil, errorf(op, uri, ErrTooLarge, "a table has at most %d rows", note.MaxRows)
		}
	}

	if digest == "" { // a claim, or a person's append, keeps the note's digest
		if digest = f.Str(note.KeyDigest); digest == "" || !cur.Present {
			return nil, errorf(op, uri, ErrInvalid, "a digest is required: one line saying what the note holds, so others can decide without reading it")
		}
	}
	version := cur.Version + 1
	now := time.Now().UTC().Truncate(time.Second)
	// New notes get their keys in the documented order: digest, kind,
	// author, updated, then the optional ones.
	fields := [][2]any{{note.KeyDigest, digest}}
	switch {
	case req.Kind != "":
		fields = append(fields, [2]any{note.KeyKind, req.Kind})
	case f.Str(note.KeyKind) == "":
		fields = append(fields, [2]any{note.KeyKind, "note"})
	}
	fields = append(fields, [2]any{note.KeyAuthor, agent}, [2]any{note.KeyUpdated, now})
	if req.Confidence != nil {
		fields = append(fields, [2]any{note.KeyConfidence, *req.Confidence})
	}
	if len(sources) > 0 {
		fields = append(fields, [2]any{note.KeySources, sources})
	}
	if req.Columns != nil || req.Rows != nil {
		fields = append(fields, [2]any{note.KeyColumns, req.Columns})
	}
	switch {
	case summary != "":
		fields = append(fields, [2]any{note.KeySummary, summary})
	case !req.isAppend():
		f.Remove(note.KeySummary) // it described content that is now replaced
	}
	// A write that leaves the note as it is (its author and time aside)
	// makes no commit: git would hold no new version of it, so none is
	// acknowledged. The stamps are set once the note is known to change.
	stamps := map[string]bool{note.KeyAuthor: true, note.KeyUpdated: true}
	compare := cur.Present
	for _, kv := range fields {
		if compare && stamps[kv[0].(string)] {
			continue // set below, once the note is known to change
		}
		if err := f.Set(kv[0].(string), kv[1]); err != nil {
			return nil, err
		}
	}
	if err := w.setExtras(f, req); err != nil {
		return nil, err
	}
	if err := setClaim(f, req, v.c, op, uri, cur); err != nil {
		return nil, err
	}
	if compare {
		if !f.Changed() && content == before {
			return v.unchanged(uri, digest, cur, req), nil
		}
		for _, kv := range fields {
			if stamps[kv[0].(string)] {
				if err := f.Set(kv[0].(string), kv[1]); err != nil {
					return nil, err
				}
			}
		}
	}
	changes, outOfLine, err := w.placeContent(f, addr, content, isTable, cur)
	if err != nil {
		return nil, err
	}
	rendered, err := f.Render()
	if err != nil {
		return nil, err
	}
	changes = append(changes, commits.Change{Path: addr.NotePath(), Content: rendered})
	msg := note.WriteMessage(op, addr, version, digest, agent)
	msg.Person, msg.WriteID = v.c.person, v.writeID
	if committed, err := tx.Commit(changes, w.agentSignature(agent), msg.String()); err != nil {
		return nil, err
	} else if !committed {
		return v.unchanged(uri, digest, cur, req), nil
	}

	if req.ExpectVersion == nil && !req.isAppend() {
		warnings = append(warnings, fmt.Sprintf("no expect_version: pass expect_version %d on your next write of this note", version))
	}
	if n := len([]rune(digest)); n > note.DigestWarnChars {
		warnings = append(warnings, fmt.Sprintf("the digest is %d characters; under %d keeps every read cheap", n, note.DigestWarnChars))
	}
	if outOfLine != "" {
		warnings = append(warnings, fmt.Sprintf("content is %d bytes, stored out of line in %s; reads return it inline", len(content), outOfLine))
	}
	var unfinishedErr error
	missing, err := v.missing(tx, sources)
	if err != nil {
		// A check of the sources that failed is the operator's to read,
		// not a reason to refuse the write.
		unfinishedErr = fmt.Errorf("check the sources: %w", err)
	}
	for _, m := range missing {
		warnings = append(warnings, "source "+m+" does not exist")
	}
	return &UpdateResult{URI: uri, Version: version, Digest: digest, Warnings: warnings, Summary: summary,
		Unfinished: unfinishedErr}, nil
}

// unchanged is the answer to a write that found the note as it asked: no
// commit, the note's version, and a warning that says so.
func (v *View) unchanged(uri, digest string, cur index.Note, req *UpdateRequest) *UpdateResult {
	warnings := []string{fmt.Sprintf("unchanged: the note already holds this; nothing was written, it stays at version %d", cur.Version)}
	if req.ExpectVersion == nil && !req.isAppend() {
		warnings = append(warnings, fmt.Sprintf("no expect_version: pass expect_version %d on your next write of this note", cur.Version))
	}
	return &UpdateResult{URI: uri, Version: cur.Version, Digest: digest, Warnings: warnings, Unchanged: true}
}

// placeContent decides where content lives: inline in the note's body, or,
// over note.BlobThreshold bytes, in the sibling blob file committed with the note.
// It returns the blob-file changes and the blob's name when out of line.
func (w *Workspace) placeContent(f *note.File, addr note.Address, content string, isTable bool,
	cur index.Note) ([]commits.Change, string, error) {
	ext := "md"
	if isTable {
		ext = "tsv"
	}
	var changes []commits.Change
	blobPath := addr.BlobPath(ext)
	out := ""
	if len(content) > note.BlobThreshold {
		out = addr.BlobName(ext)
		if err := f.Set(note.KeyBlob, out); err != nil {
			return nil, "", err
		}
		if err := f.Set(note.KeyBytes, len(content)); err != nil {
			return nil, "", err
		}
		f.Body = nil
		changes = append(changes, commits.Change{Path: blobPath, Content: []byte(content)})
	} else {
		f.Remove(note.KeyBlob)
		f.Remove(note.KeyBytes)
		f.Body = []byte(content)
	}
	// A blob file the note no longer uses goes, in the same commit.
	for _, e := range []string{"md", "tsv"} {
		p := addr.BlobPath(e)
		if (out == "" || e != ext) && cur.ContentPath == p {
			changes = append(changes, commits.Change{Path: p, Deleted: true})
		}
	}
	return changes, out, nil
}

func conflict(op, uri string, cur index.Note, why string) *Error {
	e := errorf(op, uri, ErrConflict, "%s; the note is at version %d, written by %s: %q. Read it, then write again with expect_version %d",
		why, cur.Version, cur.LastAuthor, cur.Digest, cur.Version)
	if cur.LastAuthor == "" && cur.Digest == "" {
		e = errorf(op, uri, ErrConflict, "%s; the note is at version %d", why, cur.Version)
	}
	if !cur.Present {
		e = errorf(op, uri, ErrConflict, "%s at version %d by %s; pass expect_version 0 to create it again",
			why, cur.Version, cur.LastAuthor)
	}
	e.Conflict = &ConflictInfo{Version: cur.Version, Author: cur.LastAuthor, Digest: cur.Digest}
	return e
}

// missing returns the addresses among uris that name no present note the
// caller may read (forbidden and missing look the same), where tx builds:
// from the derived index, or from git while the index is being built.
func (v *View) missing(tx *pipeline.Tx, uris []string) ([]string, error) {
	w := v.w
	var out []string
	err := w.idx.Read(func(s *index.Snapshot) error {
		at, _, err := s.Head()
		if err != nil {
			return err
		}
		for _, u := range uris {
			a, err := w.reader.parseAddress(u)
			if err != nil {
				out = append(out, u)
				continue
			}
			present := false
			if at == tx.Head() {
				n, ok, err := s.Note(a.Short())
				if err != nil {
					return err
				}
				present = ok && n.Present
			} else {
				blob, err := w.repo.PathBlob(tx.Head(), a.NotePath())
				if err != nil {
					return err
				}
				present = !blob.IsZero()
			}
			if !present || !v.c.CanRead(a.Short()) {
				out = append(out, u)
			}
		}
		return nil
	})
	if tx.Base() != tx.Head() && err == nil {
		// A note an earlier write of the batch made is there for this
		// write.
		out = slices.DeleteFunc(out, func(u string) bool {
			a, err := w.reader.parseAddress(u)
			if err != nil || !v.c.CanRead(a.Short()) {
				return false
			}
			n, err := tx.ChainNote(a.Short())
			return err == nil && n.Present
		})
	}
	return out, err
}

// Link adds typed links from src to each of dsts, stored in src's front
// matter (deduplicated) as one commit. A missing dst is a warning.
func (v *View) Link(src, rel string, dsts []string) (*UpdateResult, error) {
	return v.LinkSeen(src, rel, dsts, nil)
}

// LinkSeen is Link with a compare-and-swap: expect, when not nil, is the
// version of src the writer saw (a person's page), and the link is a
// conflict when src moved on since.
func (v *View) LinkSeen(src, rel string, dsts []string, expect *int) (*UpdateResult, error) {
	w := v.w
	const op = "link"
	addr, err := w.reader.parseAddress(src)
	if err != nil {
		return nil, err
	}
	uri := addr.String()
	if !v.c.CanWrite(addr.Short()) {
		return nil, errorf(op, uri, ErrForbidden, "you may not write topic %s", addr.Topic())
	}
	if !note.ValidRelation(rel) {
		return nil, errorf(op, uri, ErrInvalid, "rel must be one of %s", strings.Join(note.Relations, ", "))
	}
	if len(dsts) == 0 || len(dsts) > maxSources {
		return nil, errorf(op, uri, ErrInvalid, "give 1 to %d destinations", maxSources)
	}
	var targets []string
	for _, d := range dsts {
		a, err := w.reader.parseAddress(d)
		if err != nil {
			return nil, errorf(op, uri, ErrInvalid, "destination %s", errMsg(err)).Because(err)
		}
		if !slices.Contains(targets, a.String()) {
			targets = append(targets, a.String())
		}
	}
	var res *UpdateResult
	attempt := func(tx *pipeline.Tx) error {
		if version, done, err := v.writtenAs(tx); err != nil || done {
			res = &UpdateResult{URI: uri, Version: version}
			return err
		}
		res, err = v.linkLocked(tx, addr, rel, targets, expect)
		return err
	}
	err = w.pipe.Submit(v.c.Name, op, uri, attempt, func(failed error) {
		if warning, ok := unfinished(&fail.Unfinished{Err: failed}, res.Version); ok {
			res.Warnings, res.Unfinished = append(res.Warnings, warning), failed
		}
	})
	return res, err
}

// linkLocked builds the link write in tx. The caller holds the write lock.
func (v *View) linkLocked(tx *pipeline.Tx, addr note.Address, rel string, targets []string, expect *int) (*UpdateResult, error) {
	w, agent := v.w, v.c.Name
	const op = "link"
	uri, key := addr.String(), addr.Short()
	cur, err := tx.NoteIn(key)
	if err != nil {
		return nil, err
	}
	if !cur.Present {
		return nil, errorf(op, uri, ErrNotFound, "no note at this address to link from")
	}
	if expect != nil && *expect != cur.Version {
		return nil, conflict(op, uri, cur, fmt.Sprintf("you expected version %d", *expect))
	}
	f, _, err := w.reader.loadNote(cur)
	if err != nil {
		return nil, errorf(op, uri, ErrInvalid, "cannot link: %v; fix the file first", err).Because(err)
	}
	rels, existing := f.Links()
	added := false
	for _, t := range targets {
		if !slices.Contains(existing[rel], t) {
			existing[rel] = append(existing[rel], t)
			added = true
		}
	}
	var warnings []string
	missing, err := v.missing(tx, targets)
	if err != nil {
		return nil, err
	}
	for _, m := range missing {
		warnings = append(warnings, "link target "+m+" does not exist yet")
	}
	if !added {
		return &UpdateResult{URI: uri, Version: cur.Version, Digest: cur.Digest,
			Warnings: append(warnings, "every link already existed: nothing written")}, nil
	}
	if !slices.Contains(rels, rel) {
		rels = append(rels, rel)
	}
	if err := f.SetLinks(rels, existing); err != nil {
		return nil, err
	}
	rendered, err := f.Render()
	if err != nil {
		return nil, err
	}
	version := cur.Version + 1
	msg := note.WriteMessage("link", addr, version, rel+" "+strings.Join(targets, " "), agent)
	msg.Person, msg.WriteID = v.c.person, v.writeID
	changes := []commits.Change{{Path: addr.NotePath(), Content: rendered}}
	if committed, err := tx.Commit(changes, w.agentSignature(agent), msg.String()); err != nil {
		return nil, err
	} else if !committed {
		return &UpdateResult{URI: uri, Version: cur.Version, Digest: cur.Digest,
			Warnings: append(warnings, "every link already existed: nothing written")}, nil
	}
	return &UpdateResult{URI: uri, Version: version, Digest: cur.Digest, Warnings: warnings}, nil
}

// extraFieldName reports whether name may be set through Fields.
func extraFieldName(name string) bool {
	if name == "" || len(name) > 64 || note.IsOwnKey(name) || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// setExtras sets req's more fields, in name order, and its links.
func (w *Workspace) setExtras(f *note.File, req *UpdateRequest) error {
	names := make([]string, 0, len(req.Fields))
	for name := range req.Fields {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := f.Set(name, req.Fields[name]); err != nil {
			return errorf("update", "", ErrInvalid, "the field %s cannot be written: %v", name, err)
		}
	}
	if req.Links == nil {
		return nil
	}
	var rels []string
	targets := map[string][]string{}
	for _, rel := range note.Relations {
		for _, t := range req.Links[rel] {
			a, err := w.reader.parseAddress(t)
			if err != nil {
				return errorf("update", "", ErrInvalid, "link target %s", errMsg(err)).Because(err)
			}
			if !slices.Contains(targets[rel], a.String()) {
				targets[rel] = append(targets[rel], a.String())
			}
		}
		if len(targets[rel]) > 0 {
			rels = append(rels, rel)
		}
	}
	if len(rels) == 0 {
		f.Remove(note.KeyLinks)
		return nil
	}
	return f.SetLinks(rels, targets)
}

// setClaim makes req's claim in f, for the caller. A claim someone else
// holds (not lapsed) is taken, released or finished by no other agent: that
// is a conflict that names the holder, whatever expect_version says, so
// that of agents racing for one task without it exactly one wins too. A
// person (the page) may release, finish or hand on any claim: their
// expect_version says they saw who holds it.
func setClaim(f *note.File, req *UpdateRequest, caller *Caller, op, uri string, cur index.Note) error {
	if req.Claim == "" {
		return nil
	}
	if req.ClaimFor != "" && !caller.person {
		return errorf(op, uri, ErrInvalid, "only a person hands a claim to another agent (claim_for)")
	}
	agent := caller.Name
	if req.ClaimFor != "" {
		agent = req.ClaimFor
	}
	now := time.Now().UTC()
	c := f.Claim()
	switch {
	case c.DoneBy != "":
		return conflict(op, uri, cur, "the work is done (done_by "+c.DoneBy+")")
	case c.HeldAt(now) && c.By != agent && !caller.person:
		return conflict(op, uri, cur, fmt.Sprintf("%s holds the claim until %s", c.By, c.Until.Format(time.RFC3339)))
	}
	f.Remove(note.KeyClaimedBy)
	f.Remove(note.KeyClaimUntil)
	switch req.Claim {
	case ClaimTake:
		lease := req.Lease
		if lease == 0 {
			lease = DefaultLease
		}
		// The end is rounded up to the second: a lease never ends early.
		until := now.Add(lease).Truncate(time.Second)
		if until.Before(now.Add(lease)) {
			until = until.Add(time.Second)
		}
		if err := f.Set(note.KeyClaimedBy, agent); err != nil {
			return err
		}
		return f.Set(note.KeyClaimUntil, until)
	case ClaimDone:
		if err := f.Set(note.KeyDoneBy, agent); err != nil {
			return err
		}
		return f.Set(note.KeyDoneAt, now.Truncate(time.Second))
	}
	return nil
}

// unfinished reports whether err is a failure past the commit point, and
// says so to the writer in a warning.
func unfinished(err error, version int) (warning string, ok bool) {
	var u *fail.Unfinished
	if !errors.As(err, &u) {
		return "", false
	}
	return fmt.Sprintf("version %d is committed, but putting it in place did not finish (the server's log says why); "+
		"the next write finishes it, so do not write it again", version), true
}
