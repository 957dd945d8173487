package index

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// MaxQueryTerms bounds the terms of one query; the rest are ignored.
const MaxQueryTerms = 32

// Term is one term of a user's query.
type Term struct {
	Text   string
	Phrase bool // quoted by the user
	Prefix bool // ended in *
}

// SearchQuery is one full-text search.
type SearchQuery struct {
	Terms []Term
	// AnyTerm lets any term match; otherwise every term must.
	AnyTerm bool
	Scope   Scope
	Limit   int
}

// ParseQuery splits a user's query into terms: "quoted phrases", prefix*
// and words. Nothing a user types is an FTS5 syntax error: every term is
// passed to FTS5 as a quoted string, so AND, NEAR, -, * and stray quotes are
// searched as words or dropped.
func ParseQuery(q string) []Term {
	// Control characters (a NUL ends an SQL string) separate words.
	q = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, q)
	var terms []Term
	for len(terms) < MaxQueryTerms {
		q = strings.TrimLeft(q, " \t\r\n")
		if q == "" {
			break
		}
		if q[0] == '"' {
			if end := strings.IndexByte(q[1:], '"'); end >= 0 {
				if p := strings.TrimSpace(q[1 : end+1]); p != "" {
					terms = append(terms, Term{Text: p, Phrase: true})
				}
				q = q[end+2:]
				continue
			}
			q = q[1:] // an unbalanced quote is dropped
			continue
		}
		end := strings.IndexAny(q, " \t\r\n\"")
		if end < 0 {
			end = len(q)
		}
		word := q[:end]
		q = q[end:]
		t := Term{}
		if strings.HasSuffix(word, "*") {
			t.Prefix = true
			word = strings.TrimRight(word, "*")
		}
		word = strings.Trim(word, "-*+^:(){}[],;!?'`")
		if !hasWordChar(word) {
			continue
		}
		t.Text = word
		terms = append(terms, t)
	}
	return terms
}

func hasWordChar(s string) bool {
	for _, r := range s {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127 {
			return true
		}
	}
	return false
}

func ftsString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// match renders the term as FTS5 query syntax. An identifier matches its
// squashed token in the ids column (the exact hit, weighted highest) or its
// parts as a phrase.
func (t Term) match() string {
	if t.isIdentifier() {
		return "(" + t.whole() + " OR " + ftsString(t.Text) + ")"
	}
	return t.whole()
}

// whole is the FTS5 expression of the notes that hold the term whole: an
// identifier as one (its squashed token in the ids column), not within
// a longer one.
func (t Term) whole() string {
	switch {
	case t.Prefix:
		return ftsString(t.Text) + " *"
	case t.isIdentifier():
		return "ids : " + ftsString(note.Squash(t.Text))
	}
	return ftsString(t.Text)
}

func (t Term) isIdentifier() bool { return !t.Prefix && !t.Phrase && note.IsIdentifier(t.Text) }

// Hit is one search result.
type Hit struct {
	Key        string
	Digest     string
	Score      float64 // higher is better
	Superseded bool
	// Exact is set on a note that holds every identifier of a question
	// searched by meaning as well: it comes before the others.
	Exact bool
}

// Before orders hits: exact ones first, then those without a successor,
// then by score.
func Before(a, b Hit) bool {
	if a.Exact != b.Exact {
		return a.Exact
	}
	if a.Superseded != b.Superseded {
		return !a.Superseded
	}
	return a.Score > b.Score
}

// Column weights for BM25: the digest is what an author chose to say, so it
// outweighs the body; an exact identifier outweighs both. A digest that only
// repeats its body (echo) weighs what the body does.
const bm25Weights = "bm25(fts, 3.0, 6.0, 1.0, 2.0, 10.0, 1.0)"

// Search returns the notes that match q, best first (BM25, the digest
// weighted above the body, an exact identifier above both), superseded notes
// after the others, at most q.Limit of them.
//
// FTS5 ranks the matches alone first and only the best candidates are joined
// with the notes: joining every match of a common word (and checking each for
// a successor) cost ten times the ranking. Candidates outside the scope are
// dropped; when too few remain, the search widens.
func (s *Snapshot) Search(q SearchQuery) ([]Hit, error) {
	if len(q.Terms) == 0 {
		return nil, nil
	}
	op := " AND "
	if q.AnyTerm {
		op = " OR "
	}
	parts := make([]string, len(q.Terms))
	wholes := make([]string, len(q.Terms))
	costly := false
	for i, t := range q.Terms {
		parts[i], wholes[i] = t.match(), t.whole()
		costly = costly || t.Prefix || t.Phrase || t.isIdentifier()
	}
	ranked, err := s.rankable(strings.Join(parts, op), strings.Join(wholes, op), len(q.Terms), costly)
	if err != nil {
		return nil, err
	}
	for want := max(4*q.Limit, 40); ; want *= 8 {
		hits, exhausted, err := s.searchCandidates(ranked, q.Scope, q.Limit, want)
		if err != nil || len(hits) >= q.Limit || exhausted {
			return hits, err
		}
	}
}

