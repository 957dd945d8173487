package index

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// tokenizer is how the full-text index splits text into words and stems
// them: "heating" and "heated" are one word to it.
const tokenizer = "porter unicode61 remove_diacritics 2"

// stemmer gives a word the form the full-text index holds it in, by the
// index's own tokenizer run on a table in memory: a stem made any other
// way could name a word the index does not hold.
var stemmer struct {
	mu    sync.Mutex        // one caller at a time fills and reads the table
	db    *sql.DB           // nil until first needed, and again after a failure
	known map[string]string // the words stemmed before, up to stemsKept
}

// stemsKept bounds the stems kept: a few MB of the words a board's
// searches meet most.
const stemsKept = 100_000

// stemBatch is how many words one statement inserts, well under SQLite's
// bound on a statement's parameters.
const stemBatch = 1000

// Stems returns the index's form of each of words (a word of letters or
// digits, in lower case); a word the tokenizer drops has none.
func Stems(words []string) (map[string]string, error) {
	stemmer.mu.Lock()
	defer stemmer.mu.Unlock()
	out := make(map[string]string, len(words))
	var unknown []string
	for _, w := range words {
		if stem, ok := stemmer.known[w]; ok {
			out[w] = stem
		} else {
			unknown = append(unknown, w)
		}
	}
	if len(unknown) == 0 {
		return out, nil
	}
	stems, err := stemUnknown(unknown)
	if err != nil {
		if stemmer.db != nil {
			stemmer.db.Close()
		}
		stemmer.db = nil // made again by the next call
		return nil, fmt.Errorf("stems: %w", err)
	}
	if len(stemmer.known)+len(unknown) > stemsKept {
		stemmer.known = nil // start again rather than keep what is seldom asked
	}
	if stemmer.known == nil {
		stemmer.known = map[string]string{}
	}
	for _, w := range unknown {
		out[w] = stems[w]
		stemmer.known[w] = stems[w] // "" for a word the tokenizer drops
	}
	return out, nil
}

// stemUnknown runs words through the tokenizer's table, with stemmer.mu
// held.
func stemUnknown(words []string) (map[string]string, error) {
	if stemmer.db == nil {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1) // the table lives in one connection's memory
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		if _, err := db.Exec(`CREATE VIRTUAL TABLE words USING fts5(word, tokenize='` + tokenizer + `');
			CREATE VIRTUAL TABLE stems USING fts5vocab(words, instance)`); err != nil {
			db.Close()
			return nil, err
		}
		stemmer.db = db
	}
	tx, err := stemmer.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() // the table is only ever filled for one call
	for start := 0; start < len(words); start += stemBatch {
		batch := words[start:min(len(words), start+stemBatch)]
		args := make([]any, 0, 2*len(batch))
		for i, w := range batch {
			args = append(args, start+i+1, w)
		}
		if _, err := tx.Exec(`INSERT INTO words(rowid, word) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?,?),", len(batch)), ","), args...); err != nil {
			return nil, err
		}
	}
	rows, err := tx.Query(`SELECT doc, term FROM stems`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[string]string, len(words))
	for rows.Next() {
		var doc int
		var term string
		if err := rows.Scan(&doc, &term); err != nil {
			return nil, err
		}
		if doc >= 1 && doc <= len(words) {
			out[words[doc-1]] = term
		}
	}
	return out, rows.Err()
}

// NoteCount is how many present notes the board holds.
func (s *Snapshot) NoteCount() (int, error) {
	var n int
	err := s.q.QueryRow(`SELECT coalesce(sum(notes), 0) FROM topics`).Scan(&n)
	return n, err
}

// NotesHolding counts the notes that hold word, up to most+1: a word more
// notes hold costs more to count than it tells.
func (s *Snapshot) NotesHolding(word string, most int) (int, error) {
	return s.matching(Term{Text: word}.match(), most)
}

// matchingQuery counts the notes that match an FTS5 expression, up to a
// limit: run for each word of each question, it is prepared once.
const matchingQuery = `SELECT count(*) FROM (SELECT rowid FROM fts WHERE fts MATCH ? LIMIT ?)`

// matching counts the notes that match an FTS5 expression, up to most+1.
func (s *Snapshot) matching(match string, most int) (int, error) {
	var n int
	err := s.q.QueryRow(matchingQuery, match, most+1).Scan(&n)
	return n, err
}

// WordScores returns the full-text score (BM25, weighted as Search weighs
// it) of each of the notes keys that holds any of words, against those
// words.
func (s *Snapshot) WordScores(words, keys []string) (map[string]float64, error) {
	out := map[string]float64{}
	if len(words) == 0 || len(keys) == 0 {
		return out, nil
	}
	match := make([]string, len(words))
	for i, w := range words {
		match[i] = ftsString(w)
	}
	args := []any{strings.Join(match, " OR ")}
	for _, k := range keys {
		args = append(args, k)
	}
	rows, err := s.q.Query(`SELECT n.key, -`+bm25Weights+` FROM fts JOIN notes n ON n.id = fts.rowid
		WHERE fts MATCH ? AND n.key IN (`+strings.TrimSuffix(strings.Repeat("?,", len(keys)), ",")+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var score float64
		if err := rows.Scan(&key, &score); err != nil {
			return nil, err
		}
		out[key] = score
	}
	return out, rows.Err()
}
