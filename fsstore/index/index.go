// Package index is the board's derived index: a SQLite database under
// .blackboard/ that answers versions, metadata and provenance without reading
// files or walking history per request. It is shared by every server process
// on the workspace (SQLite's own locking, WAL mode) and is never the source of
// truth: git is. Deleting the database loses nothing; the store rebuilds it.
//
// The package knows rows, not how to read git or notes: fsstore decides what
// a commit changed and what a note's fields are, and records them here.
// Object names are gitver.Hash values (stored as hex); search terms follow
// the identifier rules of the board's format (fsstore/note).
package index

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, registered as "sqlite"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// schemaVersion is stored in PRAGMA user_version. A database made by another
// version of the program is dropped and rebuilt, never migrated: it is derived.
const schemaVersion = 11

const schema = `
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- Every commit reachable from the branch, parents before children: seq is
-- the cursor. On a linear history that is the first-parent history.
CREATE TABLE commits(
	seq INTEGER PRIMARY KEY,
	hash TEXT NOT NULL UNIQUE,
	author TEXT NOT NULL,
	email TEXT NOT NULL,
	time INTEGER NOT NULL,
	subject TEXT NOT NULL,
	by_program INTEGER NOT NULL, -- 1 when the message has the Blackboard-Agent trailer
	closed INTEGER NOT NULL      -- 1 when the commits up to this seq are exactly those it reaches
);
-- Every file whose content in a commit differs from a parent's.
CREATE TABLE changes(
	path TEXT NOT NULL,
	seq INTEGER NOT NULL,
	note TEXT NOT NULL,      -- the note the file belongs to, '' for other files
	old TEXT NOT NULL,       -- blob before, '' when created
	new TEXT NOT NULL,       -- blob after, '' when deleted
	PRIMARY KEY(path, seq)
) WITHOUT ROWID;
CREATE INDEX changes_seq ON changes(seq);
CREATE INDEX changes_note ON changes(note, seq);
-- One row per note that has ever existed on the branch.
CREATE TABLE notes(
	id INTEGER PRIMARY KEY,  -- the note's row in fts
	key TEXT NOT NULL UNIQUE, -- topic/key..., the short address
	topic TEXT NOT NULL,
	version INTEGER NOT NULL,
	last_seq INTEGER NOT NULL,
	present INTEGER NOT NULL,   -- 0 once the note file is deleted
	note_blob TEXT NOT NULL,    -- blob of the .md file, '' when deleted
	content_blob TEXT NOT NULL, -- blob of the sibling .blob.* file, ''
	content_path TEXT NOT NULL, -- path of that sibling file, ''
	digest TEXT NOT NULL,
	kind TEXT NOT NULL,
	author TEXT NOT NULL,
	updated TEXT NOT NULL,
	bytes INTEGER NOT NULL,     -- content size (body or table, inline or not)
	est_tokens INTEGER NOT NULL,
	problem TEXT NOT NULL,      -- why the front matter is unreadable, ''
	claimed_by TEXT NOT NULL DEFAULT '',    -- the claim's holder (claimed_by:), ''
	claim_until INTEGER NOT NULL DEFAULT 0, -- when it lapses (claim_until:), Unix seconds
	done INTEGER NOT NULL DEFAULT 0,        -- 1 when the front matter has done_by:
	says_when INTEGER NOT NULL DEFAULT 0,   -- 1 when its text tells when something happened (note.SaysWhen)
	said INTEGER NOT NULL DEFAULT 0,        -- the day its line head says it was said (note.ReadLineHead), Unix seconds; 0
	speaker TEXT NOT NULL DEFAULT ''        -- who its line head says said it, ''
);
CREATE INDEX notes_recent ON notes(present, last_seq);
CREATE INDEX notes_topic ON notes(topic, present, last_seq);
-- The present notes' addresses: a range of them is counted, by folder,
-- from this index alone (Folders).
CREATE INDEX notes_live_key ON notes(key) WHERE present = 1;
CREATE INDEX notes_kind ON notes(kind, present, last_seq);
-- The open work (ListQuery.Open): claim_until is 0 when no one claimed.
CREATE INDEX notes_open ON notes(present, done, claim_until);
CREATE INDEX notes_topic_open ON notes(topic, present, done, claim_until);
-- How many present notes each topic holds, kept by triggers: counting a
-- board of 100,000 notes takes 80 ms, reading this a fraction of one.
CREATE TABLE topics(topic TEXT PRIMARY KEY, notes INTEGER NOT NULL) WITHOUT ROWID;
CREATE TRIGGER topics_insert AFTER INSERT ON notes WHEN new.present BEGIN INSERT INTO topics(topic, notes) VALUES(new.topic, 1) ON CONFLICT(topic) DO UPDATE SET notes = notes + 1; END;
CREATE TRIGGER topics_update AFTER UPDATE OF present, topic ON notes WHEN old.present != new.present OR old.topic != new.topic BEGIN UPDATE topics SET notes = notes - old.present WHERE topic = old.topic; INSERT INTO topics(topic, notes) VALUES(new.topic, new.present) ON CONFLICT(topic) DO UPDATE SET notes = notes + excluded.notes; END;
CREATE TRIGGER topics_delete AFTER DELETE ON notes WHEN old.present BEGIN UPDATE topics SET notes = notes - 1 WHERE topic = old.topic; END;
-- Typed links from a note's front matter, by short address.
CREATE TABLE links(
	src TEXT NOT NULL,
	rel TEXT NOT NULL,
	dst TEXT NOT NULL,
	PRIMARY KEY(src, rel, dst)
) WITHOUT ROWID;
CREATE INDEX links_dst ON links(dst, rel);
-- Full text of present notes. Contentless: the text lives in git; the index
-- keeps only what ranking needs (2.8 times smaller).
CREATE VIRTUAL TABLE fts USING fts5(addr, digest, body, fields, ids, echo,
	content='', contentless_delete=1, tokenize='` + tokenizer + `');
-- What each present note means (package meaning): a vector made off the
-- write path from the note's text as of source (its note and content
-- blobs), by model. gen orders the vectors as they were made, so that a
-- reader loads only what is newer than what it holds.
CREATE TABLE vectors(
	id INTEGER PRIMARY KEY, -- the note's row
	source TEXT NOT NULL,   -- note_blob:content_blob it was made from
	model TEXT NOT NULL,
	gen INTEGER NOT NULL,
	vec BLOB NOT NULL
);
CREATE INDEX vectors_gen ON vectors(gen);
-- What a file looked like on disk when its content was last known to equal
-- the committed blob: a matching stat means no need to hash the file again.
CREATE TABLE disk(
	path TEXT PRIMARY KEY,
	blob TEXT NOT NULL,
	size INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	ino INTEGER NOT NULL
) WITHOUT ROWID;
`

