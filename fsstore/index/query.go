package index

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Scope limits a query to notes under some topic prefixes. Nil Prefixes
// means every note; an empty, non-nil list means none.
type Scope struct {
	Prefixes []string // short-address prefixes such as "research" or "research/cache"
}

// where returns a SQL condition on the notes table and its arguments, and
// whether it narrows by address ranges alone (no topic of its own).
//
// Each prefix is a term the indexes answer: a topic is topic = ? (the
// leading column of notes_topic, which also holds present and last_seq, so
// a topic is counted and listed newest first from the index alone); a
// deeper prefix p is the range of the unique key index from p up to the
// byte after "p/", keeping p itself and what starts with "p/" ("p-x" and
// "p.x" sort between the two).
func (s Scope) where() (cond string, args []any, byKey bool) {
	return s.conditions("key", false)
}

// whereKeys is where with a topic t as the range of addresses from "t/" up
// to "t0": a condition on the key alone, which an index of keys answers
// without reading the notes' rows.
func (s Scope) whereKeys() (cond string, args []any) {
	return s.holdsKey("key")
}

// holdsKey is whereKeys for the address in column col.
func (s Scope) holdsKey(col string) (cond string, args []any) {
	cond, args, _ = s.conditions(col, true)
	return cond, args
}

func (s Scope) conditions(col string, topicsAsKeys bool) (cond string, args []any, byKey bool) {
	if s.Prefixes == nil {
		return "1", nil, false
	}
	if len(s.Prefixes) == 0 {
		return "0", nil, false
	}
	var parts []string
	byKey = true
	for _, p := range s.Prefixes {
		switch {
		case strings.Contains(p, "/"):
			parts = append(parts, fmt.Sprintf("(%[1]s >= ? AND %[1]s < ? AND (%[1]s = ? OR %[1]s >= ?))", col))
			args = append(args, p, p+"0", p, p+"/") // '0' is the byte after '/'
		case topicsAsKeys:
			parts = append(parts, fmt.Sprintf("(%[1]s >= ? AND %[1]s < ?)", col))
			args = append(args, p+"/", p+"0")
		default:
			parts = append(parts, "topic = ?")
			args = append(args, p)
			byKey = false
		}
	}
	return "(" + strings.Join(parts, " OR ") + ")", args, byKey
}

// present is the condition that a note is on the branch. Beside a scope of
// address ranges it is kept from choosing the index: the planner, without
// statistics, would take notes_recent (present, last_seq) and read every
// note to find a handful.
func present(byKey bool) string {
	if byKey {
		return "+present=1"
	}
	return "present=1"
}

// ListQuery selects notes for listing.
type ListQuery struct {
	Scope  Scope
	Kind   string // "" for every kind
	ByName bool   // order by address instead of newest change first
	Limit  int
	Since  int // only notes changed after this cursor
	// After starts a newest-first listing past this note (a page's last).
	After *Position
	// KeyPrefix keeps the notes whose key starts with it, at any segment.
	KeyPrefix string
	// Open keeps the work that can be taken: the notes not done, no one
	// holds a claim on at Now (Unix seconds), and whose dependencies are
	// done (readyWork). Readable is the caller's whole scope: a
	// dependency outside it counts as not done.
	Open     bool
	Now      int64
	Readable Scope
	// Oldest orders by when each note first appeared, oldest first.
	Oldest bool
}

// Ready work. A task is offered (ListQuery.Open) only once every note it
// depends_on is done, for an agent that takes it before then cannot do
// it. A dependency holds a task back while it is not done and is work:
// claimed (its front matter has claim lines, held or lapsed), or in the
// task's own topic (a task list is a topic). A note of another topic with
// no claim lines (a finding, a plan) is no work and holds nothing back,
// as a note that was never claimed is none. One the
// caller may not read holds the task back, whatever it is, so that a
// listing tells nothing of it; one that is not on the board holds nothing
// back. Tasks whose dependencies make a cycle are never offered (health
// names the cycle).

// holdsBack is the condition that the note row dep, a dependency of the
// task row task, holds it back: the one rule the listing of open work
// (waitingOn) and health's cycles (Snapshot.Waits) both apply.
func holdsBack(dep, task string) string {
	return fmt.Sprintf("%[1]s.present = 1 AND %[1]s.done = 0 AND (%[1]s.claimed_by != '' OR %[1]s.topic = %[2]s.topic)", dep, task)
}

