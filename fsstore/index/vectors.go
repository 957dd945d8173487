package index

import (
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// sourceOf is what a note's vector is made from: its note blob and content
// blob ("" for none), as the vectors table records them.
const sourceOf = "n.note_blob || ':' || n.content_blob"

// Unembedded is a present note whose vector is missing, or was made from
// other text or by another model.
type Unembedded struct {
	ID          int64
	Key         string
	NoteBlob    gitver.Hash
	ContentBlob gitver.Hash // zero when the content is inline
}

// Source is what the note's vector is made from.
func (u Unembedded) Source() string {
	c := ""
	if !u.ContentBlob.IsZero() {
		c = u.ContentBlob.String()
	}
	return u.NoteBlob.String() + ":" + c
}

// Unembedded lists up to limit present notes changed after the cursor
// since (0: all), by row after the row after, whose vector by model is
// missing or stale.
func (s *Snapshot) Unembedded(model string, since int, after int64, limit int) ([]Unembedded, error) {
	rows, err := s.q.Query(`SELECT n.id, n.key, n.note_blob, n.content_blob FROM notes n LEFT JOIN vectors v ON v.id = n.id
		WHERE n.present = 1 AND n.last_seq > ? AND n.id > ? AND (v.id IS NULL OR v.model != ? OR v.source != `+sourceOf+`)
		ORDER BY n.id LIMIT ?`, since, after, model, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Unembedded
	for rows.Next() {
		var u Unembedded
		var nb, cb string
		if err := rows.Scan(&u.ID, &u.Key, &nb, &cb); err != nil {
			return nil, err
		}
		if u.NoteBlob, err = gitver.ParseHash(nb); err != nil {
			return nil, err
		}
		if cb != "" {
			if u.ContentBlob, err = gitver.ParseHash(cb); err != nil {
				return nil, err
			}
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// VectorCounts says how many present notes have a current vector by model,
// and how many have one by another model.
func (s *Snapshot) VectorCounts(model string) (current, otherModel, present int, err error) {
	err = s.q.QueryRow(`SELECT count(*), coalesce(sum(v.model = ? AND v.source = `+sourceOf+`), 0), coalesce(sum(v.model != ?), 0)
		FROM notes n LEFT JOIN vectors v ON v.id = n.id WHERE n.present = 1`, model, model).Scan(&present, &current, &otherModel)
	return current, otherModel, present, err
}

// NewVector is a vector made for a note from source.
type NewVector struct {
	ID     int64
	Source string
	Vec    []byte
}

// PutVectors stores vectors made by model, each only if its note still has
// the text it was made from.
func (x *Tx) PutVectors(model string, vs []NewVector) error {
	if len(vs) == 0 {
		return nil
	}
	// gen is the time, and always past what is stored: readers ask for
	// what is newer than the last they saw, also after the index was
	// rebuilt.
	var last sql.NullInt64
	if err := x.queryRow("SELECT max(gen) FROM vectors").Scan(&last); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	gen := max(time.Now().UnixNano(), last.Int64+1)
	for _, v := range vs {
		if _, err := x.exec(`INSERT OR REPLACE INTO vectors(id, source, model, gen, vec)
			SELECT n.id, ?, ?, ?, ? FROM notes n WHERE n.id = ? AND n.present = 1 AND `+sourceOf+` = ?`,
			v.Source, model, gen, v.Vec, v.ID, v.Source); err != nil {
			return err
		}
	}
	return nil
}

// StoredVector is a note's vector as a reader loads it.
type StoredVector struct {
	Key string
	Gen int64
	Vec []byte
}

// VectorsSince returns the vectors by model made after gen, oldest first.
func (s *Snapshot) VectorsSince(model string, gen int64) ([]StoredVector, error) {
	rows, err := s.q.Query(`SELECT n.key, v.gen, v.vec FROM vectors v JOIN notes n ON n.id = v.id
		WHERE v.gen > ? AND v.model = ? ORDER BY v.gen`, gen, model)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredVector
	for rows.Next() {
		var v StoredVector
		if err := rows.Scan(&v.Key, &v.Gen, &v.Vec); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// VectorsMade is the indexed commit up to which every present note had its
// vector by model when the last pass of any process finished, and its
// cursor; zero when there was none, or when that commit is no longer in the
// index (the branch moved back past it): then every note is looked at.
func (s *Snapshot) VectorsMade(model string) (gitver.Hash, int, error) {
	var v string
	err := s.q.QueryRow("SELECT value FROM meta WHERE key='vectors_made'").Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return gitver.ZeroHash, 0, nil
	}
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	m, h, ok := strings.Cut(v, " ")
	head, perr := gitver.ParseHash(h)
	if !ok || m != model || perr != nil {
		return gitver.ZeroHash, 0, nil
	}
	c, ok, err := s.CommitOf(head)
	if err != nil || !ok {
		return gitver.ZeroHash, 0, err
	}
	return head, c.Seq, nil
}

// SetVectorsMade records that every present note had its vector by model
// at the indexed commit head.
func (x *Tx) SetVectorsMade(model string, head gitver.Hash) error {
	_, err := x.exec("INSERT INTO meta(key,value) VALUES('vectors_made',?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
		model+" "+head.String())
	return err
}
