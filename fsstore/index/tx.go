package index

import (
	"database/sql"
	"errors"
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Tx is one write transaction on the index.
type Tx struct {
	t *sql.Tx
	// fts holds the full-text changes of the transaction by note id (nil
	// text: remove), applied in two statements at commit. FTS5 flushes its
	// pending data at every statement that touches it, so one statement per
	// note made a rebuild spend most of its time writing half-empty segments.
	fts map[int64]*Text
	// stmts caches prepared statements for the transaction: a rebuild runs
	// the same few statements hundreds of thousands of times. Each is the
	// writer's statement prepared once (prepared), once it is.
	stmts    map[string]*sql.Stmt
	prepared *runTimeStatements
	// bulk: the transaction writes thousands of commits, with the larger
	// page cache (Bulk).
	bulk bool
}

// Bulk gives the rest of the transaction the page cache of a bulk write
// (bulkCacheKB), which a catch-up of thousands of commits needs to keep its
// pages, until the transaction ends: then the connection's cache is made
// small again and its pages given back (Update).
func (x *Tx) Bulk() error {
	if x.bulk {
		return nil
	}
	if _, err := x.t.Exec("PRAGMA cache_size=-" + strconv.Itoa(bulkCacheKB)); err != nil {
		return err
	}
	x.bulk = true
	return nil
}

func (x *Tx) stmt(q string) (*sql.Stmt, error) {
	if s, ok := x.stmts[q]; ok {
		return s, nil
	}
	var s *sql.Stmt
	if st := x.prepared.get(q); st != nil {
		s = x.t.Stmt(st)
	} else {
		var err error
		if s, err = x.t.Prepare(q); err != nil {
			return nil, err
		}
	}
	if x.stmts == nil {
		x.stmts = map[string]*sql.Stmt{}
	}
	x.stmts[q] = s
	return s, nil
}

func (x *Tx) exec(q string, args ...any) (sql.Result, error) {
	s, err := x.stmt(q)
	if err != nil {
		return nil, err
	}
	return s.Exec(args...)
}

// queryRow runs a cached statement; errors surface from Scan.
func (x *Tx) queryRow(q string, args ...any) *sql.Row {
	s, err := x.stmt(q)
	if err != nil {
		return x.t.QueryRow(q, args...) // reports the same error through Scan
	}
	return s.QueryRow(args...)
}

// flushFTS applies the transaction's full-text changes through a staging
// table, so FTS5 sees one delete and one insert statement.
func (x *Tx) flushFTS() error {
	if len(x.fts) == 0 {
		return nil
	}
	for _, stmt := range []string{
		"CREATE TEMP TABLE IF NOT EXISTS fts_stage(id INTEGER PRIMARY KEY, present INTEGER, addr, digest, body, fields, ids, echo)",
		"DELETE FROM fts_stage",
	} {
		if _, err := x.exec(stmt); err != nil {
			return err
		}
	}
	ins, err := x.t.Prepare("INSERT INTO fts_stage(id,present,addr,digest,body,fields,ids,echo) VALUES(?,?,?,?,?,?,?,?)")
	if err != nil {
		return err
	}
	defer ins.Close()
	for id, t := range x.fts {
		if t == nil {
			_, err = ins.Exec(id, 0, "", "", "", "", "", "")
		} else {
			_, err = ins.Exec(id, 1, t.Addr, t.Digest, t.Body, t.Fields, t.IDs, t.Echo)
		}
		if err != nil {
			return err
		}
	}
	for _, stmt := range []string{
		"DELETE FROM fts WHERE rowid IN (SELECT id FROM fts_stage)",
		"INSERT INTO fts(rowid,addr,digest,body,fields,ids,echo) SELECT id,addr,digest,body,fields,ids,echo FROM fts_stage WHERE present=1",
		"DELETE FROM fts_stage",
	} {
		if _, err := x.exec(stmt); err != nil {
			return err
		}
	}
	return nil
}

// Commit is a commit of the branch's first-parent history.
type Commit struct {
	Seq     int
	Hash    gitver.Hash
	Author  string
	Email   string
	Time    int64 // Unix seconds
	Subject string
	// ByProgram is set for a commit the program made (a tool write, people's
	// edits it committed, init): its message has the Blackboard-Agent
	// trailer. A person's own git commit has not.
	ByProgram bool
	// Closed says that the commits up to this one (by Seq) are exactly
	// those it reaches: the index can be cut back to it when the branch
	// moves to where it no longer holds what came after.
	Closed bool
}

// Change is one file a commit changed. Note is the short address of the note
// the file belongs to (its .md file or its blob), "" for any other file.
type Change struct {
	Path     string
	Note     string
	Old, New gitver.Hash // zero when created, when deleted
}

// Note is what the index knows of a note at the head it reflects.
type Note struct {
	Key         string
	Topic       string
	Version     int
	LastSeq     int
	Present     bool
	NoteBlob    gitver.Hash // zero when the note is deleted
	ContentBlob gitver.Hash // the sibling blob file's blob, zero for none
	ContentPath string
	Digest      string
	Kind        string
	Author      string
	Updated     string
	Bytes       int
	EstTokens   int
	Problem     string
	// LastAuthor is the author of the commit that last changed the note.
	LastAuthor string
	// The note's claim, as its front matter has it: who holds it, until
	// when (Unix seconds), and whether the work is done.
	ClaimedBy  string
	ClaimUntil int64
	Done       bool
	// SaysWhen is set when the note's text tells when something happened:
	// search ranks it higher for a question that asks when.
	SaysWhen bool
	// Said is the day the note's line head says it was said (a
	// conversation kept a turn a note), Unix seconds; 0 for none. Speaker
	// is who it says said it, "" for none.
	Said    int64
	Speaker string
}

// Head is the commit the index reflects, inside the transaction.
func (x *Tx) Head() (gitver.Hash, int, error) { return headIn(x.t) }

// SetHead records the commit the index now reflects.
func (x *Tx) SetHead(hash gitver.Hash) error {
	_, err := x.exec(setHeadQuery, hash)
	return err
}

const setHeadQuery = "INSERT INTO meta(key,value) VALUES('head',?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"

// Reset empties the index, inside the transaction: readers keep seeing the
// old index until the rebuild that follows commits.
func (x *Tx) Reset() error {
	x.fts = map[int64]*Text{}
	for _, table := range []string{"meta", "commits", "changes", "notes", "links", "disk", "topics", "vectors"} {
		if _, err := x.exec("DELETE FROM " + table); err != nil {
			return err
		}
	}
	// All at once: a DELETE would mark every row deleted and keep its text
	// in the segments until they were merged.
	_, err := x.exec("INSERT INTO fts(fts) VALUES('delete-all')")
	return err
}

// IndexedCommit is where a commit stands in the index.
type IndexedCommit struct {
	Seq    int
	Closed bool
}

// CommitOf returns where a commit stands in the index; ok is false when it
// is not indexed.
func (x *Tx) CommitOf(hash gitver.Hash) (c IndexedCommit, ok bool, err error) {
	err = x.queryRow("SELECT seq, closed FROM commits WHERE hash=?", hash).Scan(&c.Seq, &c.Closed)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// AddCommit appends a commit and its changes, and counts a version for every
// note it touched. It returns those notes' keys.
func (x *Tx) AddCommit(c Commit, changes []Change) ([]string, error) {
	if _, err := x.exec("INSERT INTO commits(seq,hash,author,email,time,subject,by_program,closed) VALUES(?,?,?,?,?,?,?,?)",
		c.Seq, c.Hash, c.Author, c.Email, c.Time, c.Subject, c.ByProgram, c.Closed); err != nil {
		return nil, err
	}
	var touched []string
	seen := map[string]bool{}
	for _, ch := range changes {
		if _, err := x.exec("INSERT INTO changes(path,seq,note,old,new) VALUES(?,?,?,?,?)",
			ch.Path, c.Seq, ch.Note, ch.Old, ch.New); err != nil {
			return nil, err
		}
		if ch.Note != "" && !seen[ch.Note] {
			seen[ch.Note] = true
			touched = append(touched, ch.Note)
		}
	}
	for _, key := range touched {
		if _, err := x.exec(`INSERT INTO notes(key,topic,version,last_seq,present,note_blob,content_blob,content_path,
			digest,kind,author,updated,bytes,est_tokens,problem,claimed_by,claim_until,done) VALUES(?,?,1,?,0,'','','','','','','',0,0,'','',0,0)
			ON CONFLICT(key) DO UPDATE SET version=version+1, last_seq=excluded.last_seq`,
			key, topicOf(key), c.Seq); err != nil {
			return nil, err
		}
	}
	return touched, nil
}

func topicOf(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i]
		}
	}
	return key
}

