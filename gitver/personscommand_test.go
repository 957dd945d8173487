package gitver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A person's git command that moves the branch reads the branch and git's
// index as it begins and writes them as it ends, holding no lock between
// (`git pull`: a fetch, then a merge that stashes, merges and moves the
// branch). While it has just begun (git wrote FETCH_HEAD or ORIG_HEAD
// after the branch last moved), the work tree is not the branch's, and
// LockIndex waits until the command moved the branch, or a moment passed.
func TestLockIndexWaitsForAPersonsCommand(t *testing.T) {
	for _, file := range []string{"FETCH_HEAD", "ORIG_HEAD"} {
		t.Run(file, func(t *testing.T) {
			r, dir := newRepo(t)
			first := commitAndMove(t, r, "first", map[string]string{"a.md": "one"})
			if why := r.WorkTree().Starting; why != "" {
				t.Fatalf("before any command of a person's: %q", why)
			}
			// The command begins: git writes the file.
			if err := os.WriteFile(filepath.Join(dir, ".git", file), []byte(first.String()+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if why := r.WorkTree().Starting; !strings.Contains(why, "a person's git") {
				t.Fatalf("while %s is fresh: Starting %q", file, why)
			}
			// It moves the branch 300 ms later; the lock is taken after.
			moved := make(chan time.Time, 1)
			go func() {
				time.Sleep(300 * time.Millisecond)
				commitAndMove(t, r, "the person's command ends", map[string]string{"a.md": "two"})
				moved <- time.Now()
			}()
			lock, err := r.LockIndex()
			if err != nil {
				t.Fatal(err)
			}
			took := time.Now()
			lock.Release()
			if at := <-moved; took.Before(at) || !lock.Waited {
				t.Fatalf("git's index was taken before the person's command moved the branch (waited %v)", lock.Waited)
			}
			if why := r.WorkTree().Starting; why != "" {
				t.Fatalf("once the branch moved: Starting %q", why)
			}
			// A command that never moves the branch (a fetch alone) holds
			// writes back a moment, not more.
			if err := os.WriteFile(filepath.Join(dir, ".git", file), []byte(first.String()+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if lock, err = r.LockIndex(); err != nil {
				t.Fatal(err)
			}
			lock.Release()
			if why := r.WorkTree().Starting; why != "" {
				t.Fatalf("a moment after: Starting %q", why)
			}
		})
	}
}
