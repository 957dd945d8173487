package index

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestListAgreesWithScope lists random boards under random scopes and
// compares each listing with the notes Scope.contains keeps, in order:
// addresses that sort between a prefix and its notes ("p-x", "p.x", "p0")
// never slip in, and the count is the whole of them, whether it is taken
// from the topics' counts (scopes of whole topics) or from the rows.
func TestListAgreesWithScope(t *testing.T) {
	d := openTestIndex(t)
	rng := rand.New(rand.NewPCG(26, 7))
	segs := []string{"p", "p-x", "p.x", "p0", "pa", "q", "a", "a-b", "z"}
	for round := range 40 {
		if _, err := d.write.Exec("DELETE FROM notes"); err != nil {
			t.Fatal(err)
		}
		type row struct {
			key     string
			seq     int
			present bool
		}
		var rows []row
		seen := map[string]bool{}
		for i := range 150 {
			parts := make([]string, 1+rng.IntN(3))
			for j := range parts {
				parts[j] = segs[rng.IntN(len(segs))]
			}
			key := strings.Join(parts, "/")
			if seen[key] {
				continue
			}
			seen[key] = true
			r := row{key, rng.IntN(60), rng.IntN(5) > 0}
			rows = append(rows, r)
			if _, err := d.write.Exec(`INSERT INTO notes(id,key,topic,version,last_seq,present,note_blob,content_blob,
				content_path,digest,kind,author,updated,bytes,est_tokens,problem) VALUES(?,?,?,1,?,?,'','','','','','','',0,0,'')`,
				i+1, key, parts[0], r.seq, r.present); err != nil {
				t.Fatal(err)
			}
		}
		for range 30 {
			var scope Scope
			if rng.IntN(6) > 0 {
				scope.Prefixes = []string{}
				for range rng.IntN(3) { // no prefix at all: a scope that holds nothing
					parts := make([]string, 1+rng.IntN(2))
					for j := range parts {
						parts[j] = segs[rng.IntN(len(segs))]
					}
					scope.Prefixes = append(scope.Prefixes, strings.Join(parts, "/"))
				}
			}
			byName := rng.IntN(2) == 0
			var want []row
			for _, r := range rows {
				if r.present && scope.contains(r.key) {
					want = append(want, r)
				}
			}
			slices.SortFunc(want, func(a, b row) int {
				if !byName && a.seq != b.seq {
					return b.seq - a.seq
				}
				return strings.Compare(a.key, b.key)
			})
			limit := 1 + rng.IntN(20)
			var got []Note
			var total int
			err := d.Read(func(s *Snapshot) error {
				var err error
				got, total, err = s.List(ListQuery{Scope: scope, ByName: byName, Limit: limit})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if total != len(want) {
				t.Fatalf("round %d, scope %q: count %d, want %d", round, scope.Prefixes, total, len(want))
			}
			for i, n := range got {
				if n.Key != want[i].key {
					t.Fatalf("round %d, scope %q, by name %v: item %d is %s, want %s", round, scope.Prefixes, byName, i, n.Key, want[i].key)
				}
			}
			if len(got) != min(limit, len(want)) {
				t.Fatalf("round %d, scope %q: %d items, want %d", round, scope.Prefixes, len(got), min(limit, len(want)))
			}
			// The topics' counts are the same notes, by topic.
			wantCounts := map[string]int{}
			for _, r := range want {
				topic, _, _ := strings.Cut(r.key, "/")
				wantCounts[topic]++
			}
			var counts []TopicCount
			if err := d.Read(func(s *Snapshot) error {
				counts, err = s.TopicCounts(scope)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			gotCounts := map[string]int{}
			for _, c := range counts {
				gotCounts[c.Topic] = c.Notes
			}
			if !maps.Equal(gotCounts, wantCounts) {
				t.Fatalf("round %d, scope %q: topic counts %v, want %v", round, scope.Prefixes, gotCounts, wantCounts)
			}
			// So are the folders one level below a prefix, by folder.
			parts := make([]string, 1+rng.IntN(2))
			for j := range parts {
				parts[j] = segs[rng.IntN(len(segs))]
			}
			under := strings.Join(parts, "/")
			wantFolders := map[string]int{}
			for _, r := range want {
				if rest, ok := strings.CutPrefix(r.key, under+"/"); ok {
					if child, _, deeper := strings.Cut(rest, "/"); deeper {
						wantFolders[under+"/"+child]++
					}
				}
			}
			if err := d.Read(func(s *Snapshot) error {
				counts, err = s.Folders(scope, under)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			gotFolders := map[string]int{}
			for _, c := range counts {
				gotFolders[c.Topic] = c.Notes
			}
			if !maps.Equal(gotFolders, wantFolders) {
				t.Fatalf("round %d, scope %q: folders under %s %v, want %v", round, scope.Prefixes, under, gotFolders, wantFolders)
			}
		}
	}
}

// TestTopicCountsFollowTheNotes: the counts the triggers keep equal a count
// of the notes, through random creations, deletions, returns and removals
// of rows (what catch-ups, rewrites and Truncate do).
func TestTopicCountsFollowTheNotes(t *testing.T) {
	d := openTestIndex(t)
	rng := rand.New(rand.NewPCG(9, 9))
	topics := []string{"a", "b", "c"}
	for step := range 600 {
		key := fmt.Sprintf("%s/k%d", topics[rng.IntN(3)], rng.IntN(20))
		topic, _, _ := strings.Cut(key, "/")
		var stmt string
		var args []any
		switch rng.IntN(4) {
		case 0:
			stmt, args = `INSERT OR IGNORE INTO notes(key,topic,version,last_seq,present,note_blob,content_blob,content_path,digest,kind,author,updated,bytes,est_tokens,problem)
				VALUES(?,?,1,1,?,'','','','','','','',0,0,'')`, []any{key, topic, rng.IntN(2)}
		case 1, 2:
			stmt, args = "UPDATE notes SET present = ? WHERE key = ?", []any{rng.IntN(2), key}
		default:
			stmt, args = "DELETE FROM notes WHERE key = ?", []any{key}
		}
		if _, err := d.write.Exec(stmt, args...); err != nil {
			t.Fatal(err)
		}
		if step%50 != 49 {
			continue
		}
		var kept, counted []TopicCount
		err := d.Read(func(s *Snapshot) error {
			var err error
			if kept, err = s.TopicCounts(Scope{}); err != nil {
				return err
			}
			rows, err := s.q.Query("SELECT topic, count(*) FROM notes WHERE present GROUP BY topic ORDER BY topic")
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var c TopicCount
				if err := rows.Scan(&c.Topic, &c.Notes); err != nil {
					return err
				}
				counted = append(counted, c)
			}
			return rows.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(kept, counted) {
			t.Fatalf("step %d: kept counts %v, counted %v", step, kept, counted)
		}
	}
}