// DB is the derived index of one workspace.
type DB struct {
	path  string
	read  *sql.DB // deferred transactions, many connections
	write *sql.DB // BEGIN IMMEDIATE, one connection: writers queue in SQLite
	// hot are the reads run most, prepared once on read: a write's catch-up
	// and comparison and a read's note rows run them again and again, and
	// preparing one cost more than running it.
	hot map[string]*sql.Stmt
	// built are the statements of reads whose text is built at run time (a
	// listing's, a search's), prepared once run (runTimeStatements).
	built runTimeStatements
	// written are the statements of writes, prepared on write once run:
	// prepared again in each transaction, they were an eighth of the
	// processor time of a lone write at 100,000 notes (SQLite's parser).
	written runTimeStatements
	// merging is set once the full-text index is known to merge its
	// segments as ftsMerging says.
	merging atomic.Bool
	// stopCheckpoints ends the background upkeep (checkpoints and
	// tidying), which closes checkpointsDone when it has.
	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}
	// updates counts this process's updates, and writing its updates
	// under way; lastUpdate is when the last one ended (Unix nanoseconds).
	// tidyUpTo is updates when a tidying step last found nothing to
	// merge: the index is untidy while updates is past it.
	updates, tidyUpTo atomic.Int64
	writing           atomic.Int32
	lastUpdate        atomic.Int64
}

// ftsMerging is how the full-text index merges the segments each write
// adds: never a little at every write (FTS5's automerge), only when a level
// holds 16 (its crisis merge). On 100,000 notes the little merges made one
// write in 16 take 7-13 ms longer; searches are as fast.
const ftsMerging = "INSERT INTO fts(fts, rank) VALUES('automerge', 0)"

