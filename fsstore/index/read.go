package index

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"syscall"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Snapshot is a consistent read of the index: every query sees the same
// indexed head, even while another process catches the index up.
type Snapshot struct {
	q querier // the snapshot's transaction, its reads prepared where they can be
}

// Read runs fn on a snapshot.
func (d *DB) Read(fn func(s *Snapshot) error) error {
	t, err := d.read.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer t.Rollback()
	return fn(&Snapshot{q: inTx{d, t}})
}

// ReadAhead runs fn on a snapshot of the index brought forward by catchUp,
// in a write transaction that is then rolled back: nothing is written to
// the database, so it answers where a catch-up cannot be committed (the
// disk is full). The caught-up pages stay in SQLite's page cache meanwhile.
func (d *DB) ReadAhead(catchUp func(*Tx) error, fn func(*Snapshot) error) error {
	t, err := d.write.Begin()
	if err != nil {
		return err
	}
	defer t.Rollback()
	x := &Tx{t: t, fts: map[int64]*Text{}, prepared: &d.written}
	if err := catchUp(x); err != nil {
		return err
	}
	if err := x.flushFTS(); err != nil {
		return err
	}
	return fn(&Snapshot{q: t}) // the prepared statements are the read pool's
}

// IsFull reports whether err is the database's or the file system's "no
// space left".
func IsFull(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == sqliteFull {
		return true
	}
	return errors.Is(err, syscall.ENOSPC)
}

// Head is the commit the snapshot reflects and its cursor.
func (s *Snapshot) Head() (gitver.Hash, int, error) { return headIn(s.q) }

// Note returns a note by its short address.
func (s *Snapshot) Note(key string) (Note, bool, error) { return noteRow(s.q, key) }

// Event is one commit that changed a note, for provenance.
type Event struct {
	Commit
	Version int // the note's version after this commit
	// NoteBlob is the note file's blob after the commit (the latest at or
	// before it, when the commit changed only the note's blob file), ""
	// when the note file was deleted.
	NoteBlob gitver.Hash
	// MovedFrom is the note whose file this commit deleted with the same
	// content, when it created this one: a move.
	MovedFrom string
}

// History lists the commits that changed a note, newest first, with the
// note's version after each as its place among them. For a closed commit
// (Commit.Closed) that is its version on the commit graph: the commits
// before it are exactly those it reaches. A commit of a side of a merge
// reaches fewer: its version is VersionAt's.
func (s *Snapshot) History(key string, limit int) ([]Event, error) {
	total, err := s.versions(key)
	if err != nil {
		return nil, err
	}
	return s.events(key, total, limit, 0)
}

// EventAt is the commit that made version of the note key, as History
// numbers them; ok is false when the note never had that version, and
// total is how many it has had.
func (s *Snapshot) EventAt(key string, version int) (e Event, total int, ok bool, err error) {
	if total, err = s.versions(key); err != nil || version < 1 || version > total {
		return e, total, false, err
	}
	events, err := s.events(key, total, 1, total-version)
	if err != nil || len(events) == 0 {
		return e, total, false, err
	}
	return events[0], total, true, nil
}

// versions is how many commits changed the note key.
func (s *Snapshot) versions(key string) (int, error) {
	var total int
	err := s.q.QueryRow("SELECT count(DISTINCT seq) FROM changes WHERE note=?", key).Scan(&total)
	return total, err
}

// events lists at most limit of the commits that changed the note key,
// newest first, skipping the skip newest; total is how many there are.
func (s *Snapshot) events(key string, total, limit, skip int) ([]Event, error) {
	rows, err := s.q.Query(`SELECT c.seq, c.hash, c.author, c.email, c.time, c.subject, c.by_program, c.closed,
			coalesce((SELECT x.new FROM changes x WHERE x.path = ?1 || '.md' AND x.seq <= c.seq
			          ORDER BY x.seq DESC LIMIT 1), ''),
			coalesce((SELECT m.note FROM changes x JOIN changes m ON m.seq = x.seq AND m.new = '' AND m.old = x.new
			          AND m.path LIKE '%.md' AND m.path NOT LIKE '%.blob.md' AND m.note != ?1
			          WHERE x.seq = c.seq AND x.path = ?1 || '.md' AND x.old = '' AND x.new != '' LIMIT 1), '')
		FROM commits c WHERE c.seq IN (SELECT DISTINCT seq FROM changes WHERE note = ?1)
		ORDER BY c.seq DESC LIMIT ?2 OFFSET ?3`, key, limit, skip)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.Seq, &e.Hash, &e.Author, &e.Email, &e.Time, &e.Subject, &e.ByProgram, &e.Closed, &e.NoteBlob, &e.MovedFrom); err != nil {
			return nil, err
		}
		e.Version = total - skip - len(out)
		out = append(out, e)
	}
	return out, rows.Err()
}

// CommitOf returns where a commit stands in the index; ok is false when it
// is not indexed.
func (s *Snapshot) CommitOf(hash gitver.Hash) (c IndexedCommit, ok bool, err error) {
	err = s.q.QueryRow("SELECT seq, closed FROM commits WHERE hash=?", hash).Scan(&c.Seq, &c.Closed)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
}

