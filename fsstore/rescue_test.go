package fsstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
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

// droppedByARacingReset makes a board whose note t/k is at v2, then does
// what `git reset --hard HEAD` leaves when it read HEAD before that write
// and moved the branch after it: the older files, and the branch back where
// it read it. It returns the board, the branch as the reset left it, and
// the dropped commit.
func droppedByARacingReset(t *testing.T) (w *Workspace, left, dropped gitver.Hash) {
	t.Helper()
	fixtures.RequireGit(t)
	w = newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/k", 0, "one", "1")
	before := strings.TrimSpace(fixtures.Git(t, d, "rev-parse", "HEAD"))
	put(t, w, "t/k", 1, "two", "2")
	ours := strings.TrimSpace(fixtures.Git(t, d, "rev-parse", "HEAD"))
	fixtures.Git(t, d, "read-tree", "-u", "--reset", before)
	fixtures.Git(t, d, "update-ref", "-m", "reset: moving to HEAD", "refs/heads/main", before, ours)
	var err error
	if left, err = gitver.ParseHash(before); err != nil {
		t.Fatal(err)
	}
	if dropped, err = gitver.ParseHash(ours); err != nil {
		t.Fatal(err)
	}
	return w, left, dropped
}

// refusedThenConflicts checks that the commit point refuses move, and that
// the next write, which repairs first, brings the dropped v2 back and
// conflicts as a write that read the reset's version (v1) must.
func refusedThenConflicts(t *testing.T, w *Workspace, move mover.Move, digest, body string) {
	t.Helper()
	err := w.lock.with(func() error {
		moved, err := w.mover.Move(move)
		if err != nil || moved {
			t.Errorf("%s: moved %t, %v; want it refused", move.Reason, moved, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agentView(w).Update(UpdateRequest{URI: "t/k", Digest: digest, Body: &body, ExpectVersion: ptr(1)}); !errors.Is(err, ErrConflict) {
		t.Errorf("a write at the version the reset dropped: %v, want a conflict", err)
	}
	if n := get(t, w, "t/k"); n.Version != 2 || n.Digest != "two" {
		t.Errorf("after the repairs: v%d %q, want v2 %q", n.Version, n.Digest, "two")
	}
	assertClean(t, w)
}

// A write built on the branch as a racing reset left it (after the repairs
// looked, before the branch was read) would be checked against the version
// the reset dropped and counted at that number again. The commit point
// refuses such a move until the repairs have brought the dropped commit
// back; then the write conflicts, as it must.
func TestNoMoveOnTheBranchARacingResetLeft(t *testing.T) {
	w, left, _ := droppedByARacingReset(t)
	body := []byte("---\ndigest: two again\n---\n2\n")
	built, err := w.commits.Build(left, []commits.Change{{Path: "t/k.md", Content: body}},
		w.agentSignature("tester"), "update t/k v2: two again")
	if err != nil || built == nil {
		t.Fatalf("build the write: %v (built: %t)", err, built != nil)
	}
	pending := built.PendingCommit
	defer w.repo.DropStaged()
	if err := pending.Write(); err != nil {
		t.Fatal(err)
	}
	refusedThenConflicts(t, w, mover.Move{From: left, To: pending.Hash, Reason: ownMove + "a write on the reset's branch"},
		"two again", "2 again\n")
}

// The write a racing reset dropped, made again on the branch the reset
// left (the agent read the reset's version and wrote the same thing within
// the same second), is the dropped commit byte for byte: moving the branch
// to it would acknowledge one version twice. The commit point refuses it,
// as it refuses any other write there, and the write then conflicts.
func TestTheDroppedWriteMadeAgainIsNotAcknowledgedAgain(t *testing.T) {
	w, left, dropped := droppedByARacingReset(t)
	refusedThenConflicts(t, w, mover.Move{From: left, To: dropped, Reason: ownMove + "the dropped write made again", Fresh: true},
		"two", "2")
}

// A person who resets past what the board made of their last rewind (its
// undo commit, no agent's write among what the reset dropped) leaves
// nothing to bring back: the board's writes go on from where the reset
// left the branch.
func TestResetPastTheUndoOfARewindLetsWritesGoOn(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/k", 0, "one", "1")
	put(t, w, "t/k", 1, "two", "2")
	fixtures.Git(t, d, "reset", "-q", "--hard", "HEAD~1")
	if err := w.Repair(); err != nil { // the rewind kept as an undo on top
		t.Fatal(err)
	}
	fixtures.Git(t, d, "reset", "-q", "--hard", "HEAD~1") // past the undo commit alone
	if err := w.Repair(); err != nil {
		t.Fatal(err)
	}
	if res := put(t, w, "t/other", 0, "other", "x"); res.Version != 1 {
		t.Errorf("a write after the reset: v%d, want v1", res.Version)
	}
	assertClean(t, w)
}