// The hot reads (DB.hot).
const (
	headQuery     = "SELECT (SELECT value FROM meta WHERE key='head'), (SELECT coalesce(max(seq),0) FROM commits)"
	fileBlobQuery = "SELECT new FROM changes WHERE path=? ORDER BY seq DESC LIMIT 1"
	diskQuery     = "SELECT blob,size,mtime,ino FROM disk WHERE path=?"
	noteQuery     = "SELECT " + noteColumns + " FROM notes WHERE key=?"
	// The reads of several notes at once take their keys as one JSON
	// array, so that their text is one and is prepared once: built with a
	// placeholder a key, each was parsed again at every call, a quarter
	// of an engine's time serving get_state.
	notesQuery       = "SELECT " + noteColumns + " FROM notes WHERE key IN (SELECT value FROM json_each(?))"
	backlinksToQuery = `SELECT l.dst, l.src, l.rel FROM links l JOIN notes m ON m.key = l.src AND m.present = 1
		WHERE l.dst IN (SELECT value FROM json_each(?)) AND l.rel IN (SELECT value FROM json_each(?)) ORDER BY l.rel, l.src`
	linksFromQuery = "SELECT src, rel, dst FROM links WHERE src IN (SELECT value FROM json_each(?)) ORDER BY src, rel, dst"
	// candidatesQuery reads a search's candidates, their rows given as a
	// JSON array: one statement whatever their number.
	candidatesQuery = `SELECT n.id, n.key, n.digest, EXISTS(SELECT 1 FROM links l JOIN notes m ON m.key = l.src AND m.present = 1
		WHERE l.dst = n.key AND l.rel = 'supersedes') FROM notes n WHERE n.id IN (SELECT value FROM json_each(?)) AND +n.present = 1`
)

// Open opens or creates the index at path. A file that is not a database,
// is corrupt, or was made by another schema version is deleted and created
// anew, empty: the caller then catches it up from git. Any other failure (a
// database busy in another process's long rebuild, say) is returned as it
// is: deleting a live index would make every process start over.
func Open(path string) (*DB, error) {
	d, err := open(path)
	if err == nil || !replaceable(err) {
		return d, err
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	return open(path)
}

// errIncompatible marks an index made by another version of the program.
var errIncompatible = errors.New("index made by another version")

// SQLite result codes that mean the file is not a usable database.
const (
	sqliteCorrupt = 11
	sqliteFull    = 13
	sqliteNotADB  = 26
)

func replaceable(err error) bool {
	if errors.Is(err, errIncompatible) {
		return true
	}
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		switch coded.Code() & 0xff { // the primary code, without extended bits
		case sqliteCorrupt, sqliteNotADB:
			return true
		}
	}
	return false
}

// Memory of the index, per process: every MCP client starts its own
// server, so eight agents on one board run eight. A board of 100,000 notes
// makes a database of about 200 MB, read mostly at random, through each
// connection's page cache: 4 MB for the one that writes and for each of
// the four that read, the file's pages themselves left to the system's
// cache, which the processes share. With 64 MB caches each and 256 MB
// mapped into memory, a server settled at 190-255 MB at 100,000 notes and
// peaked at 490-530 MB; with these, at 85-95 MB, reading as fast as with 32
// or 64 MB mapped (blackboard-bench read, in turns). A catch-up of
// thousands of commits (a rebuild, a large pull) takes 16 MB for its
// transaction (Tx.Bulk), which rebuilt 20,000 notes 10% faster than 4 MB,
// and gives them back after.
// readIdle is how many readers' connections stay open between reads, each
// with its cache: database/sql's default.
const readIdle = 2

const (
	writeCacheKB = 4 << 10
	bulkCacheKB  = 16 << 10
	readCacheKB  = 4 << 10
	mmapBytes    = 0
)

// No connection checkpoints the write-ahead log when it commits (SQLite's
// automatic checkpoint, every 1,000 pages, runs in the commit that crosses
// them, and made that write wait): checkpoint does it in the background.
func dsn(path, txlock string, cacheKB int) string {
	return "file:" + path + "?_pragma=busy_timeout(" + strconv.Itoa(int(busyTimeout.Milliseconds())) + ")&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(NORMAL)&_pragma=cache_size(-" + strconv.Itoa(cacheKB) + ")" +
		"&_pragma=mmap_size(" + strconv.Itoa(mmapBytes) + ")&_pragma=wal_autocheckpoint(0)&_txlock=" + txlock
}

