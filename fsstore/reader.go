package fsstore

import (
	"errors"
	"fmt"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// noteReader reads the notes as the derived index and git hold them, for
// the views and the builders of writes: addresses parsed against the
// board's name, the index brought to the branch before a read, a note's
// summary, its version at a commit, a blob's digest, a note's file with
// its content.
type noteReader struct {
	name  string
	repo  *gitver.Repo
	idx   *index.DB
	catch *catchup.Catcher
	logf  func(format string, args ...any)
}

// parseAddress reads s as an address of this workspace (note.ParseAddress);
// a malformed one is an *Error of kind ErrInvalid that quotes the grammar.
func (r *noteReader) parseAddress(s string) (note.Address, error) {
	a, err := note.ParseAddress(s, r.name)
	return a, fromFormat(err)
}

// parseVersioned reads an address that may name one version of its note
// (note.ParseVersioned): version is 0 when it names none.
func (r *noteReader) parseVersioned(s string) (a note.Address, version int, err error) {
	a, version, err = note.ParseVersioned(s, r.name)
	return a, version, fromFormat(err)
}

// parseTopic reads a topic or topic prefix (note.ParseTopic).
func (r *noteReader) parseTopic(s string) ([]string, error) {
	segs, err := note.ParseTopic(s, r.name)
	return segs, fromFormat(err)
}

func (r *noteReader) uri(key string) string { return note.URI(r.name, key) }

func (r *noteReader) summaryOf(n index.Note, back []index.Backlink) Summary {
	sum := Summary{URI: r.uri(n.Key), Version: n.Version, Seq: n.LastSeq, Digest: n.Digest, Kind: n.Kind, Author: n.Author,
		Updated: n.Updated, Bytes: n.Bytes, EstTokens: n.EstTokens, Problem: n.Problem}
	sum.ClaimedBy, sum.ClaimUntil = claimOf(n)
	for _, link := range back {
		switch link.Rel {
		case "supersedes":
			sum.SupersededBy = append(sum.SupersededBy, r.uri(link.Src))
		case "contradicts":
			sum.ContradictedBy = append(sum.ContradictedBy, r.uri(link.Src))
		}
	}
	return sum
}

// versionAt is a note's version at commit c on the commit graph: the
// number of commits c reaches that changed it (SPEC 4), the number a write
// that made c was acknowledged at, whatever merges came after. For a
// commit on the branch's first-parent line that is its place in the
// index's order; a commit of a merge's other side reaches fewer, and its
// own history is walked from git down to the first-parent line, whose
// commits reach exactly those before them.
func (r *noteReader) versionAt(s *index.Snapshot, key string, c gitver.Hash) (int, error) {
	upTo := 0
	var more []int
	seen := map[gitver.Hash]bool{}
	for stack := []gitver.Hash{c}; len(stack) > 0; {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		at, ok, err := s.CommitOf(h)
		if err != nil || !ok {
			return 0, errors.Join(err, fmt.Errorf("commit %s is not in the derived index", h.Short()))
		}
		if at.Closed {
			upTo = max(upTo, at.Seq)
			continue
		}
		more = append(more, at.Seq)
		info, err := r.repo.ReadCommit(h)
		if err != nil {
			return 0, err
		}
		stack = append(stack, info.Parents...)
	}
	return s.VersionAt(key, upTo, more)
}

// digestOf reads the digest of a note file's blob, "" when unreadable.
func (r *noteReader) digestOf(blob gitver.Hash) string {
	raw, err := r.repo.ReadBlob(blob)
	if err != nil {
		return ""
	}
	f, err := note.Parse(raw)
	if err != nil {
		return ""
	}
	return f.Str(note.KeyDigest)
}

// loadNote reads a note's file and content from git.
func (r *noteReader) loadNote(n index.Note) (*note.File, string, error) {
	raw, err := r.repo.ReadBlob(n.NoteBlob)
	if err != nil {
		return nil, "", err
	}
	f, err := note.Parse(raw)
	if err != nil {
		return nil, "", err
	}
	if !n.ContentBlob.IsZero() && f.Str(note.KeyBlob) != "" {
		content, err := r.repo.ReadBlob(n.ContentBlob)
		if err != nil {
			return nil, "", err
		}
		return f, f.ContentWith(content), nil
	}
	return f, string(f.Body), nil
}

// readAtHead runs fn on the derived index caught up to the branch, and
// returns the cursor there. While the index is too far behind to wait for
// (fsstore/internal/catchup), it is ErrUnavailable, saying how far the
// build in the background has come. When the index cannot be caught up
// because the disk is full (the writes that filled it moved the branch,
// and their catch-up could not be committed), the catch-up is made for
// this read alone and never written (index.DB.ReadAhead): reads keep
// answering from git while writes are refused.
func (r *noteReader) readAtHead(fn func(s *index.Snapshot) error) (int, error) {
	_, cursor, err := r.catch.CatchUp(nil, nil)
	if err == nil {
		return cursor, r.idx.Read(fn)
	}
	if !index.IsFull(err) {
		return 0, err
	}
	r.logf("the derived index cannot catch up, the disk is full: reads catch up in memory, one at a time")
	err = r.idx.ReadAhead(func(tx *index.Tx) error {
		_, cursor, err = r.catch.SyncToBranch(tx, nil)
		return err
	}, fn)
	return cursor, err
}
