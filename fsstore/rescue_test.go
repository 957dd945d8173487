package fsstore

import (
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// A person who means to take commits out of the board's history for good
// (a secret written by mistake) rewinds and expires the reflog: the board
// then finds no reset to undo, and the rewind stands in history too.
func TestRewindWithExpiredReflogStands(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "one", "1")
	put(t, w, "t/k", 1, "the secret", "s3cr3t")
	fixtures.Git(t, w.Dir(), "reset", "-q", "--hard", "HEAD~1")
	fixtures.Git(t, w.Dir(), "reflog", "expire", "--expire=now", "--all")
	if res := put(t, w, "t/k", 1, "two", "2"); res.Version != 2 {
		t.Errorf("the write after the purge made v%d, want v2", res.Version)
	}
	if log := fixtures.Git(t, w.Dir(), "log", "--all", "--format=%s"); strings.Contains(log, "secret") {
		t.Errorf("the purged commit is back:\n%s", log)
	}
}

// A person's reset of the branch to an older commit drops agents' writes
// from it: the repairs (a watching server's, or the next write's) keep
// what they wrote and never give a version twice. The rewind stands as a
// commit on top of the dropped writes, so the note's version is higher
// than any it had, its content is the rewind's, and every number the
// board gave stands for one content.
func TestResetKeepsVersionsRising(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "one", "1")
	put(t, w, "t/k", 1, "two", "2")
	fixtures.Git(t, w.Dir(), "reset", "-q", "--hard", "HEAD~1")
	if err := w.Repair(); err != nil { // as a watching server does, or the next write
		t.Fatal(err)
	}
	n := get(t, w, "t/k")
	if n.Version <= 2 || n.Digest != "one" {
		t.Fatalf("after the reset: v%d %q, want a version above 2 holding the rewind's %q", n.Version, n.Digest, "one")
	}
	if res := put(t, w, "t/k", n.Version, "three", "3"); res.Version != n.Version+1 {
		t.Errorf("the write after the rewind: v%d, want v%d", res.Version, n.Version+1)
	}
	if log := fixtures.Git(t, w.Dir(), "log", "--format=%s", "--", "t/k.md"); !strings.Contains(log, "update t/k v2: two") {
		t.Errorf("the dropped write is not in the branch's history:\n%s", log)
	}
	assertClean(t, w)
}