// busyTimeout is how long a connection waits for a lock another holds.
const busyTimeout = 2 * time.Minute

// Checkpoints in the background: every checkpointEvery, when the log has
// grown past checkpointBytes, its pages are copied into the database by a
// passive checkpoint, which waits for no reader and no writer. Every
// process that opens the index runs its own.
const (
	checkpointEvery = time.Second
	checkpointBytes = 4 << 20
)

// checkpointOnce copies the log's pages into the database without waiting
// for anyone, then, all copied, makes the log start over, else it would
// only grow: RESTART takes the write lock and waits for readers of the
// log, so it waits at most restartWait, on a connection of its own, and
// gives up (the next tick tries again). Nothing is left to copy by then.
func (d *DB) checkpointOnce() {
	ctx := context.Background()
	c, err := d.read.Conn(ctx)
	if err != nil {
		return
	}
	defer c.Close()
	var busy, frames, copied int
	if err := c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil || busy != 0 || copied != frames {
		return
	}
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout=%d", restartWait.Milliseconds())); err != nil {
		return
	}
	_ = c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &frames, &copied)
	_, _ = c.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout=%d", busyTimeout.Milliseconds())) // the pool's again
}

// restartWait bounds how long making the log start over may hold up
// writers, waiting for readers.
const restartWait = 20 * time.Millisecond

// upkeep checkpoints the log and tidies the full-text index, every
// checkpointEvery, until stop is closed.
func (d *DB) upkeep(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(checkpointEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		d.tidy(stop)
		if fi, err := os.Stat(d.path + "-wal"); err != nil || fi.Size() < checkpointBytes {
			continue
		}
		d.checkpointOnce()
	}
}

// Tidy merges the full-text index into one segment, dropping the text of
// every deleted row, in one transaction: for a rebuild, whose caller waits
// for it anyway (on 100,000 notes it takes seconds; a rebuild, minutes).
func (d *DB) Tidy() error {
	_, err := d.write.Exec("INSERT INTO fts(fts) VALUES('optimize')")
	return err
}

// Tidying. No write merges the full-text index's segments (ftsMerging),
// and a note's old text stays in them, only marked deleted, until its
// segment is merged: on a generated board of 100,000 notes and as many
// commits, the index held three times the pages it needed and every
// search read through them (a phrase search took 7× as long, a word
// 1.3-1.7×). Once this process has not written the index for tidyAfter,
// it merges the segments, 32 pages a step, each step its own short
// transaction, while a level holds two of them: a write that comes waits
// for one step at most, and stops the tidying until the board is quiet
// again. Reads go on meanwhile: they never wait for a writer.
const (
	tidyAfter = time.Second
	tidyTurn  = 250 * time.Millisecond
	tidyMerge = "INSERT INTO fts(fts, rank) VALUES('merge', 32)"
)

// tidy merges the full-text index's segments while this process writes
// nothing and stop is open, until a step finds nothing to merge or it has
// tidied for tidyTurn: the log is checkpointed between turns, and agents'
// processes keep most of the CPU meanwhile.
func (d *DB) tidy(stop <-chan struct{}) {
	for start := time.Now(); time.Since(start) < tidyTurn; {
		seen := d.updates.Load()
		quiet := d.writing.Load() == 0 && time.Since(time.Unix(0, d.lastUpdate.Load())) >= tidyAfter
		if seen == d.tidyUpTo.Load() || !quiet {
			return
		}
		select {
		case <-stop:
			return
		default:
		}
		merged, err := d.tidyStep()
		if err != nil {
			return // the next tick tries again
		}
		if !merged {
			d.tidyUpTo.Store(seen)
		}
	}
}

