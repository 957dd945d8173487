package gitver_test

import (
	"fmt"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// IsAncestor answers near ancestors from its own walk and far ones from
// git; both must agree with git everywhere, merges and side lines included.
func TestIsAncestorAgreesWithGit(t *testing.T) {
	r, dir := newRepo(t)
	root := commitAndMove(t, r, "root", map[string]string{"a.md": "0"})
	line := []gitver.Hash{root}
	for i := 1; i <= 300; i++ { // longer than the walk before asking git
		line = append(line, commitFiles(t, r, line[i-1], fmt.Sprint("c", i), map[string]string{"a.md": fmt.Sprint(i)}))
	}
	side := commitFiles(t, r, line[5], "side", map[string]string{"b.md": "side"})
	merge, err := r.WriteCommit(gitver.CommitObject{Tree: mustTree(t, r, line[300]), Parents: []gitver.Hash{line[300], side},
		Author: agent, Committer: agent, Message: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	pairs := [][2]gitver.Hash{
		{line[299], line[300]}, {line[290], line[300]}, {root, line[300]}, {line[3], line[300]},
		{line[300], line[299]}, {side, line[300]}, {line[300], side}, {line[5], side},
		{side, merge}, {root, merge}, {line[6], side}, {merge, merge}, {merge, line[300]},
	}
	for _, p := range pairs {
		got, err := r.IsAncestor(p[0], p[1])
		if err != nil {
			t.Fatal(err)
		}
		if want := fixtures.GitCmd(dir, "merge-base", "--is-ancestor", p[0].String(), p[1].String()).Run() == nil; got != want {
			t.Errorf("IsAncestor(%s, %s) = %v, git says %v", p[0], p[1], got, want)
		}
	}
}

func mustTree(t *testing.T, r *gitver.Repo, c gitver.Hash) gitver.Hash {
	t.Helper()
	info, err := r.ReadCommit(c)
	if err != nil {
		t.Fatal(err)
	}
	return info.Tree
}
