package fsstore

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
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
// exact identifier above both); superseded notes come after the others. A
// question that asks when, names a time or names someone puts the notes
// that answer it higher (questionCues), and the words of its best long
// answers reorder what it found (feedBack).
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
		if qv, ok := meaningOf(query.Terms); ok && cueOn(cueMeaning) {
			hits, err = v.searchByMeaning(s, query, &qv, cuesOf(q, time.Now()))
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
		out[i] = Hit{URI: w.reader.uri(h.Key), Digest: h.Digest, Score: h.Score}
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
func (v *View) searchByMeaning(s *index.Snapshot, q index.SearchQuery, qv *meaning.Vector, cues questionCues) ([]index.Hit, error) {
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
	fuse(order)
	if err := v.feedBack(s, lexical.Terms, order); err != nil {
		return nil, err
	}
	var hits []index.Hit
	for _, f := range order {
		if f.known {
			hits = append(hits, f.hit)
		}
	}
	if cueOn(cueNeighbours) {
		if hits, err = v.withNeighbours(s, hits, q.Scope); err != nil {
			return nil, err
		}
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
	if err := cues.raise(s, hits, q.Limit); err != nil {
		return nil, err
	}
	sort.SliceStable(hits, func(i, j int) bool { return index.Before(hits[i], hits[j]) })
	if len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return hits, nil
}

// fused is a note a question found by its words, its meaning or both.
type fused struct {
	hit      index.Hit
	lex, cos float64
	known    bool // the note's row was read
}

// fuse sets each note's score: its words' score and its cosine, each
// scaled to 0..1 over the notes found, then added, weighted.
func fuse(order []*fused) {
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
	for _, f := range order {
		f.hit.Score = lexicalWeight*scale(f.lex, minLex, maxLex) + (1-lexicalWeight)*scale(f.cos, minCos, maxCos)
	}
}

// A question's answer is often in the note next to the one that shares its
// words: the reply after a question in a conversation kept a turn a note,
// the step after the one that names the error. Short notes numbered in a
// folder (turn-7, d3-12, step-04) are each other's neighbours: the best
// hits bring theirs into the answer, at a share of their own score. A long
// note says what it says by itself, and a collection of documents numbered
// in the order they came (d1 to d1400 of a test collection) has unrelated
// neighbours: only notes of a few sentences take part.
//
// Measured through MCP on a public benchmark of long conversations (LoCoMo,
// one note a turn, questions scoped to their conversation): recall@5 0.542
// and recall@10 0.618 without, 0.565 and 0.669 with two neighbours each
// side at 0.7 of the hit's score. Other settings, tried by ranking the
// first 30 of each answer again outside the server (without the bound on
// length): one each side, recall@10 0.658; three, 0.665. Once a digest that
// repeats its turn no longer outweighed the turn (note.TextOf) and a when
// question weighed the turns that say when, the share was measured again
// through MCP: 0.5, 0.587 and 0.684; 0.6, 0.602 and 0.701; 0.65, 0.600 and
// 0.699; 0.7, 0.599 and 0.695. Cranfield's abstracts are unchanged
// (nDCG@10 0.375): a bound of 400 bytes let 104 of them take part (0.374),
// and none at all, every one (0.352).
const (
	neighbourHits  = 5   // the best hits that bring their neighbours
	neighbourReach = 2   // how many numbers away a neighbour may be
	neighbourShare = 0.6 // of the hit's score
	shortNote      = 300 // the most bytes of a note that has neighbours: a few sentences
)

// withNeighbours adds to hits (fused scores, any order) the short present
// notes in scope, that the caller may read, numbered next to the best short
// ones of them, each at neighbourShare of its hit's score, or raises a hit
// already there to it.
func (v *View) withNeighbours(s *index.Snapshot, hits []index.Hit, scope index.Scope) ([]index.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	best := slices.Clone(hits)
	sort.SliceStable(best, func(i, j int) bool { return best[i].Score > best[j].Score })
	best = best[:min(len(best), neighbourHits)]
	at := make(map[string]int, len(hits))
	for i, h := range hits {
		at[h.Key] = i
	}
	want := map[string]float64{}
	var keys []string
	bestKeys := make([]string, len(best))
	for i, h := range best {
		bestKeys[i] = h.Key
	}
	bestRows, err := s.Notes(bestKeys)
	if err != nil {
		return nil, err
	}
	for _, h := range best {
		if bestRows[h.Key].Bytes > shortNote {
			continue
		}
		for _, k := range neighbourKeys(h.Key, neighbourReach) {
			score := neighbourShare * h.Score
			if !scope.Contains(k) || !v.c.CanRead(k) || want[k] >= score {
				continue
			}
			if _, seen := want[k]; !seen {
				keys = append(keys, k)
			}
			want[k] = score
		}
	}
	rows, err := s.Notes(keys)
	if err != nil {
		return nil, err
	}
	succeeded, err := s.BacklinksTo(keys, "supersedes")
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if n, ok := rows[k]; !ok || !n.Present || n.Bytes > shortNote {
			continue
		}
		if i, found := at[k]; found {
			hits[i].Score = math.Max(hits[i].Score, want[k])
			continue
		}
		hits = append(hits, index.Hit{Key: k, Digest: rows[k].Digest, Score: want[k], Superseded: len(succeeded[k]) > 0})
	}
	return hits, nil
}

// whenShare is how much higher a note ranks for a question that asks when
// and tells a time, or that names a time and was written then. Measured
// through MCP on LoCoMo (one note a turn; 268 of its 1,536 questions ask
// when): those questions' recall@5 0.722 without, 0.747 at 1.1, 0.772 at
// 1.2, 0.775 at 1.3 and 0.784 at 1.5; the others' are unchanged. The 189
// that name a day, a month or a year: recall@5 and recall@10 0.626 and
// 0.719 without, 0.664 and 0.779 at 1.3, 0.677 and 0.788 at 1.5.
const whenShare = 1.3

// whoShare is how much higher a note ranks for a question that names who
// said or wrote it. Measured through MCP on LoCoMo, whose questions mostly
// name one of a conversation's two speakers: recall@5 and recall@10 0.609
// and 0.708 without, 0.632 and 0.724 at 1.3, 0.635 and 0.730 at 1.5; 1.3
// is the share time has, so that a name does not outweigh a note's words.
const whoShare = 1.3

// questionCues is what a question says besides the words it shares with
// notes: whether it asks when, the stretch of time it names ("yesterday",
// "last week", "3 June"), and whom it names.
type questionCues struct {
	asksWhen bool
	span     note.Span
	named    bool
	words    string // its words in lower case, each between spaces
}

// cuesOf reads the cues of question q, asked at now.
func cuesOf(q string, now time.Time) questionCues {
	c := questionCues{asksWhen: note.AsksWhen(q), words: " " + strings.Join(note.LowerWords(q), " ") + " "}
	c.span, c.named = note.NamedSpan(q, now)
	return c
}

// names reports whether the question names who: a speaker or an author,
// by all of its words in a row ("Caroline", "dr lee", "reviewer").
func (c questionCues) names(who string) bool {
	w := note.LowerWords(who)
	if len(w) == 0 || len(w) == 1 && meaning.IsStopWord(w[0]) {
		return false
	}
	return strings.Contains(c.words, " "+strings.Join(w, " ")+" ")
}

// raise raises the score of the hits that answer what the question says
// besides its words: for a question that asks when, those whose text tells
// a time (its answer is one, and a note that shares the question's words
// without a time does not hold it); for a question that names a time,
// those written then (noteTime); for a question that names someone, the
// lines they said (a conversation's line head) and the notes they wrote.
// It only reorders what the words and the meaning found.
//
// Only the hits that may reach the answer, its first limit in the order of
// index.Before, are looked at (every hit for a limit of 0): reading every
// hit's row cost a question 1.4 ms of its 12 on a board of 4,000 notes. A
// hit behind the limit-th one (last) either comes after it whatever its
// score (it is superseded, or last holds the question's identifier and it
// does not), or has a score that every cue together would not raise to
// last's; a cue never lowers a score (scores are not negative: fuse scales
// them to 0..1, and neighbours and kin take shares of them), so last and
// those before it stay ahead of it.
func (c questionCues) raise(s *index.Snapshot, hits []index.Hit, limit int) error {
	most := whoShare
	if c.asksWhen {
		most *= whenShare
	}
	if c.named {
		most *= whenShare
	}
	var last *index.Hit
	if limit > 0 && len(hits) > limit {
		sorted := slices.Clone(hits)
		sort.SliceStable(sorted, func(i, j int) bool { return index.Before(sorted[i], sorted[j]) })
		last = &sorted[limit-1]
	}
	keys := make([]string, 0, min(len(hits), 2*limit))
	for _, h := range hits {
		raised := h
		raised.Score *= most
		if last == nil || !index.Before(*last, raised) {
			keys = append(keys, h.Key)
		}
	}
	rows, err := s.Notes(keys)
	if err != nil {
		return err
	}
	for i := range hits {
		row, ok := rows[hits[i].Key]
		if !ok {
			continue
		}
		if c.asksWhen && row.SaysWhen && cueOn(cueWhen) {
			hits[i].Score *= whenShare
		}
		if c.named && c.span.Holds(noteTime(row, c.span.From.Location())) && cueOn(cueWhen) {
			hits[i].Score *= whenShare
		}
		if (c.names(row.Speaker) || c.names(row.Author)) && cueOn(cueWho) {
			hits[i].Score *= whoShare
		}
	}
	return nil
}

// noteTime is when a note was written, as a question that names a time
// means it: the day its line head says it was said (a conversation kept a
// turn a note), that day in loc wherever the question is asked; else its
// updated field. The zero time when it has neither.
func noteTime(n index.Note, loc *time.Location) time.Time {
	if n.Said != 0 {
		y, m, d := time.Unix(n.Said, 0).UTC().Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	t, _ := time.Parse(time.RFC3339, n.Updated)
	return t
}

// neighbourKeys are the keys numbered up to reach away from key, in its
// folder: research/run/step-07 has research/run/step-06 and step-08 (the
// width of the number kept); a key whose name ends in no number has none.
func neighbourKeys(key string, reach int) []string {
	end := len(key)
	start := end
	for start > 0 && key[start-1] >= '0' && key[start-1] <= '9' {
		start--
	}
	if start == end || end-start > 9 || strings.LastIndexByte(key, '/') >= start {
		return nil
	}
	n, err := strconv.Atoi(key[start:])
	if err != nil {
		return nil
	}
	width := 0
	if key[start] == '0' {
		width = end - start // zero-padded: step-07, not step-7
	}
	var out []string
	for d := 1; d <= reach; d++ {
		for _, m := range []int{n - d, n + d} {
			if m >= 0 {
				out = append(out, key[:start]+fmt.Sprintf("%0*d", width, m))
			}
		}
	}
	return out
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