// tidyStep runs one step of merging and reports whether it merged
// anything: FTS5 says so only by the rows it changed, two or more.
func (d *DB) tidyStep() (merged bool, err error) {
	t, err := d.write.Begin()
	if err != nil {
		return false, err
	}
	defer t.Rollback()
	var levelHolds string // how many segments a level holds before it is merged
	if err := t.QueryRow("SELECT v FROM fts_config WHERE k='usermerge'").Scan(&levelHolds); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	if levelHolds != "2" {
		if _, err := t.Exec("INSERT INTO fts(fts, rank) VALUES('usermerge', 2)"); err != nil {
			return false, err
		}
	}
	var before, after int64
	if err := t.QueryRow("SELECT total_changes()").Scan(&before); err != nil {
		return false, err
	}
	if _, err := t.Exec(tidyMerge); err != nil {
		return false, err
	}
	if err := t.QueryRow("SELECT total_changes()").Scan(&after); err != nil {
		return false, err
	}
	return after-before >= 2, t.Commit()
}

func open(path string) (*DB, error) {
	write, err := sql.Open("sqlite", dsn(path, "immediate", writeCacheKB))
	if err != nil {
		return nil, err
	}
	write.SetMaxOpenConns(1)
	d := &DB{path: path, write: write}
	if err := d.ensureSchema(); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sql.Open("sqlite", dsn(path, "deferred", readCacheKB))
	if err != nil {
		write.Close()
		return nil, err
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(readIdle)
	d.read = read
	d.built.prepare = read.Prepare
	d.written.prepare = write.Prepare
	// Prepared now, while no transaction holds a connection: a statement
	// first prepared inside one would wait for another connection.
	d.hot = map[string]*sql.Stmt{}
	for _, q := range []string{headQuery, fileBlobQuery, diskQuery, noteQuery, matchingQuery, newestMatchingQuery, notesQuery, backlinksToQuery, linksFromQuery, candidatesQuery} {
		st, err := read.Prepare(q)
		if err != nil {
			d.Close()
			return nil, err
		}
		d.hot[q] = st
	}
	d.stopCheckpoints, d.checkpointsDone = make(chan struct{}), make(chan struct{})
	d.tidyUpTo.Store(-1) // an index opened may need tidying
	go d.upkeep(d.stopCheckpoints, d.checkpointsDone)
	return d, nil
}

// inTx runs queries in the read transaction t, prepared where they can be:
// the hot ones, and those built at run time once they were run.
type inTx struct {
	d *DB
	t *sql.Tx
}

func (q inTx) QueryRow(query string, args ...any) *sql.Row {
	if st := q.d.statement(query); st != nil {
		return q.t.Stmt(st).QueryRow(args...)
	}
	return q.t.QueryRow(query, args...)
}

func (q inTx) Query(query string, args ...any) (*sql.Rows, error) {
	if st := q.d.statement(query); st != nil {
		return q.t.Stmt(st).Query(args...)
	}
	return q.t.Query(query, args...)
}

// statement is query's prepared statement, nil while it has none: a query
// built at run time seen for the first time is run as it is, and prepared
// for the next time.
func (d *DB) statement(query string) *sql.Stmt {
	if st, ok := d.hot[query]; ok {
		return st
	}
	return d.built.get(query)
}

// runTimeStatements are statements prepared once first run: the read
// statements of queries built at run time (a listing's and a search's text
// depend on their scope and options, and preparing one was a tenth of a
// 100-row listing), and the statements of writes. A query is prepared in
// the background, outside the transaction that first ran it: preparing
// takes a connection of the pool, and a transaction that waited for one
// could wait for ever while every connection is in a transaction doing the
// same (the writer's pool has one). There are few shapes of query (a
// search's candidates are one, candidatesQuery); maxRunTimeStatements
// bounds them.
type runTimeStatements struct {
	prepare func(query string) (*sql.Stmt, error) // on the pool they run on
	mu      sync.Mutex
	// stmts holds a statement by query, nil while it is prepared (or
	// could not be: the query then runs unprepared, as it did).
	stmts  map[string]*sql.Stmt
	closed bool
}

const maxRunTimeStatements = 256

func (r *runTimeStatements) get(query string) *sql.Stmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, seen := r.stmts[query]
	if seen || r.closed || len(r.stmts) >= maxRunTimeStatements {
		return st
	}
	if r.stmts == nil {
		r.stmts = map[string]*sql.Stmt{}
	}
	r.stmts[query] = nil
	go func() {
		st, err := r.prepare(query)
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case err != nil:
		case r.closed:
			_ = st.Close()
		default:
			r.stmts[query] = st
		}
	}()
	return nil
}

