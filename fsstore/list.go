package fsstore

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
)

// Summary is what the index knows of a note without reading it: enough to
// decide whether to read it.
type Summary struct {
	URI       string
	Version   int
	Digest    string
	Kind      string
	Author    string
	Updated   string
	Bytes     int
	EstTokens int
	// Problem says why the note's front matter is unreadable.
	Problem string
	// SupersededBy and ContradictedBy name present notes that link here
	// with supersedes or contradicts.
	SupersededBy   []string
	ContradictedBy []string
}

// ListOptions select notes for List. The zero value lists every note,
// newest change first, 20 at most.
type ListOptions struct {
	// Topic is a topic or topic prefix ("research", "research/cache");
	// empty lists every topic.
	Topic string
	Kind  string
	// ByName orders by address instead of newest change first.
	ByName bool
	Limit  int
	// Since lists only notes changed after this cursor.
	Since int
}

// Listing is a page of List.
type Listing struct {
	Notes []Summary
	// Omitted counts matching notes not shown (over the limit).
	Omitted int
	Cursor  int
}

// DefaultListLimit and MaxListLimit bound a listing.
const (
	DefaultListLimit = 20
	MaxListLimit     = 1000
)

// List returns notes under a topic prefix, newest change first or by name.
func (v *View) List(opts ListOptions) (*Listing, error) {
	w := v.w
	scope, err := v.scope(opts.Topic)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	switch {
	case limit <= 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	_, cursor, err := w.catchUp(nil, nil)
	if err != nil {
		return nil, err
	}
	out := &Listing{Cursor: cursor}
	err = w.idx.Read(func(s *index.Snapshot) error {
		notes, total, err := s.List(index.ListQuery{Scope: scope, Kind: opts.Kind, ByName: opts.ByName,
			Limit: limit, Since: opts.Since})
		if err != nil {
			return err
		}
		out.Omitted = total - len(notes)
		out.Notes, err = v.summaries(s, notes)
		return err
	})
	return out, err
}

// scope is what a query under topic (a topic prefix, or "" for all) may
// cover for this caller.
func (v *View) scope(topic string) (index.Scope, error) {
	prefix := ""
	if topic != "" {
		segs, err := ParseTopic(topic, v.w.name)
		if err != nil {
			return index.Scope{}, err
		}
		prefix = strings.Join(segs, "/")
	}
	return index.Scope{Prefixes: v.c.read.Narrow(prefix)}, nil
}

// summaries turns index rows into Summaries, with their backlinks (one
// query for all of them).
func (v *View) summaries(s *index.Snapshot, notes []index.Note) ([]Summary, error) {
	w := v.w
	keys := make([]string, len(notes))
	for i, n := range notes {
		keys[i] = n.Key
	}
	back, err := s.BacklinksTo(keys, "supersedes", "contradicts")
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(notes))
	for i, n := range notes {
		var seen []index.Backlink
		for _, b := range back[n.Key] {
			if v.c.CanRead(b.Src) {
				seen = append(seen, b)
			}
		}
		out[i] = w.summaryOf(n, seen)
	}
	return out, nil
}

func (v *View) summary(s *index.Snapshot, n index.Note) (Summary, error) {
	out, err := v.summaries(s, []index.Note{n})
	if err != nil {
		return Summary{}, err
	}
	return out[0], nil
}

func (w *Workspace) summaryOf(n index.Note, back []index.Backlink) Summary {
	sum := Summary{URI: w.uri(n.Key), Version: n.Version, Digest: n.Digest, Kind: n.Kind, Author: n.Author,
		Updated: n.Updated, Bytes: n.Bytes, EstTokens: n.EstTokens, Problem: n.Problem}
	for _, b := range back {
		switch b.Rel {
		case "supersedes":
			sum.SupersededBy = append(sum.SupersededBy, w.uri(b.Src))
		case "contradicts":
			sum.ContradictedBy = append(sum.ContradictedBy, w.uri(b.Src))
		}
	}
	return sum
}