// SearchAnyWord returns the notes that hold any of q's terms, best first by
// BM25 of the terms they hold, for a query asked in plain words (a
// question). Ranking reads every posting of every term ranked, so only the
// rarest terms are ranked, as many as budget postings hold: a term most
// notes hold weighs little in BM25 and costs the most. When even the
// rarest is too common, it is Search with any term matching.
func (s *Snapshot) SearchAnyWord(q SearchQuery, budget int) ([]Hit, error) {
	type counted struct {
		match string
		notes int
	}
	var terms []counted
	seen := map[string]bool{}
	for _, t := range q.Terms {
		m := t.match()
		if seen[m] {
			continue
		}
		seen[m] = true
		n, err := s.matching(m, budget)
		if err != nil {
			return nil, err
		}
		if n > 0 && n <= budget {
			terms = append(terms, counted{m, n})
		}
	}
	sort.SliceStable(terms, func(i, j int) bool { return terms[i].notes < terms[j].notes })
	var kept []string
	postings := 0
	for _, t := range terms {
		if postings+t.notes > budget {
			break
		}
		postings += t.notes
		kept = append(kept, t.match)
	}
	if len(kept) == 0 {
		q.AnyTerm = true
		return s.Search(q)
	}
	match := strings.Join(kept, " OR ")
	ranked := rankedMatch{match: match, rank: match}
	for want := max(4*q.Limit, 40); ; want *= 8 {
		hits, exhausted, err := s.searchCandidates(ranked, q.Scope, q.Limit, want)
		if err != nil || len(hits) >= q.Limit || exhausted {
			return hits, err
		}
	}
}

// HoldingIdentifiers returns the notes in scope, at most limit, that hold
// every one of ids exactly (their squashed token in the ids column).
func (s *Snapshot) HoldingIdentifiers(ids []string, scope Scope, limit int) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "ids : " + ftsString(note.Squash(id))
	}
	rows, err := s.q.Query(`SELECT n.key FROM fts JOIN notes n ON n.id = fts.rowid
		WHERE fts MATCH ? AND n.present = 1 LIMIT ?`, strings.Join(parts, " AND "), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			return nil, err
		}
		if scope.contains(key) {
			out[key] = true
		}
	}
	return out, rows.Err()
}

// rankBudget bounds the work of ranking: matches times query terms. BM25
// scores every match before it knows the best, each term of the query for
// each match, about 10 ms for 1,000 matches of one term on 100,000 notes: a
// word most notes hold ("the") took a hundred milliseconds, a question of
// ten common words as long, for a ranking that says little (such words
// weigh almost nothing).
const rankBudget = 2000

// narrowTerms is the most terms a broad search ranks in the columns BM25
// weighs most. BM25 first weighs each term by the notes that hold it,
// reading all of them: for a few words, cheap; for a question of common
// words on 100,000 notes, 60 to 90 ms before a note is ranked.
const narrowTerms = 2

// rankedMatch is what a search ranks: match, or, when match is broad, its
// matches in the columns BM25 weighs most (address, digest, identifiers;
// a digest that repeats its body too, for it is the note's digest);
// when those are broad too, nothing is ranked and the newest matches come
// first.
type rankedMatch struct {
	match string // the whole query
	rank  string // the part ranked; "" for none
	// newest are the rows of match's newest notes, newest first, as
	// rankable found them: the unranked rest of a broad search, listed
	// without matching again (a prefix, or a phrase of common words,
	// takes 5-7 ms to match on 100,000 notes).
	newest []int64
	// allNewest says that newest holds every match.
	allNewest bool
}

// rankable decides what a search for match, of terms terms, ranks,
// counting or listing matches (which costs a fraction of ranking them)
// up to what the budget ranks. whole is match with its identifiers held
// whole only (Term.whole). costly says that match holds a prefix or a
// phrase, which FTS5 matches in a pass over every note holding its words
// however few are asked for: their newest matches are listed as they are
// counted. A word's are only counted, which stops at the limit (listing
// them cost "the" 0.3 ms more).
func (s *Snapshot) rankable(match, whole string, terms int, costly bool) (rankedMatch, error) {
	most := rankBudget / max(1, terms)
	r := rankedMatch{match: match, rank: whole}
	if whole != match {
		// An identifier is ranked where it is held whole; the notes
		// that hold it only within a longer one (1.10.19 in
		// 1.10.19-rc1) come after, newest first. Ranking or counting
		// the phrase of its words takes a pass over every note that
		// holds each of them: 13 ms to rank 1.10.19 on 100,000 notes,
		// 6 ms to count it, against 0.2 ms for the whole.
		n, err := s.matching(whole, most)
		if err != nil || n <= most {
			return r, err
		}
	}
	r.rank = match
	var n int
	var err error
	if costly {
		r.newest, err = s.newestMatching(match, most)
		n, r.allNewest = len(r.newest), len(r.newest) <= most
	} else {
		n, err = s.matching(match, most)
	}
	if err != nil || n <= most {
		return r, err
	}
	if terms <= narrowTerms {
		narrow := "{addr digest echo ids} : (" + match + ")"
		n, err := s.matching(narrow, most)
		if err != nil || n <= most {
			r.rank = narrow
			return r, err
		}
	}
	r.rank = ""
	return r, nil
}