// waitingOn finds, for the outer notes row, a dependency that holds it
// back; %s is the condition that the caller may read l.dst.
var waitingOn = `SELECT 1 FROM links l WHERE l.src = notes.key AND l.rel = 'depends_on' AND (NOT %s
	OR EXISTS (SELECT 1 FROM notes d WHERE d.key = l.dst AND ` + holdsBack("d", "notes") + `))`

// Position is a note's place in a newest-first listing: its last change's
// cursor, then its key.
type Position struct {
	Seq int
	Key string
}

// List returns the notes matching q, in order, at most q.Limit of them, and
// how many matched in all.
func (s *Snapshot) List(q ListQuery) ([]Note, int, error) {
	cond, args, byKey := q.Scope.where()
	where := present(byKey) + " AND " + cond
	if q.Kind != "" {
		where += " AND kind = ?"
		args = append(args, q.Kind)
	}
	if q.Since > 0 {
		where += " AND last_seq > ?"
		args = append(args, q.Since)
	}
	if q.KeyPrefix != "" {
		where += " AND key >= ? AND key < ?"
		args = append(args, q.KeyPrefix, q.KeyPrefix+"\x7f") // keys are ASCII below DEL
	}
	if q.Open {
		// claim_until is 0 for a note no one claimed (SetNoteState).
		readable, rargs := q.Readable.holdsKey("l.dst")
		where += " AND done = 0 AND claim_until <= ? AND NOT EXISTS (" + fmt.Sprintf(waitingOn, readable) + ")"
		args = append(append(args, q.Now), rargs...)
	}
	if q.After != nil && !q.ByName && !q.Oldest {
		where += " AND (last_seq < ? OR (last_seq = ? AND key > ?))"
		args = append(args, q.After.Seq, q.After.Seq, q.After.Key)
	}
	total, err := s.listTotal(q, where, args)
	if err != nil {
		return nil, 0, err
	}
	order := "last_seq DESC, key"
	switch {
	case q.ByName:
		order = "key"
	case q.Oldest:
		order = "id" // a note's row is made when it first appears
	}
	rows, err := s.q.Query("SELECT "+noteColumns+" FROM notes WHERE "+where+" ORDER BY "+order+" LIMIT ?",
		append(args, q.Limit)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		n, err := scanNote(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, n)
	}
	return out, total, rows.Err()
}

// listTotal counts the notes List matches, the where condition with args:
// for a listing of whole topics, from the counts the topics table keeps
// (its triggers follow every note), in the time of one row per topic
// instead of one per note; else by counting the rows.
func (s *Snapshot) listTotal(q ListQuery, where string, args []any) (int, error) {
	var total int
	wholeTopics := q.Kind == "" && q.Since == 0 && q.KeyPrefix == "" && !q.Open && (q.After == nil || q.ByName || q.Oldest)
	for _, p := range q.Scope.Prefixes {
		wholeTopics = wholeTopics && !strings.Contains(p, "/")
	}
	switch {
	case !wholeTopics:
		err := s.q.QueryRow("SELECT count(*) FROM notes WHERE "+where, args...).Scan(&total)
		return total, err
	case q.Scope.Prefixes != nil && len(q.Scope.Prefixes) == 0:
		return 0, nil // no topic at all
	}
	query, topics := "SELECT coalesce(sum(notes), 0) FROM topics", []any(nil)
	if q.Scope.Prefixes != nil {
		marks := make([]string, len(q.Scope.Prefixes))
		for i, p := range q.Scope.Prefixes {
			marks[i], topics = "?", append(topics, p)
		}
		query += " WHERE topic IN (" + strings.Join(marks, ",") + ")"
	}
	err := s.q.QueryRow(query, topics...).Scan(&total)
	return total, err
}

// Backlink is a present note linking to another.
type Backlink struct {
	Src, Rel string
}

