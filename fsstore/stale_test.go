package fsstore

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/people"
)

// A person's `git reset --hard HEAD` (and `git stash`, which runs one)
// resolves HEAD, writes that commit's files and git's index, and then
// moves HEAD with what it reads there a moment later as the old value.
// Agents' writes that land after it resolved HEAD are reverted on disk;
// one that lands between its second read of HEAD and its ref update makes
// git refuse that update: the reset exits with an error, no reflog line
// tells of it, and the work tree keeps a note's file two versions old with
// git's index agreeing. (In TestMCPResetAndStashDuringWrites the file was
// then committed as the person's edit, undoing two acknowledged writes.)
//
// Such a file must never become the note's next version: the branch's
// file goes back in place, and what the file held is kept as a sibling note
// linked `contradicts`, since the program cannot tell it from a person's
// restore made at that moment.
func TestResetThatLostItsRefUpdateRevertsNothing(t *testing.T) {
	fixtures.RequireGit(t)
	for _, then := range []string{"compared later", "a write meanwhile"} {
		t.Run(then, func(t *testing.T) {
			w := newWorkspace(t, false)
			d := w.Dir()
			put(t, w, "t/counter", 0, "count 1", "1\n")
			resolved := strings.TrimSpace(fixtures.Git(t, d, "rev-parse", "HEAD")) // the reset resolves HEAD
			put(t, w, "t/counter", 1, "count 2", "2\n")
			put(t, w, "t/counter", 2, "count 3", "3\n")
			// and writes the files and index of the commit it resolved,
			// under git's index lock.
			fixtures.Git(t, d, "read-tree", "-u", "--reset", resolved)
			if got := readFile(t, w, "t/counter.md"); !strings.HasSuffix(got, "\n1\n") {
				t.Fatalf("the reset was not set up: the file holds %q", got)
			}
			want := []string{"1", "2", "3"}
			switch then {
			case "compared later":
				// The reset's process waits (a slow disk syncing
				// ORIG_HEAD) past the time a file git wrote is left alone.
				time.Sleep(people.GitSettle + 100*time.Millisecond)
			case "a write meanwhile":
				// An agent's write lands between the reset's read of HEAD
				// and its ref update: it finds the reset's file where its
				// parent's should be, and leaves it for the comparison.
				put(t, w, "t/counter", 3, "count 4", "4\n")
				want = append(want, "4")
			}
			// The reset's ref update fails: HEAD is not what it read.
			rep := commitEdits(t, w)
			if err := w.Repair(); err != nil {
				t.Fatal(err)
			}

			if sibling := staleOutcome(t, w, "t/counter", rep, want, 1); len(sibling) == 1 && !strings.HasSuffix(readFile(t, w, sibling[0]), "\n1\n") {
				t.Errorf("the sibling %s does not hold the reset's file", sibling[0])
			}
			assertClean(t, w)
		})
	}
}

