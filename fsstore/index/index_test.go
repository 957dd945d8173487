package index

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// An index another process is busy writing (a long rebuild holds the write
// lock) opens, and is never mistaken for a broken one and deleted.
// openTestIndex opens an index of the test's own, closed when it ends.
func openTestIndex(t *testing.T) *DB {
	t.Helper()
	d, err := Open(filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestOpenDuringAnotherWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	before := inodeOf(t, path)
	holder, err := sql.Open("sqlite", dsn(path, "immediate", writeCacheKB))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("INSERT INTO meta(key,value) VALUES('busy','1')"); err != nil {
		t.Fatal(err)
	}
	d, err = Open(path)
	if err != nil {
		t.Fatalf("open while another connection writes: %v", err)
	}
	defer d.Close()
	if after := inodeOf(t, path); after != before {
		t.Fatal("the busy index was deleted and made anew")
	}
	if _, _, err := d.Head(); err != nil {
		t.Fatalf("read while another connection writes: %v", err)
	}
}

// Files that are not an index of this version are replaced.
func TestOpenReplacesForeignFiles(t *testing.T) {
	for name, content := range map[string]string{
		"garbage":   "this is not a database, just some bytes that are long enough to look like a header",
		"truncated": "SQLite format 3\x00",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "index.db")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := Open(path)
			if err != nil {
				t.Fatalf("open over a broken file: %v", err)
			}
			d.Close()
		})
	}
	t.Run("other version", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "index.db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		d, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		var v int
		if err := d.read.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != schemaVersion {
			t.Errorf("user_version = %d, %v; want %d", v, err, schemaVersion)
		}
	})
}

// The full-text index merges its segments only when a level is full, not a
// little at every write, an index made before that was set included: its
// first write sets it.
func TestFullTextIndexMergesOnlyFullLevels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.write.Exec("INSERT INTO fts(fts, rank) VALUES('automerge', 4)"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if d, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Update(func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var v string
	if err := d.read.QueryRow("SELECT v FROM fts_config WHERE k='automerge'").Scan(&v); err != nil || v != "0" {
		t.Fatalf("automerge is %q (%v), want 0", v, err)
	}
}

// TestLogCheckpointedInTheBackground: no commit checkpoints the
// write-ahead log, yet it does not grow without end: the background
// checkpoints copy it into the database as writes go on.
func TestLogCheckpointedInTheBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.write.Exec("CREATE TABLE filler(b BLOB)"); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 256<<10)
	const written = 48 << 20
	largest := int64(0)
	for n := 0; n < written; n += len(chunk) {
		if _, err := d.write.Exec("INSERT INTO filler(b) VALUES(?)", chunk); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // 12 MB/s: the checkpoints' pace is a second
		if fi, err := os.Stat(path + "-wal"); err == nil {
			largest = max(largest, fi.Size())
		}
	}
	if largest >= written/2 {
		t.Errorf("the log grew to %d MB while %d MB were written", largest>>20, written>>20)
	}
}

// TestBulkCacheLastsOneTransaction: a bulk transaction has the large page
// cache, and the write connection has the small one again after it, whether
// it committed or failed (and the connection is not left waiting on
// itself).
func TestBulkCacheLastsOneTransaction(t *testing.T) {
	d := openTestIndex(t)
	cacheKB := func(q interface{ QueryRow(string, ...any) *sql.Row }) int {
		var v int
		if err := q.QueryRow("PRAGMA cache_size").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return -v
	}
	failed := errors.New("the transaction fails")
	for _, outcome := range []error{nil, failed} {
		err := d.Update(func(tx *Tx) error {
			if got := cacheKB(tx.t); got != writeCacheKB {
				t.Errorf("before Bulk: cache %d KB, want %d", got, writeCacheKB)
			}
			if err := tx.Bulk(); err != nil {
				return err
			}
			if got := cacheKB(tx.t); got != bulkCacheKB {
				t.Errorf("in a bulk transaction: cache %d KB, want %d", got, bulkCacheKB)
			}
			return outcome
		})
		if !errors.Is(err, outcome) {
			t.Fatalf("Update: %v, want %v", err, outcome)
		}
		if got := cacheKB(d.write); got != writeCacheKB {
			t.Errorf("after a bulk transaction (%v): cache %d KB, want %d", outcome, got, writeCacheKB)
		}
	}
}

