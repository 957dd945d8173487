package fsstore

import (
	"fmt"
	"sort"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
)

// MaxSearchLimit bounds the hits of one search.
const MaxSearchLimit = 100

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
	query := index.SearchQuery{Terms: index.ParseQuery(q), Scope: scope, Limit: limit}
	var hits []index.Hit
	cursor, err := w.readAtHead(func(s *index.Snapshot) error {
		if len(query.Terms) == 0 {
			return nil
		}
		var err error
		hits, err = s.Search(query)
		if err == nil && len(hits) == 0 && len(query.Terms) > 1 {
			query.AnyTerm = true
			hits, err = s.Search(query)
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