// VersionAt counts the commits that changed a note among those a commit
// reaches, given as the closed commit upTo (it and every commit before it)
// and more (any others, by seq).
func (s *Snapshot) VersionAt(key string, upTo int, more []int) (int, error) {
	var n int
	if err := s.q.QueryRow("SELECT count(DISTINCT seq) FROM changes WHERE note=? AND seq<=?", key, upTo).Scan(&n); err != nil {
		return 0, err
	}
	for _, seq := range more {
		if seq <= upTo {
			continue
		}
		var changed bool
		if err := s.q.QueryRow("SELECT EXISTS(SELECT 1 FROM changes WHERE note=? AND seq=?)", key, seq).Scan(&changed); err != nil {
			return 0, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

// FileBlob returns the blob a path holds at the snapshot's head ("" when
// absent).
func (s *Snapshot) FileBlob(path string) (gitver.Hash, error) {
	var b gitver.Hash
	err := s.q.QueryRow(fileBlobQuery, path).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return gitver.ZeroHash, nil
	}
	return b, err
}

// FileChange is one commit's change of a path: the blob it left, and the
// commit.
type FileChange struct {
	Blob, Commit gitver.Hash
	Subject      string
}

// RecentChanges returns a path's last limit changes that left it present,
// newest first: the versions a person's save may have been made from.
func (s *Snapshot) RecentChanges(path string, limit int) ([]FileChange, error) {
	rows, err := s.q.Query(`SELECT x.new, c.hash, c.subject FROM changes x JOIN commits c ON c.seq = x.seq
		WHERE x.path=? AND x.new != '' ORDER BY x.seq DESC LIMIT ?`, path, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FileChange
	for rows.Next() {
		var f FileChange
		if err := rows.Scan(&f.Blob, &f.Commit, &f.Subject); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Disk returns what was recorded of a file's stat when it last matched its
// blob.
func (s *Snapshot) Disk(path string) (DiskStat, bool, error) {
	var d DiskStat
	var ino int64
	err := s.q.QueryRow(diskQuery, path).Scan(&d.Blob, &d.Size, &d.MTime, &ino)
	if errors.Is(err, sql.ErrNoRows) {
		return DiskStat{}, false, nil
	}
	d.Ino = uint64(ino)
	return d, err == nil, err
}

// Reading is what the index found when it read a present note's file:
// the blob it read, its blob file's path and blob, its digest, and what was
// wrong.
type Reading struct {
	NoteBlob, ContentBlob        gitver.Hash
	ContentPath, Digest, Problem string
}

// Readings returns the reading of every present note, by the path of its
// file: what a check of the front matter of a whole board need not parse
// again where the blob is the same.
func (s *Snapshot) Readings() (map[string]Reading, error) {
	rows, err := s.q.Query("SELECT key, note_blob, content_blob, content_path, digest, problem FROM notes WHERE present")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Reading{}
	for rows.Next() {
		var key string
		var rd Reading
		if err := rows.Scan(&key, &rd.NoteBlob, &rd.ContentBlob, &rd.ContentPath, &rd.Digest, &rd.Problem); err != nil {
			return nil, err
		}
		out[key+".md"] = rd
	}
	return out, rows.Err()
}

// PresentFile is a file of a present note at the snapshot's head: its
// blob, and the stat recorded when the file on disk last matched a blob.
type PresentFile struct {
	Path      string
	Committed gitver.Hash
	Recorded  DiskStat
	HasStat   bool
}

// EachPresentFile calls fn with every note file and blob file of the
// present notes, in no order: what a look at the whole work tree compares
// the disk with, one row at a time, where maps of the two tables cost a
// board of 100,000 notes 20 MB.
func (s *Snapshot) EachPresentFile(fn func(PresentFile) error) error {
	rows, err := s.q.Query(`
SELECT f.path, f.blob, coalesce(d.blob,''), coalesce(d.size,0), coalesce(d.mtime,0), coalesce(d.ino,0), d.path IS NOT NULL
FROM (SELECT key || '.md' AS path, note_blob AS blob FROM notes WHERE present
      UNION ALL
      SELECT content_path, content_blob FROM notes WHERE present AND content_path != '') AS f
LEFT JOIN disk d ON d.path = f.path`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var f PresentFile
		var ino int64
		if err := rows.Scan(&f.Path, &f.Committed, &f.Recorded.Blob, &f.Recorded.Size, &f.Recorded.MTime, &ino, &f.HasStat); err != nil {
			return err
		}
		f.Recorded.Ino = uint64(ino)
		if err := fn(f); err != nil {
			return err
		}
	}
	return rows.Err()
}

// DiskStat is what was recorded of a file's stat when it last matched Blob.
type DiskStat struct {
	Blob        gitver.Hash
	Size, MTime int64
	Ino         uint64
}

// DiskAll returns every recorded stat, by path.
func (s *Snapshot) DiskAll() (map[string]DiskStat, error) {
	rows, err := s.q.Query("SELECT path, blob, size, mtime, ino FROM disk")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]DiskStat{}
	for rows.Next() {
		var p string
		var d DiskStat
		var ino int64
		if err := rows.Scan(&p, &d.Blob, &d.Size, &d.MTime, &ino); err != nil {
			return nil, err
		}
		d.Ino = uint64(ino)
		out[p] = d
	}
	return out, rows.Err()
}

// NoteVersion is a note's version and whether it is present, as the index
// holds it.
type NoteVersion struct {
	Version int
	Present bool
}

// Versions returns every note the index has counted, deleted ones too, by
// key: what a check compares between two indexes of the same history.
func (s *Snapshot) Versions() (map[string]NoteVersion, error) {
	rows, err := s.q.Query("SELECT key, version, present FROM notes")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]NoteVersion{}
	for rows.Next() {
		var key string
		var v NoteVersion
		if err := rows.Scan(&key, &v.Version, &v.Present); err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, rows.Err()
}

// HeldClaim is a claim on a present note that is not done.
type HeldClaim struct {
	Key, By string
	Until   int64 // Unix seconds
}

// Waits lists, by source, the depends_on links that hold a task back
// (ListQuery.Open) among present notes, whoever may read them: a cycle of
// them keeps its tasks from ever being offered.
func (s *Snapshot) Waits() (map[string][]string, error) {
	rows, err := s.q.Query(`SELECT l.src, l.dst FROM links l
		JOIN notes a ON a.key = l.src AND a.present = 1 AND a.done = 0
		JOIN notes b ON b.key = l.dst AND ` + holdsBack("b", "a") + `
		WHERE l.rel = 'depends_on' ORDER BY l.src, l.dst`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var src, dst string
		if err := rows.Scan(&src, &dst); err != nil {
			return nil, err
		}
		out[src] = append(out[src], dst)
	}
	return out, rows.Err()
}

// Claims lists the claims on present notes not done, by note, and when
// each author last committed (Unix seconds): what tells a claim whose
// holder stopped writing.
func (s *Snapshot) Claims() (claims []HeldClaim, lastCommit map[string]int64, err error) {
	rows, err := s.q.Query("SELECT key, claimed_by, claim_until FROM notes WHERE present AND claimed_by != '' AND done = 0 ORDER BY key")
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var c HeldClaim
		if err := rows.Scan(&c.Key, &c.By, &c.Until); err != nil {
			return nil, nil, err
		}
		claims = append(claims, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	lastCommit = map[string]int64{}
	if len(claims) == 0 {
		return claims, lastCommit, nil
	}
	authors, err := s.q.Query("SELECT author, max(time) FROM commits GROUP BY author")
	if err != nil {
		return nil, nil, err
	}
	defer authors.Close()
	for authors.Next() {
		var a string
		var at int64
		if err := authors.Scan(&a, &at); err != nil {
			return nil, nil, err
		}
		lastCommit[a] = at
	}
	return claims, lastCommit, authors.Err()
}

// ActivityCommit is a commit of the branch with the notes it changed.
type ActivityCommit struct {
	Seq       int
	Hash      gitver.Hash
	Author    string
	Time      int64 // Unix seconds
	Subject   string
	ByProgram bool
	Notes     []string // keys, in key order
}

// Activity lists the last limit commits of the branch, newest first, each
// with the notes it changed.
func (s *Snapshot) Activity(limit int) ([]ActivityCommit, error) {
	rows, err := s.q.Query(`SELECT c.seq, c.hash, c.author, c.time, c.subject, c.by_program,
		coalesce((SELECT group_concat(note, char(10)) FROM (SELECT DISTINCT note FROM changes x WHERE x.seq = c.seq AND x.note != '' ORDER BY note)), '')
		FROM commits c ORDER BY c.seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ActivityCommit
	for rows.Next() {
		var a ActivityCommit
		var notes string
		if err := rows.Scan(&a.Seq, &a.Hash, &a.Author, &a.Time, &a.Subject, &a.ByProgram, &notes); err != nil {
			return nil, err
		}
		if notes != "" {
			a.Notes = strings.Split(notes, "\n")
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Note is the note at key as the index holds it now; its zero value (and
// no error) when there is none.
func (d *DB) Note(key string) (Note, error) {
	var n Note
	err := d.Read(func(s *Snapshot) error {
		var err error
		n, _, err = s.Note(key)
		return err
	})
	return n, err
}

// StatOf is the stat of a file of the work tree as the index records it.
func StatOf(st gitver.FileStat) DiskStat {
	return DiskStat{Size: st.Size, MTime: st.MTime, Ino: st.Ino}
}

// SameStat reports whether a file's stat now is the one recorded when it
// last matched its blob: its size, and its modification time to the
// nanosecond. The inode is recorded, not compared (as git's
// core.checkStat=minimal): a copy of the board (cp -a, a restored backup)
// keeps every file's size and time and gives it a new inode, and a file
// replaced since by another of its very size and nanosecond time is not
// something an editor or git makes.
func SameStat(recorded, now DiskStat) bool {
	return recorded.Size == now.Size && recorded.MTime == now.MTime
}