// Truncate forgets every commit after seq (a reset or a rewritten history),
// undoing their version counts. It returns the notes whose state must be read
// again from the new head.
func (x *Tx) Truncate(seq int) ([]string, error) {
	rows, err := x.t.Query("SELECT DISTINCT note FROM changes WHERE seq > ? AND note != ''", seq)
	if err != nil {
		return nil, err
	}
	var notes []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		notes = append(notes, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, stmt := range []string{"DELETE FROM changes WHERE seq > ?", "DELETE FROM commits WHERE seq > ?"} {
		if _, err := x.exec(stmt, seq); err != nil {
			return nil, err
		}
	}
	for _, n := range notes {
		var version, last int
		err := x.queryRow("SELECT count(DISTINCT seq), coalesce(max(seq),0) FROM changes WHERE note=?", n).Scan(&version, &last)
		if err != nil {
			return nil, err
		}
		if version == 0 {
			if err := x.forget(n); err != nil {
				return nil, err
			}
			continue
		}
		if _, err := x.exec("UPDATE notes SET version=?, last_seq=? WHERE key=?", version, last, n); err != nil {
			return nil, err
		}
	}
	return notes, nil
}

// FileBlob returns the blob a path holds at the indexed head ("" when absent):
// the New side of its latest change.
func (x *Tx) FileBlob(path string) (gitver.Hash, error) {
	var b gitver.Hash
	err := x.queryRow("SELECT new FROM changes WHERE path=? ORDER BY seq DESC LIMIT 1", path).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return gitver.ZeroHash, nil
	}
	return b, err
}

