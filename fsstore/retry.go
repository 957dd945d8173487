package fsstore

import (
	"regexp"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/pipeline"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A relay gives each tool write an id, and sends the write again when the
// engine died before answering it. The commit carries the id (TrailerWrite);
// the write sent again looks for it first, and a write already committed is
// answered as done, at the version it made, instead of applied twice.

// writeIDPattern is what a write id may hold: a relay's prefix and a count.
var writeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,80}$`)

// WithWriteID is the view whose writes carry id in their commits. retried
// says the write may have been made already, by an engine that died before
// it answered: the write then first looks for its id. An id that is not a
// write id is ignored.
func (v *View) WithWriteID(id string, retried bool) *View {
	if !writeIDPattern.MatchString(id) {
		return v
	}
	w := *v
	w.writeID, w.retried = id, retried
	return &w
}

// retryWindow bounds the search for a write's id: a relay sends a write
// again within seconds, while a new engine starts.
const (
	retryWindow  = 10 * time.Minute
	retryCommits = 4096
)

// writtenAs looks for the commit of the view's write id among the commits
// tx builds on, newest first: the version it made of the note, and ok.
func (v *View) writtenAs(tx *pipeline.Tx) (version int, ok bool, err error) {
	if !v.retried {
		return 0, false, nil
	}
	since := time.Now().Add(-retryWindow)
	seen := map[gitver.Hash]bool{}
	next := []gitver.Hash{tx.Base()}
	for len(next) > 0 && len(seen) < retryCommits {
		h := next[0]
		next = next[1:]
		if h.IsZero() || seen[h] {
			continue
		}
		seen[h] = true
		c, err := v.w.repo.ReadCommit(h)
		if err != nil {
			return 0, false, err
		}
		if note.WriteIDOf(c.Message) == v.writeID {
			_, version, _ := note.WrittenAt(c.Message)
			return version, true, nil
		}
		if c.Committer.When.Before(since) {
			continue
		}
		next = append(next, c.Parents...)
	}
	return 0, false, nil
}