// The full-text index is tidied once the process has written nothing for a
// while: segments merged, deleted notes' text dropped from them, and every
// search finds what it found before.
func TestFullTextIndexTidiedWhenQuiet(t *testing.T) {
	d := openTestIndex(t)
	words := []string{"alpha", "beta", "gamma", "delta", "shard", "index", "cache", "latency"}
	text := func(id, round int) string {
		return fmt.Sprintf("%s %s %s round%d", words[id%len(words)], words[(id/3)%len(words)], words[(id*7+round)%len(words)], round)
	}
	for round := range 40 {
		err := d.Update(func(x *Tx) error {
			for id := range 200 { // every note rewritten each round: its old text deleted
				if _, err := x.exec("DELETE FROM fts WHERE rowid=?", id+1); err != nil {
					return err
				}
				if _, err := x.exec("INSERT INTO fts(rowid, addr, digest, body, fields, ids, echo) VALUES(?, '', '', ?, '', '', '')", id+1, text(id, round)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	queries := []string{"alpha", "shard AND cache", `"gamma delta"`, "round39", "round3", "lat*"}
	matches := func() map[string][]int64 {
		found := map[string][]int64{}
		for _, q := range queries {
			rows, err := d.read.Query("SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rowid", q)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				found[q] = append(found[q], id)
			}
			rows.Close()
		}
		return found
	}
	pages := func() int {
		var n int
		if err := d.read.QueryRow("SELECT count(*) FROM fts_data").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before, untidy := matches(), pages()
	if len(before["round39"]) != 200 || len(before["round3"]) != 0 {
		t.Fatalf("before tidying: %d notes of the last round, %d of an earlier one; want 200 and 0", len(before["round39"]), len(before["round3"]))
	}
	for deadline := time.Now().Add(time.Minute); d.tidyUpTo.Load() != d.updates.Load(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the index was not tidied within a minute of its last write")
		}
	}
	if tidy := pages(); tidy*2 > untidy {
		t.Errorf("tidying left %d of the index's %d pages; want at most half", tidy, untidy)
	}
	if after := matches(); !reflect.DeepEqual(after, before) {
		t.Errorf("searches after tidying differ:\n%v\nbefore:\n%v", after, before)
	}
}

// TestRunTimeQueriesArePreparedOnceRun: a query built at run time runs
// unprepared the first time, prepared once its statement is ready, with
// the same rows; a database closed while a statement is prepared closes it.
func TestRunTimeQueriesArePreparedOnceRun(t *testing.T) {
	d := openTestIndex(t)
	for i, key := range []string{"a/x", "a/y", "b/z"} {
		if _, err := d.write.Exec(`INSERT INTO notes(id,key,topic,version,last_seq,present,note_blob,content_blob,
			content_path,digest,kind,author,updated,bytes,est_tokens,problem) VALUES(?,?,?,1,?,1,'','','','','','','',0,0,'')`,
			i+1, key, key[:1], i+1); err != nil {
			t.Fatal(err)
		}
	}
	list := func() []string {
		var keys []string
		err := d.Read(func(s *Snapshot) error {
			notes, _, err := s.List(ListQuery{Scope: Scope{Prefixes: []string{"a"}}, Limit: 10})
			for _, n := range notes {
				keys = append(keys, n.Key)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	prepared := func() int {
		d.built.mu.Lock()
		defer d.built.mu.Unlock()
		n := 0
		for _, st := range d.built.stmts {
			if st != nil {
				n++
			}
		}
		return n
	}
	first := list()
	for deadline := time.Now().Add(10 * time.Second); prepared() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no statement was prepared for the listing")
		}
	}
	if again := list(); !slices.Equal(first, again) || len(first) != 2 {
		t.Errorf("listed %v unprepared, %v prepared; want a/x and a/y", first, again)
	}

	other := openTestIndex(t)
	if err := other.Read(func(s *Snapshot) error {
		_, _, err := s.List(ListQuery{Scope: Scope{Prefixes: []string{"b"}}, Limit: 1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	other.built.mu.Lock()
	defer other.built.mu.Unlock()
	if !other.built.closed {
		t.Error("a closed database still prepares statements")
	}
}

// TestWriteStatementsPreparedOnce: the statements of writes are prepared on
// the writer once each, whatever the number of transactions that run them,
// and a transaction after the first takes them as prepared.
func TestWriteStatementsPreparedOnce(t *testing.T) {
	d := openTestIndex(t)
	var mu sync.Mutex
	prepared := map[string]int{}
	prepare := d.written.prepare
	d.written.prepare = func(q string) (*sql.Stmt, error) {
		mu.Lock()
		prepared[q]++
		mu.Unlock()
		return prepare(q)
	}
	for i := range 50 {
		if err := d.Update(func(x *Tx) error { return x.SetHead(gitver.Hash{byte(i + 1)}) }); err != nil {
			t.Fatal(err)
		}
	}
	// Prepared in the background once first run: wait until it is (a
	// look that does not ask for it, as get would).
	held := func() *sql.Stmt {
		d.written.mu.Lock()
		defer d.written.mu.Unlock()
		return d.written.stmts[setHeadQuery]
	}
	for deadline := time.Now().Add(10 * time.Second); held() == nil && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if held() == nil {
		t.Fatal("the statement of SetHead was never prepared on the writer")
	}
	for range 20 {
		if err := d.Update(func(x *Tx) error { return x.SetHead(gitver.Hash{7}) }); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for q, n := range prepared {
		if n != 1 {
			t.Errorf("prepared %d times on the writer, once wanted: %s", n, q)
		}
	}
	if prepared[setHeadQuery] != 1 {
		t.Errorf("SetHead's statement prepared %d times on the writer, once wanted", prepared[setHeadQuery])
	}
}