// Text is what full-text search sees of a note.
type Text struct {
	Addr   string // the address, split into words by the tokenizer
	Digest string
	Body   string
	Fields string // front-matter values
	IDs    string // identifiers squashed to one token each
	Echo   string // a digest that only repeats its body (note.SearchText)
}

// Link is one typed link from a note, by short address.
type Link struct {
	Rel, Dst string
}

// SetNoteState records a note's current content, fields, search text and
// outgoing links; version and last_seq are kept. A note that is not present
// leaves search and keeps no links.
func (x *Tx) SetNoteState(n Note, text Text, links []Link) error {
	if n.ClaimedBy == "" {
		n.ClaimUntil = 0 // the open work is found by claim_until alone
	}
	var id int64
	err := x.queryRow(`UPDATE notes SET present=?, note_blob=?, content_blob=?, content_path=?, digest=?, kind=?,
		author=?, updated=?, bytes=?, est_tokens=?, problem=?, claimed_by=?, claim_until=?, done=?, says_when=?, said=?, speaker=? WHERE key=? RETURNING id`,
		n.Present, n.NoteBlob, n.ContentBlob, n.ContentPath, n.Digest, n.Kind, n.Author, n.Updated,
		n.Bytes, n.EstTokens, n.Problem, n.ClaimedBy, n.ClaimUntil, n.Done, n.SaysWhen, n.Said, n.Speaker, n.Key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // forgotten by Truncate: the history never had it
	}
	if err != nil {
		return err
	}
	if _, err := x.exec("DELETE FROM links WHERE src=?", n.Key); err != nil {
		return err
	}
	if !n.Present {
		x.fts[id] = nil
		return nil
	}
	x.fts[id] = &text
	for _, l := range links {
		if _, err := x.exec("INSERT OR IGNORE INTO links(src,rel,dst) VALUES(?,?,?)", n.Key, l.Rel, l.Dst); err != nil {
			return err
		}
	}
	return nil
}

// forget removes every trace of a note the rewritten history never had.
func (x *Tx) forget(key string) error {
	var id int64
	err := x.queryRow("DELETE FROM notes WHERE key=? RETURNING id", key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	x.fts[id] = nil
	_, err = x.exec("DELETE FROM links WHERE src=?", key)
	return err
}

// Note reads a note inside the transaction.
func (x *Tx) Note(key string) (Note, bool, error) { return noteRow(x.t, key) }

// SetDisk records that the file at path, with the stat d, holds d.Blob.
func (x *Tx) SetDisk(path string, d DiskStat) error {
	_, err := x.exec(`INSERT INTO disk(path,blob,size,mtime,ino) VALUES(?,?,?,?,?)
		ON CONFLICT(path) DO UPDATE SET blob=excluded.blob,size=excluded.size,mtime=excluded.mtime,ino=excluded.ino`,
		path, d.Blob, d.Size, d.MTime, int64(d.Ino))
	return err
}

const noteColumns = `key,topic,version,last_seq,present,note_blob,content_blob,content_path,digest,kind,author,
	updated,bytes,est_tokens,problem,claimed_by,claim_until,done,says_when,said,speaker,coalesce((SELECT c.author FROM commits c WHERE c.seq=notes.last_seq),'')`

func scanNote(row interface{ Scan(...any) error }) (Note, error) {
	var n Note
	err := row.Scan(&n.Key, &n.Topic, &n.Version, &n.LastSeq, &n.Present, &n.NoteBlob, &n.ContentBlob,
		&n.ContentPath, &n.Digest, &n.Kind, &n.Author, &n.Updated, &n.Bytes, &n.EstTokens, &n.Problem,
		&n.ClaimedBy, &n.ClaimUntil, &n.Done, &n.SaysWhen, &n.Said, &n.Speaker, &n.LastAuthor)
	return n, err
}

func noteRow(q querier, key string) (Note, bool, error) {
	n, err := scanNote(q.QueryRow(noteQuery, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Note{}, false, nil
	}
	return n, err == nil, err
}