// newestMatchingQuery lists the rows of the notes that match an FTS5
// expression, newest first, up to a limit, in one value: a row at a time,
// the list cost more than the match. (The list is sorted again once
// read: an ORDER BY inside group_concat took a millisecond for 2,000
// rows.)
const newestMatchingQuery = `SELECT coalesce(group_concat(rowid), '') FROM
	(SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ?)`

// newestMatching returns the rows of the notes that match an FTS5
// expression, newest first, up to most+1 of them.
func (s *Snapshot) newestMatching(match string, most int) ([]int64, error) {
	var list string
	if err := s.q.QueryRow(newestMatchingQuery, match, most+1).Scan(&list); err != nil || list == "" {
		return nil, err
	}
	rows := make([]int64, 0, strings.Count(list, ",")+1)
	for field := range strings.SplitSeq(list, ",") {
		id, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("newest matches: %w", err)
		}
		rows = append(rows, id)
	}
	slices.SortFunc(rows, func(a, b int64) int { return cmp.Compare(b, a) })
	return rows, nil
}

// cand is a match of a search: its note's row and its score.
type cand struct {
	id    int64
	score float64
}

// candidateNotes reads the present notes of cands, by row, in one query.
func (s *Snapshot) candidateNotes(cands []cand) (map[int64]Hit, error) {
	ids := make([]byte, 0, 8*len(cands))
	ids = append(ids, '[')
	for i, c := range cands {
		if i > 0 {
			ids = append(ids, ',')
		}
		ids = strconv.AppendInt(ids, c.id, 10)
	}
	ids = append(ids, ']')
	found := make(map[int64]Hit, len(cands))
	rows, err := s.q.Query(candidatesQuery, string(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var h Hit
		if err := rows.Scan(&id, &h.Key, &h.Digest, &h.Superseded); err != nil {
			return nil, err
		}
		found[id] = h
	}
	return found, rows.Err()
}

// searchCandidates takes the best want matches, ranked, then the newest
// others unranked, and joins them with the notes.
func (s *Snapshot) searchCandidates(m rankedMatch, scope Scope, limit, want int) ([]Hit, bool, error) {
	var cands []cand
	seen := map[int64]bool{}
	take := func(query string, args ...any) error {
		rows, err := s.q.Query(query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c cand
			if err := rows.Scan(&c.id, &c.score); err != nil {
				return err
			}
			if !seen[c.id] {
				seen[c.id] = true
				cands = append(cands, c)
			}
		}
		return rows.Err()
	}
	if m.rank != "" {
		if err := take(`SELECT rowid, -`+bm25Weights+` AS score FROM fts WHERE fts MATCH ? ORDER BY score DESC LIMIT ?`, m.rank, want); err != nil {
			return nil, false, err
		}
	}
	exhausted := len(cands) < want
	if m.rank != m.match && len(cands) < want {
		// The rest in order of creation, newest first, below every ranked
		// match.
		if m.allNewest || len(m.newest) >= want {
			for _, id := range m.newest[:min(want, len(m.newest))] {
				if !seen[id] {
					seen[id] = true
					cands = append(cands, cand{id: id})
				}
			}
		} else if err := take(`SELECT rowid, 0 FROM fts WHERE fts MATCH ? ORDER BY rowid DESC LIMIT ?`, m.match, want); err != nil {
			return nil, false, err
		}
		exhausted = len(cands) < want
	}
	if len(cands) > want {
		cands = cands[:want]
	}
	// The candidates' notes, best first, a batch at a time (one statement
	// for each took longer to prepare than to run), until limit of them
	// have no successor: a superseded note comes after the others, so
	// those ranked below the limit-th that has none are never shown.
	var hits []Hit
	current := 0
	for start := 0; start < len(cands) && current < limit; {
		end := min(len(cands), start+max(limit, 20))
		found, err := s.candidateNotes(cands[start:end])
		if err != nil {
			return nil, false, err
		}
		for _, c := range cands[start:end] {
			h, ok := found[c.id]
			if !ok || !scope.contains(h.Key) {
				continue
			}
			h.Score = c.score
			hits = append(hits, h)
			if !h.Superseded {
				current++
			}
		}
		start = end
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].Superseded != hits[j].Superseded {
			return !hits[i].Superseded
		}
		return hits[i].Score > hits[j].Score
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits, exhausted, nil
}

// Contains reports whether key is under one of the scope's prefixes.
func (s Scope) Contains(key string) bool { return s.contains(key) }

// contains reports whether key is under one of the scope's prefixes.
func (s Scope) contains(key string) bool {
	if s.Prefixes == nil {
		return true
	}
	for _, p := range s.Prefixes {
		if key == p || strings.HasPrefix(key, p+"/") {
			return true
		}
	}
	return false
}