// A file that was in place before the branch moved past the version it
// holds is a write's file the move never replaced (a writer killed past
// its commit point whose journal was lost, a commit made with git's
// plumbing): the branch's version goes back in place, and nothing is
// committed.
func TestStaleFileThereBeforeTheMoveIsPutRight(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/a", 0, "a", "a\n")
	// Commit times keep whole seconds: the move comes in a later one.
	time.Sleep(max(time.Until(time.Now().Truncate(time.Second).Add(time.Second)), people.GitSettle) + 100*time.Millisecond)
	other := filepath.Join(t.TempDir(), "other")
	fixtures.Git(t, d, "clone", "-q", d, other)
	if err := os.WriteFile(filepath.Join(other, "t", "a.md"), []byte(noteText("b", "b\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, other, "commit", "-q", "-am", "t/a elsewhere")
	moved := fixtures.Git(t, other, "rev-parse", "HEAD")
	// Plumbing, not a person's pull: no FETCH_HEAD, which would read as a
	// pull that has just begun when its time and the branch's fall in one
	// tick of the file system's clock.
	fixtures.Git(t, d, "fetch", "-q", "--no-write-fetch-head", other, "main")
	fixtures.Git(t, d, "update-ref", "refs/heads/main", moved)

	rep := commitEdits(t, w)
	staleOutcome(t, w, "t/a", rep, []string{"a", "b"}, 0)
	assertClean(t, w)
}

// staleOutcome checks what a comparison (rep) left of key: its versions'
// last body lines are history, its file holds the last of them, and
// siblings sibling notes beside it, each linked `contradicts` to key. It
// returns the siblings.
func staleOutcome(t *testing.T, w *Workspace, key string, rep *EditReport, history []string, siblings int) []string {
	t.Helper()
	if got := noteHistory(t, w, key+".md"); !slices.Equal(got, history) {
		t.Errorf("%s's versions hold %q, want %q (%s)", key, got, history, opsOf(rep))
	}
	if got := readFile(t, w, key+".md"); !strings.HasSuffix(got, "\n"+history[len(history)-1]+"\n") {
		t.Errorf("%s's file holds %q, want the branch's", key, got)
	}
	found := siblingsOf(t, w, key)
	if len(found) != siblings {
		t.Errorf("%s has sibling notes %q, want %d", key, found, siblings)
	}
	for _, p := range found {
		if n := get(t, w, strings.TrimSuffix(p, ".md")); !slices.Contains(n.Links["contradicts"], key) {
			t.Errorf("the sibling %s links %v, want contradicts %s", p, n.Links, key)
		}
	}
	return found
}

// noteHistory is the body's last line of each version of a note's file,
// oldest first.
func noteHistory(t *testing.T, w *Workspace, path string) []string {
	t.Helper()
	var out []string
	commits := strings.Fields(fixtures.Git(t, w.Dir(), "log", "--first-parent", "--format=%H", "--", path))
	for _, c := range slices.Backward(commits) {
		lines := strings.Split(strings.TrimSpace(fixtures.Git(t, w.Dir(), "show", c+":"+path)), "\n")
		out = append(out, lines[len(lines)-1])
	}
	return out
}

// siblingsOf lists the files of notes beside key whose names start with
// key's, other than key's own.
func siblingsOf(t *testing.T, w *Workspace, key string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(w.Dir(), filepath.FromSlash(key)+"-*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range matches {
		out = append(out, w.Rel(m))
	}
	return out
}

// A commit pulled from another clone was made there, maybe long before
// this clone's branch moved to it: when the branch moved past a version is
// when the move that brought its successor came, by the reflog, not the
// successor's commit time. A git command that resolved the branch before
// the pull and wrote its files after it leaves the older file, which must
// not become the note's next version.
func TestStaleFileAfterAPullOfAnOldCommit(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/c", 0, "count 1", "1\n")
	resolved := strings.TrimSpace(fixtures.Git(t, d, "rev-parse", "HEAD"))
	other := filepath.Join(t.TempDir(), "other")
	fixtures.Git(t, d, "clone", "-q", d, other)
	if err := os.WriteFile(filepath.Join(other, "t", "c.md"), []byte(noteText("count 2", "2\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Made on the other clone a minute before this one pulls it.
	commit := fixtures.GitCmd(other, "commit", "-q", "-am", "t/c elsewhere")
	commit.Env = append(os.Environ(), "GIT_COMMITTER_DATE="+time.Now().Add(-time.Minute).Format(time.RFC3339))
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	fixtures.Git(t, d, "pull", "-q", "--ff-only", other, "main")
	// A command that resolved the branch before the pull writes its files.
	fixtures.Git(t, d, "read-tree", "-u", "--reset", resolved)
	time.Sleep(people.GitSettle + 100*time.Millisecond)

	rep := commitEdits(t, w)
	staleOutcome(t, w, "t/c", rep, []string{"1", "2"}, 1)
	assertClean(t, w)
}

// A person's `git commit` racing an agent's write can build its tree from
// git's index as it was just before the write (git reads HEAD, then the
// index, with no lock between): the commit puts the note back to the
// version before the write, while the write's file stays in place. That
// file holds a version the commit moved past, but git commit writes no
// file, so it is no leftover of the move: it is the write's text, and it
// must be committed again, not replaced by the commit's (which lost an
// acknowledged counter increment in TestHandCommitsBetweenProcesses: the
// next writer read the reverted value), nor kept aside as a sibling.
func TestPersonsCommitFromAnOlderIndexRevertsNothing(t *testing.T) {
	fixtures.RequireGit(t)
	for _, tc := range []struct {
		name string
		// soon: compared within people.GitSettle of the write's file, which git's
		// index records with its very stat, as if git had written it
		// (checkedOutJustNow).
		soon bool
		// write: a counter's writer reads the undone version and writes
		// its increment; it must meet the write's version, not write the
		// same count again.
		write bool
		// gitHolds: the person's next git command holds git's index while
		// the writer begins (their next `git add`).
		gitHolds bool
	}{
		{name: "a second later"},
		{name: "at once"},
		{name: "compared at once", soon: true},
		{name: "a write at once", soon: true, write: true},
		{name: "a write while git holds the index", write: true, gitHolds: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t, false)
			d := w.Dir()
			put(t, w, "t/counter", 0, "count 1", "1\n")
			before := strings.TrimSpace(fixtures.Git(t, d, "rev-parse", "HEAD"))
			put(t, w, "t/counter", 1, "count 2", "2\n")
			if tc.name == "a second later" {
				// Reflog times keep whole seconds: the commit comes in a
				// later one than the write's file.
				time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)) + 100*time.Millisecond)
			}
			// The person's commit, of a file of theirs, with the index as
			// it was before the write.
			if err := os.WriteFile(filepath.Join(d, "mine.txt"), []byte("by hand\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			index := filepath.Join(t.TempDir(), "index")
			for _, args := range [][]string{{"read-tree", before}, {"add", "mine.txt"}, {"commit", "-qm", "mine"}} {
				cmd := fixtures.GitCmd(d, args...)
				cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+index)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %s: %v\n%s", args[0], err, out)
				}
			}
			fixtures.Git(t, d, "add", "mine.txt") // the index git commit wrote
			if !tc.soon {
				time.Sleep(people.GitSettle + 100*time.Millisecond)
			}

			rep := &EditReport{}
			if !tc.write {
				rep = commitEdits(t, w)
			} else {
				n := get(t, w, "t/counter")
				if tc.gitHolds {
					lock := filepath.Join(d, ".git", "index.lock")
					if err := os.WriteFile(lock, nil, 0o644); err != nil {
						t.Fatal(err)
					}
					released := make(chan struct{})
					go func() {
						defer close(released)
						time.Sleep(200 * time.Millisecond)
						os.Remove(lock)
					}()
					defer func() { <-released }()
				}
				next := "2\n"
				_, err := agentView(w).Update(UpdateRequest{URI: "t/counter", Digest: "count 2", Body: &next, ExpectVersion: &n.Version})
				if !errors.Is(err, ErrConflict) {
					t.Errorf("a write of %q at v%d after the person's commit: %v, want a conflict", n.Content, n.Version, err)
				}
			}
			staleOutcome(t, w, "t/counter", rep, []string{"1", "2", "1", "2"}, 0)
			if n := get(t, w, "t/counter"); n.Content != "2\n" {
				t.Errorf("the counter reads %q, want the write's", n.Content)
			}
			fixtures.Git(t, d, "cat-file", "-e", "HEAD:mine.txt")
			assertClean(t, w)
		})
	}
}
