package tools

import (
	"errors"
	"strconv"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Read modes.
const (
	modeRef    = "ref"
	modeDigest = "digest"
	modeFields = "fields"
	modeTable  = "table"
	modeFull   = "full"
)

// defaultFields are what mode=fields returns when no fields are named.
var defaultFields = []string{"kind", "author", "updated", "confidence", "sources", "links"}

// knownFields are the fields a read may ask for.
var knownFields = map[string]bool{"kind": true, "author": true, "updated": true, "confidence": true,
	"sources": true, "links": true, "columns": true, "digest": true, "est_tokens": true, "bytes": true,
	"superseded_by": true, "contradicted_by": true, "claimed_by": true, "claim_until": true, "done_by": true, "done_at": true}

func checkFields(fields []string) error {
	for _, f := range fields {
		if !knownFields[f] {
			return invalid("unknown field %q; fields are kind, author, updated, confidence, sources, links, columns, digest, est_tokens, bytes, superseded_by, contradicted_by, claimed_by, claim_until, done_by, done_at", f)
		}
	}
	return nil
}

// summaryItem is the digest-mode item: enough to decide whether to read.
func summaryItem(s *fsstore.Summary) orderedItem {
	item := orderedItem{}
	item.add("uri", s.URI)
	item.addVersion(s.Version)
	item.addCommit(s.Commit)
	if s.Problem != "" {
		item.add("problem", s.Problem)
		return item
	}
	item.add("digest", s.Digest)
	item.add("est_tokens", s.EstTokens)
	addBacklinks(&item, s.SupersededBy, s.ContradictedBy)
	return item
}

func addBacklinks(item *orderedItem, superseded, contradicted []string) {
	if len(superseded) > 0 {
		item.add("superseded_by", superseded)
	}
	if len(contradicted) > 0 {
		item.add("contradicted_by", contradicted)
	}
}

// fieldValue returns a note field by name, and whether it has a value.
func fieldValue(n *fsstore.NoteView, f string) (any, bool) {
	switch f {
	case "kind":
		return n.Kind, n.Kind != ""
	case "author":
		return n.Author, n.Author != ""
	case "updated":
		return n.Updated, n.Updated != ""
	case "confidence":
		if n.Confidence == nil {
			return nil, false
		}
		return *n.Confidence, true
	case "sources":
		return n.Sources, len(n.Sources) > 0
	case "links":
		return n.Links, len(n.Links) > 0
	case "columns":
		return n.Columns, len(n.Columns) > 0
	case "digest":
		return n.Digest, true
	case "est_tokens":
		return n.EstTokens, true
	case "bytes":
		return n.Bytes, true
	case "superseded_by":
		return n.SupersededBy, len(n.SupersededBy) > 0
	case "contradicted_by":
		return n.ContradictedBy, len(n.ContradictedBy) > 0
	case "claimed_by":
		return n.ClaimedBy, n.ClaimedBy != ""
	case "claim_until":
		return n.ClaimUntil, n.ClaimUntil != ""
	case "done_by":
		return n.DoneBy, n.DoneBy != ""
	case "done_at":
		return n.DoneAt, n.DoneAt != ""
	}
	return nil, false
}

// orderedItem keeps the keys of an item in the order they were added, so
// every item reads uri, version first.
type orderedItem struct {
	keys []string
	vals []any
}

func (o *orderedItem) add(k string, v any) {
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// addVersion adds a present note's version; 0, a note read from git while
// the index is being built (which alone counts versions), is left out.
func (o *orderedItem) addVersion(v int) {
	if v > 0 {
		o.add("version", v)
	}
}

// addCommit adds the commit that made a past version the caller named by
// its address (topic/key@N), abbreviated as git abbreviates on a large
// repository; nothing for a note as it is.
func (o *orderedItem) addCommit(commit string) {
	if commit != "" {
		o.add("commit", commit[:min(len(commit), shortCommit)])
	}
}

// shortCommit is how many hex digits of a commit an item gives.
const shortCommit = 12

// versionCell is a version in table mode: empty when unknown (addVersion).
func versionCell(v int) string {
	if v > 0 {
		return strconv.Itoa(v)
	}
	return ""
}

// json encodes the item with its keys in insertion order.
func (o *orderedItem) json() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := marshal(k)
		vb, err := marshal(o.vals[i])
		if err != nil {
			vb = []byte("null")
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.String()
}

// get returns the value of key k.
func (o *orderedItem) get(k string) any {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i]
		}
	}
	return nil
}

// errorItem is an address that could not be read. Missing and forbidden look
// the same.
func errorItem(uri string, err error) orderedItem {
	item := orderedItem{}
	item.add("uri", uri)
	code := "not_found"
	if errors.Is(err, fsstore.ErrInvalid) {
		code = "invalid"
	}
	item.add("error", code)
	var fe *fsstore.Error
	if strings.Contains(uri, note.VersionMark) && errors.As(err, &fe) && fe.Msg != "" {
		// A past version (key@N): what the note has instead.
		item.add("message", fe.Msg)
	}
	return item
}

// tsvCell keeps a value on one line and free of tabs.
func tsvCell(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case []string:
		s = strings.Join(x, " ")
	default:
		b, _ := marshal(x)
		s = string(b)
	}
	return note.EscapeCell(s)
}

// cutBody returns a full-mode item whose body is cut to fit maxTokens,
// saying how many characters it kept of how many.
func cutBody(head orderedItem, body string, maxTokens int) (string, bool) {
	runes := []rune(body)
	total := len(runes)
	build := func(n int) (string, int) {
		item := orderedItem{keys: append([]string(nil), head.keys...), vals: append([]any(nil), head.vals...)}
		item.add("body", string(runes[:n]))
		item.add("kept_chars", n)
		item.add("total_chars", total)
		j := item.json()
		return j, CountTokens(j)
	}
	empty, overhead := build(0)
	if overhead > maxTokens {
		return "", false
	}
	// Guess from the body's own characters per token, then step down until
	// the item fits: one or two counts instead of a bisection over the body.
	perToken := float64(total) / float64(max(1, CountTokens(body)))
	n := min(total, int(float64(maxTokens-overhead)*perToken*0.95))
	for n > 0 {
		j, tokens := build(n)
		if tokens <= maxTokens {
			return j, true
		}
		n = int(float64(n) * float64(maxTokens-overhead) / float64(tokens-overhead) * 0.95)
	}
	return empty, true
}
