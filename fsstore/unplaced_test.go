package fsstore

import (
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// `git checkout -b side` moves HEAD after it lets git's index lock go, so
// HEAD can move in the middle of a write that was waiting for the lock,
// after its files are in place: the write's files go back out of the work
// tree (it is side's checkout now, at the write's parent), side's status is
// clean, and checking main out again brings them, with nothing committed as
// a person's edit.
func TestCheckoutBranchDuringAWrite(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/a", 0, "a one", "one\n")
	// `git checkout -b side` makes side at the HEAD it read, and moves HEAD
	// to it last, after it let git's index lock go: in the middle of the
	// write.
	fixtures.Git(t, d, "branch", "side")
	crashPoint = func(step string) {
		if step == "files" {
			fixtures.Git(t, d, "symbolic-ref", "HEAD", "refs/heads/side")
		}
	}
	defer func() { crashPoint = nil }()
	res := put(t, w, "t/a", 1, "a two", "two\n")
	crashPoint = nil
	if res.Version != 2 {
		t.Fatalf("write = %+v", res)
	}
	if st := fixtures.Git(t, d, "status", "--porcelain"); st != "" {
		t.Errorf("side's work tree has the write's files:\n%s", st)
	}
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "one") {
		t.Errorf("the file on side = %q, want the write's parent's", got)
	}
	fixtures.Git(t, d, "checkout", "-q", "main")
	put(t, w, "t/b", 0, "b", "b\n") // any write puts the last one's files in place first
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "two") {
		t.Errorf("after checking main out, the file = %q", got)
	}
	if rep := commitEdits(t, w); rep.Commit != "" {
		t.Errorf("a stale file came back as a person's edit: %s", opsOf(rep))
	}
	if n := get(t, w, "t/a"); n.Version != 2 || n.Digest != "a two" {
		t.Errorf("t/a = %+v", n)
	}
	assertClean(t, w)
}

// A person's `git checkout main` that resolved main before a write made
// while they were on another branch writes the files of the older commit:
// the next write puts the branch's file in place instead of committing the
// older one as the person's edit.
func TestCheckoutThatResolvedAnOlderCommit(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/a", 0, "a one", "one\n")
	fixtures.Git(t, d, "checkout", "-q", "-b", "side")
	put(t, w, "t/a", 1, "a two", "two\n")
	resolved := fixtures.Git(t, d, "rev-parse", "main")
	put(t, w, "t/a", 2, "a three", "three\n")
	// git checkout main, as it finishes after resolving main too early:
	// the older commit's files and index, then HEAD on main.
	fixtures.Git(t, d, "read-tree", "-u", "-m", "HEAD", resolved)
	fixtures.Git(t, d, "symbolic-ref", "HEAD", "refs/heads/main")
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "two") {
		t.Fatalf("the simulated checkout wrote %q", got)
	}
	if rep := commitEdits(t, w); rep.Commit != "" {
		t.Errorf("the older file came back as a person's edit: %s", opsOf(rep))
	}
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "three") {
		t.Errorf("the file after the comparison = %q, want the branch's", got)
	}
	if n := get(t, w, "t/a"); n.Version != 3 || n.Digest != "a three" {
		t.Errorf("t/a = %+v", n)
	}
	assertClean(t, w)
}

// A `git checkout -b side` that read HEAD before a write and wrote git's
// index after it leaves side's checkout holding the write's file, and git
// then refuses to check main out again: the next look takes the file back
// to side's version, and checking main out brings the write's.
func TestCheckoutBranchThatReadHeadBeforeAWrite(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/a", 0, "a one", "one\n")
	fixtures.Git(t, d, "branch", "side") // git read HEAD here
	put(t, w, "t/a", 1, "a two", "two\n")
	// and wrote the index of side's commit, and moved HEAD, only now.
	fixtures.Git(t, d, "read-tree", "side")
	fixtures.Git(t, d, "symbolic-ref", "HEAD", "refs/heads/side")
	if st := fixtures.Git(t, d, "status", "--porcelain"); st == "" {
		t.Fatal("the race was not set up: side's checkout is clean")
	}
	if err := w.Repair(); err != nil {
		t.Fatal(err)
	}
	if st := fixtures.Git(t, d, "status", "--porcelain"); st != "" {
		t.Errorf("side's checkout still holds the write's file:\n%s", st)
	}
	fixtures.Git(t, d, "checkout", "-q", "main")
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "two") {
		t.Errorf("after checking main out, the file = %q", got)
	}
	if rep := commitEdits(t, w); rep.Commit != "" {
		t.Errorf("a file came back as a person's edit: %s", opsOf(rep))
	}
	assertClean(t, w)
}
