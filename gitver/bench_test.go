package gitver_test

import (
	"fmt"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// BenchmarkCommitIntoLargeTopic is one write's commit on a board whose
// topic holds 5,000 notes: a new note, committed on the last commit, as
// the engine commits the writes of agents that add notes to one topic.
func BenchmarkCommitIntoLargeTopic(b *testing.B) {
	r, _ := newRepo(b)
	blob := writeBlob(b, r, "a note\n")
	changes := map[string]gitver.Hash{}
	for i := range 5000 {
		changes[fmt.Sprintf("topic/note-%05d.md", i)] = blob
	}
	parent, err := r.Commit(gitver.CommitRequest{Changes: changes, Author: agent, Message: "5,000 notes\n"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		c, err := r.Commit(gitver.CommitRequest{Parent: parent, Changes: map[string]gitver.Hash{fmt.Sprintf("topic/new-%d.md", i): blob},
			Author: agent, Message: "one more\n"})
		if err != nil {
			b.Fatal(err)
		}
		parent = c
	}
}