// Backlinks returns the present notes that link to key with one of rels.
func (s *Snapshot) Backlinks(key string, rels ...string) ([]Backlink, error) {
	args := []any{key}
	marks := make([]string, len(rels))
	for i, r := range rels {
		marks[i] = "?"
		args = append(args, r)
	}
	rows, err := s.q.Query(`SELECT l.src, l.rel FROM links l JOIN notes m ON m.key = l.src AND m.present = 1
		WHERE l.dst = ? AND l.rel IN (`+strings.Join(marks, ",")+`) ORDER BY l.rel, l.src`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Backlink
	for rows.Next() {
		var b Backlink
		if err := rows.Scan(&b.Src, &b.Rel); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// Notes returns the notes with the given keys, by key, in one query.
func (s *Snapshot) Notes(keys []string) (map[string]Note, error) {
	out := make(map[string]Note, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.q.Query(notesQuery, jsonArray(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		n, err := scanNote(rows)
		if err != nil {
			return nil, err
		}
		out[n.Key] = n
	}
	return out, rows.Err()
}

// BacklinksTo returns, for each of keys, the present notes linking to it with
// one of rels, in one query.
func (s *Snapshot) BacklinksTo(keys []string, rels ...string) (map[string][]Backlink, error) {
	out := map[string][]Backlink{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.q.Query(backlinksToQuery, jsonArray(keys), jsonArray(rels))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var dst string
		var b Backlink
		if err := rows.Scan(&dst, &b.Src, &b.Rel); err != nil {
			return nil, err
		}
		out[dst] = append(out[dst], b)
	}
	return out, rows.Err()
}

// OutLink is a link from a note: its relation and target.
type OutLink struct {
	Rel, Dst string
}

// LinksFrom returns, for each of keys, its links, in one query.
func (s *Snapshot) LinksFrom(keys []string) (map[string][]OutLink, error) {
	out := map[string][]OutLink{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.q.Query(linksFromQuery, jsonArray(keys))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var src string
		var l OutLink
		if err := rows.Scan(&src, &l.Rel, &l.Dst); err != nil {
			return nil, err
		}
		out[src] = append(out[src], l)
	}
	return out, rows.Err()
}

// Topics lists the topics of present notes within scope, in order.
func (s *Snapshot) Topics(scope Scope) ([]string, error) {
	cond, args, byKey := scope.where()
	rows, err := s.q.Query("SELECT DISTINCT topic FROM notes WHERE "+present(byKey)+" AND "+cond+" ORDER BY topic", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// TopicCount is a topic and how many present notes it holds.
type TopicCount struct {
	Topic string
	Notes int
}

// Folders lists the folders one level below the prefix under ("research",
// "research/cache") that hold present notes in scope, each with how many it
// holds at any depth, by name: the branches of the topic tree below under.
// It reads the key index's range of under.
func (s *Snapshot) Folders(scope Scope, under string) ([]TopicCount, error) {
	if scope.Prefixes != nil && len(scope.Prefixes) == 0 {
		return nil, nil // a scope of nothing: and SQLite finds no plan for "0" by the index named
	}
	cond, args := scope.whereKeys()
	from := len(under) + 2 // where a child's name begins in a key (SQL counts from 1)
	query := "SELECT substr(key, 1, ? + instr(substr(key, ?), '/') - 2) AS folder, count(*) FROM notes INDEXED BY notes_live_key" +
		" WHERE key >= ? AND key < ? AND present = 1 AND " + cond +
		" AND instr(substr(key, ?), '/') > 0 GROUP BY folder ORDER BY folder"
	args = append([]any{from, from, under + "/", under + "0"}, args...)
	args = append(args, from)
	rows, err := s.q.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TopicCount
	for rows.Next() {
		var f TopicCount
		if err := rows.Scan(&f.Topic, &f.Notes); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// TopicCounts lists the topics in scope with their present notes, by
// topic: from the counts the index keeps when the scope is whole topics,
// else counted.
func (s *Snapshot) TopicCounts(scope Scope) ([]TopicCount, error) {
	query, args := "SELECT topic, notes FROM topics WHERE notes > 0", []any(nil)
	switch {
	case scope.Prefixes == nil:
	case len(scope.Prefixes) == 0:
		return nil, nil
	case !slices.ContainsFunc(scope.Prefixes, func(p string) bool { return strings.Contains(p, "/") }):
		query += " AND topic IN (" + strings.TrimSuffix(strings.Repeat("?,", len(scope.Prefixes)), ",") + ")"
		for _, p := range scope.Prefixes {
			args = append(args, p)
		}
	default:
		cond, cargs, byKey := scope.where()
		query, args = "SELECT topic, count(*) FROM notes WHERE "+present(byKey)+" AND "+cond+" GROUP BY topic", cargs
	}
	rows, err := s.q.Query(query+" ORDER BY topic", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []TopicCount
	for rows.Next() {
		var t TopicCount
		if err := rows.Scan(&t.Topic, &t.Notes); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// jsonArray is strs as a JSON array: the one parameter json_each reads.
func jsonArray(strs []string) string {
	b, _ := json.Marshal(strs) // strings always marshal
	return string(b)
}
