package fsstore

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/meaning"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
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
	cursor, err := v.readAsFar(func(s *index.Snapshot) error {
		if len(query.Terms) == 0 {
			return nil
		}
		var err error
		if qv, ok := meaningOf(query.Terms); ok {
			hits, err = v.searchByMeaning(s, query, &qv)
		} else {
			hits, err = s.Search(query)
			if err == nil && len(hits) == 0 && len(query.Terms) > 1 {
				hits, err = s.SearchAnyWord(query, wordBudget)
			}
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
		sort.SliceStable(hits, func(i, j int) bool { return index.Before(hits[i], hits[j]) })
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("search %q: %w", q, err)
	}
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{URI: w.b.uri(h.Key), Digest: h.Digest, Score: h.Score}
	}
	return out, cursor, nil
}

// meaningOf is the vector of a query in words (two that say what it is
// about, at least), which is searched by what it means as well as by its
// words. A query of one word or identifier, or with a quoted phrase or a
// prefix, asks for exactly that: it is not.
func meaningOf(terms []index.Term) (meaning.Vector, bool) {
	words := make([]string, 0, len(terms))
	about := 0
	for _, t := range terms {
		if t.Phrase || t.Prefix {
			return meaning.Vector{}, false
		}
		words = append(words, t.Text)
		if !meaning.IsStopWord(strings.ToLower(t.Text)) {
			about++
		}
	}
	if about < 2 {
		return meaning.Vector{}, false
	}
	return meaning.Embed(strings.Join(words, " "))
}

// wordBudget is how many postings the full-text ranking of a question reads
// at most: about 5 ms at 100,000 notes (SearchAnyWord).
const wordBudget = 4000

// fuseDepth is how many notes each way proposes to the fused ranking.
const fuseDepth = 100

// lexicalWeight is the full-text ranking's part of the fused score; the
// rest is the cosine's. Measured on judged questions (README, "Search by
// meaning"): 0.5 to 0.8 rank alike, 0.7 best.
const lexicalWeight = 0.7

// nearEnough is the cosine a note that shares no word with the query needs
// to be found by its meaning alone. Below it, texts about other things
// come as near (measured: the questions of one test collection against
// the documents of another reach 0.71-0.81 at their 95th percentile).
const nearEnough = 0.8

// searchByMeaning ranks by the words a note shares with the query (BM25 of
// the query's words but those that only say how it is asked) and by
// how near its vector is to the query's: each scaled to 0..1 over the
// notes either way proposes, then added, weighted.
func (v *View) searchByMeaning(s *index.Snapshot, q index.SearchQuery, qv *meaning.Vector) ([]index.Hit, error) {
	w := v.w
	if err := w.vectors.Refresh(s); err != nil {
		return nil, err
	}
	// The words' side: for two words, the notes that hold both when there
	// are enough of them; else those that hold the rarest words (a
	// question's words are seldom all in one note).
	lexical := q
	lexical.Terms, lexical.Limit = nil, fuseDepth
	for _, t := range q.Terms {
		if !meaning.IsStopWord(strings.ToLower(t.Text)) {
			lexical.Terms = append(lexical.Terms, t)
		}
	}
	var lex []index.Hit
	var err error
	if len(lexical.Terms) <= 2 {
		lex, err = s.Search(lexical)
	}
	if err == nil && len(lex) < q.Limit {
		lex, err = s.SearchAnyWord(lexical, wordBudget)
	}
	if err != nil {
		return nil, err
	}
	nearest := w.vectors.Nearest(qv, fuseDepth, q.Scope)
	type fused struct {
		hit      index.Hit
		lex, cos float64
		known    bool // the note's row was read
	}
	byKey := map[string]*fused{}
	var order []*fused
	for _, h := range lex {
		f := &fused{hit: h, lex: h.Score, known: true}
		byKey[h.Key] = f
		order = append(order, f)
	}
	lexKeys := make([]string, 0, len(lex))
	for _, h := range lex {
		lexKeys = append(lexKeys, h.Key)
	}
	for k, c := range w.vectors.Cosines(qv, lexKeys) {
		byKey[k].cos = c
	}
	var unknown []string
	for _, n := range nearest {
		if f, ok := byKey[n.Key]; ok {
			f.cos = n.Cosine
			continue
		}
		if n.Cosine < nearEnough {
			continue // nothing on the board relates: an empty answer says so
		}
		f := &fused{hit: index.Hit{Key: n.Key}, cos: n.Cosine}
		byKey[n.Key] = f
		order = append(order, f)
		unknown = append(unknown, n.Key)
	}
	// The notes found by meaning alone: present ones, with their digests.
	rows, err := s.Notes(unknown)
	if err != nil {
		return nil, err
	}
	var succeeded map[string][]index.Backlink
	if succeeded, err = s.BacklinksTo(unknown, "supersedes"); err != nil {
		return nil, err
	}
	for _, k := range unknown {
		if n, ok := rows[k]; ok && n.Present {
			f := byKey[k]
			f.known, f.hit.Digest, f.hit.Superseded = true, n.Digest, len(succeeded[k]) > 0
		}
	}
	minLex, maxLex, minCos, maxCos := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, f := range order {
		minLex, maxLex = math.Min(minLex, f.lex), math.Max(maxLex, f.lex)
		minCos, maxCos = math.Min(minCos, f.cos), math.Max(maxCos, f.cos)
	}
	scale := func(x, lo, hi float64) float64 {
		if hi <= lo {
			return 1 // all alike
		}
		return (x - lo) / (hi - lo)
	}
	var hits []index.Hit
	for _, f := range order {
		if !f.known {
			continue
		}
		f.hit.Score = lexicalWeight*scale(f.lex, minLex, maxLex) + (1-lexicalWeight)*scale(f.cos, minCos, maxCos)
		hits = append(hits, f.hit)
	}
	// An identifier in the query asks for the notes that hold exactly it:
	// they come first, as they do in a search by words alone.
	var ids []string
	for _, t := range q.Terms {
		if codeIdentifier(t.Text) {
			ids = append(ids, t.Text)
		}
	}
	exact, err := s.HoldingIdentifiers(ids, q.Scope, fuseDepth)
	if err != nil {
		return nil, err
	}
	for i := range hits {
		hits[i].Exact = exact[hits[i].Key]
	}
	sort.SliceStable(hits, func(i, j int) bool { return index.Before(hits[i], hits[j]) })
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return hits, nil
}

// codeIdentifier reports whether s is an identifier as code and systems
// spell them (ERR_CONN_RESET, v2.4.7, cache_test.go, research/cache,
// checkoutService), not words joined by hyphens as English joins them
// ("closely-related").
func codeIdentifier(s string) bool {
	if !note.IsIdentifier(s) {
		return false
	}
	for i, r := range s {
		if r == '_' || r == '.' || r == '/' || r == ':' || unicode.IsDigit(r) || i > 0 && unicode.IsUpper(r) {
			return true
		}
	}
	return false
}
