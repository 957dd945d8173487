package health

import (
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/meaning"
)

// Search by meaning needs each note's vector (fsstore/meaning). A running
// server makes those missing in the background, so a few missing right
// after writes or a pull is normal; notes without one are still found by
// their words. health says how many lack one, and how many were made by
// another model (a program of another version made them).
func (c *checker) checkVectors(r *Report) {
	var current, other, present int
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		var err error
		current, other, present, err = s.VectorCounts(meaning.Model)
		return err
	})
	if err != nil {
		r.Infof("search by meaning: not read (%v)", err)
		return
	}
	missing := present - current
	if missing == 0 {
		r.Infof("search by meaning: all %d notes have their vector (%s)", present, meaning.Model)
		return
	}
	// Not a finding: the vectors are derived, and a running server (serve,
	// view) makes those missing within seconds; reindex makes them now.
	r.Infof("search by meaning: %s no vector yet%s: found by words only until a running server (serve, view) "+
		"makes the vectors, or reindex", plural(missing, "note has", "notes have"), otherModel(other))
}

func otherModel(n int) string {
	if n == 0 {
		return ""
	}
	return " (" + plural(n, "has one", "have one") + " made by another model than " + meaning.Model + ")"
}

// plural is n with the singular or plural words after it.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