// close closes the statements; none is prepared after.
func (r *runTimeStatements) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for _, st := range r.stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

func (d *DB) ensureSchema() error {
	// Read the version without taking the write lock: another process may
	// hold it for a long rebuild, and an existing index needs no writing.
	var v, n int
	if err := d.write.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		// A cheap sanity check that the file is a database of ours.
		return d.write.QueryRow("SELECT count(*) FROM meta").Scan(&n)
	}
	if v != 0 {
		return fmt.Errorf("%w: schema %d, want %d", errIncompatible, v, schemaVersion)
	}
	tx, err := d.write.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		return tx.Commit() // another process created it meanwhile
	}
	for _, stmt := range strings.Split(schema, ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.Exec(stmt); err != nil {
			return fmt.Errorf("create index schema: %w", err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// ReleaseMemory gives back the pages SQLite keeps cached: the readers'
// connections not in use are closed (the next read opens one again, with
// an empty cache), and the writer's cache is shrunk. A server gone quiet
// calls it.
func (d *DB) ReleaseMemory() {
	if d.read != nil {
		d.read.SetMaxIdleConns(0)
		d.read.SetMaxIdleConns(readIdle)
	}
	_, _ = d.write.Exec("PRAGMA shrink_memory")
}

// Close closes the database.
func (d *DB) Close() error {
	if d.stopCheckpoints != nil {
		close(d.stopCheckpoints)
		<-d.checkpointsDone
		d.stopCheckpoints = nil
	}
	errs := []error{d.built.close(), d.written.close()}
	for _, st := range d.hot {
		errs = append(errs, st.Close())
	}
	if d.read != nil {
		errs = append(errs, d.read.Close())
	}
	return errors.Join(append(errs, d.write.Close())...)
}

// Path is the database file.
func (d *DB) Path() string { return d.path }

// Head returns the commit the index reflects and its cursor (zero and 0 for an
// empty index).
func (d *DB) Head() (gitver.Hash, int, error) {
	return head(d.hot[headQuery].QueryRow)
}

type querier interface {
	QueryRow(query string, args ...any) *sql.Row
	Query(query string, args ...any) (*sql.Rows, error)
}

// head reads the indexed head and its cursor with headQuery, run by
// queryRow.
func head(queryRow func(args ...any) *sql.Row) (gitver.Hash, int, error) {
	var h sql.Null[gitver.Hash]
	var seq int
	if err := queryRow().Scan(&h, &seq); err != nil {
		return gitver.ZeroHash, 0, err
	}
	return h.V, seq, nil
}

// headIn is head for a querier.
func headIn(q querier) (gitver.Hash, int, error) {
	return head(func(args ...any) *sql.Row { return q.QueryRow(headQuery, args...) })
}

// Update runs fn in one write transaction (BEGIN IMMEDIATE: one writer at a
// time across all processes). fn's changes are committed if it returns nil.
func (d *DB) Update(fn func(tx *Tx) error) error {
	x := &Tx{fts: map[int64]*Text{}}
	d.writing.Add(1)
	err := d.update(x, fn)
	d.lastUpdate.Store(time.Now().UnixNano())
	d.updates.Add(1)
	d.writing.Add(-1)
	if x.bulk {
		// The transaction is over and its connection free: its cache is
		// made small again, and the pages it held given back.
		_, _ = d.write.Exec("PRAGMA cache_size=-" + strconv.Itoa(writeCacheKB))
		_, _ = d.write.Exec("PRAGMA shrink_memory")
	}
	if err != nil {
		return err
	}
	d.merging.Store(true)
	return nil
}

func (d *DB) update(x *Tx, fn func(tx *Tx) error) error {
	t, err := d.write.Begin()
	if err != nil {
		return err
	}
	defer t.Rollback()
	x.t, x.prepared = t, &d.written
	if err := fn(x); err != nil {
		return err
	}
	if !d.merging.Load() {
		// An index made before it was set.
		var v string
		err := t.QueryRow("SELECT v FROM fts_config WHERE k='automerge'").Scan(&v)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if v != "0" {
			if _, err := t.Exec(ftsMerging); err != nil {
				return err
			}
		}
	}
	if err := x.flushFTS(); err != nil {
		return err
	}
	return t.Commit()
}