func (w *Workspace) uri(key string) string { return scheme + w.name + "/" + key }

// SummaryResult is one address of a batch: its summary, or why there is none.
type SummaryResult struct {
	URI     string
	Summary *Summary
	Err     error // ErrInvalid or ErrNotFound
}

// Summaries reads many notes' summaries at one consistent point of history,
// from the index alone.
func (v *View) Summaries(uris []string) ([]SummaryResult, int, error) {
	w := v.w
	_, cursor, err := w.catchUp(nil, nil)
	if err != nil {
		return nil, 0, err
	}
	out := make([]SummaryResult, len(uris))
	err = w.idx.Read(func(s *index.Snapshot) error {
		keys := make([]string, 0, len(uris))
		for i, u := range uris {
			a, err := ParseAddress(u, w.name)
			if err != nil {
				// The input as given, cut short: a megabyte of garbage does
				// not come back in full.
				out[i] = SummaryResult{URI: clip(u), Err: err}
				continue
			}
			out[i].URI = a.String()
			if v.c.CanRead(a.Short()) { // else it stays not found, as if missing
				keys = append(keys, a.Short())
			}
		}
		notes, err := s.Notes(keys)
		if err != nil {
			return err
		}
		var present []index.Note
		for _, n := range notes {
			if n.Present {
				present = append(present, n)
			}
		}
		sums, err := v.summaries(s, present)
		if err != nil {
			return err
		}
		byURI := make(map[string]*Summary, len(sums))
		for i := range sums {
			byURI[sums[i].URI] = &sums[i]
		}
		for i := range out {
			if out[i].Err != nil {
				continue
			}
			if sum, ok := byURI[out[i].URI]; ok {
				out[i].Summary = sum
			} else {
				out[i].Err = errorf("get", out[i].URI, ErrNotFound, "no note at this address")
			}
		}
		return nil
	})
	return out, cursor, err
}

// Hit is one search result.
type Hit struct {
	URI    string
	Digest string
	Score  float64
}

// Search finds notes by full text over digests, bodies, front-matter values
// and addresses, best first (BM25, the digest weighted above the body, an
// exact identifier above both); superseded notes come after the others.
// Every word must match; when that finds nothing, any word may. A query
// FTS5 would reject is searched as words: it never fails for its syntax.
func (v *View) Search(q, topic string, limit int) ([]Hit, int, error) {
	w := v.w
	scope, err := v.scope(topic)
	if err != nil {
		return nil, 0, err
	}
	if limit <= 0 {
		limit = 10
	}
	if limit > MaxSearchLimit {
		limit = MaxSearchLimit
	}
	_, cursor, err := w.catchUp(nil, nil)
	if err != nil {
		return nil, 0, err
	}
	terms := parseQuery(q)
	if len(terms) == 0 {
		return nil, cursor, nil
	}
	var hits []index.Hit
	err = w.idx.Read(func(s *index.Snapshot) error {
		var err error
		hits, err = s.Search(ftsQuery(terms, "AND"), scope, limit)
		if err == nil && len(hits) == 0 && len(terms) > 1 {
			hits, err = s.Search(ftsQuery(terms, "OR"), scope, limit)
		}
		if err != nil || v.c.read.All {
			return err
		}
		// A successor the caller may not read does not demote a note:
		// the ranking must not tell that it exists.
		keys := make([]string, len(hits))
		for i, h := range hits {
			keys[i] = h.Key
		}
		back, err := s.BacklinksTo(keys, "supersedes")
		for i := range hits {
			hits[i].Superseded = false
			for _, b := range back[hits[i].Key] {
				hits[i].Superseded = hits[i].Superseded || v.c.CanRead(b.Src)
			}
		}
		sort.SliceStable(hits, func(i, j int) bool {
			if hits[i].Superseded != hits[j].Superseded {
				return !hits[i].Superseded
			}
			return hits[i].Score > hits[j].Score
		})
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", q, err)
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{URI: w.uri(h.Key), Digest: h.Digest, Score: h.Score}
	}
	return out, cursor, nil
}
