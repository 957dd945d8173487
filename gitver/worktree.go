package gitver

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// WorkTree is how the work tree stands towards the branch right now. The
// files on disk are edits to the branch only when all three are empty.
type WorkTree struct {
	// Operation names a git operation a person is in the middle of on the
	// branch (a merge, a rebase, a cherry-pick, a revert): the index and
	// the files belong to it until it is done.
	Operation string
	// Elsewhere says HEAD is not on the branch (another branch or a commit
	// is checked out): the files are that checkout's.
	Elsewhere string
	// Locked says another git command holds the index (it may be writing
	// files: a checkout, a reset).
	Locked string
	// Starting says a person's git command that moves the branch may have
	// just begun (PersonsCommand).
	Starting string
}

// Busy is the first reason the files are not the branch's, "" when they are.
func (t WorkTree) Busy() string {
	for _, s := range []string{t.Operation, t.Elsewhere, t.Locked, t.Starting} {
		if s != "" {
			return s
		}
	}
	return ""
}

// WorkTree reads how the work tree stands towards the branch: while a
// person merges, rebases or has another branch checked out, the files on
// disk are not edits to the branch, and a write must not put its files
// among them.
func (r *Repo) WorkTree() WorkTree {
	var t WorkTree
	for _, op := range []struct{ file, what string }{
		{"MERGE_HEAD", "a merge"},
		{"rebase-merge", "a rebase"},
		{"rebase-apply", "a rebase or git am"},
		{"CHERRY_PICK_HEAD", "a cherry-pick"},
		{"REVERT_HEAD", "a revert"},
	} {
		if _, err := os.Lstat(filepath.Join(r.gitDir, op.file)); err == nil {
			t.Operation = op.what + " is in progress"
			break
		}
	}
	head, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	ref, onRef := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	branch := strings.TrimPrefix(r.branch, "refs/heads/")
	switch {
	case err != nil:
		t.Elsewhere = "HEAD cannot be read: " + err.Error()
	case !onRef:
		t.Elsewhere = "HEAD is detached (not on " + branch + ")"
	case ref != r.branch:
		t.Elsewhere = strings.TrimPrefix(ref, "refs/heads/") + " is checked out, not " + branch
	}
	if _, err := os.Lstat(r.IndexLockPath()); err == nil {
		t.Locked = "another git command is using the index (" + filepath.Join(".git", "index.lock") + " exists; if none is running, remove it)"
	}
	t.Starting = r.personsCommand(time.Now())
	return t
}

// commandStart bounds how long after git wrote FETCH_HEAD or ORIG_HEAD a
// command that moves the branch is taken to be under way (personsCommand):
// a pull's merge follows its fetch at once, and holds git's index while it
// works; a fetch alone (no merge follows) holds writes back this long, and
// no longer than a write waits before it answers (fsstore's
// indexBusyWait).
const commandStart = 800 * time.Millisecond

// personsCommand names the command of a person's git that may be under way
// and move the branch soon: git wrote FETCH_HEAD (a fetch, which a pull
// follows with a merge) or ORIG_HEAD (a merge, a reset or a rebase, as it
// begins) within commandStart before now, since the branch last moved.
// Such a command reads the branch and git's index as it begins and
// writes them as it ends, holding no lock in between: a write meanwhile
// makes it fail (`git merge` cannot stash the work tree, or cannot move
// the branch). The program itself writes neither file (its fetches pass
// --no-write-fetch-head).
func (r *Repo) personsCommand(now time.Time) string {
	var moved time.Time
	if fi, err := os.Stat(r.refPath(r.branch)); err == nil {
		moved = fi.ModTime()
	}
	for _, c := range []struct{ file, what string }{
		{"ORIG_HEAD", "a person's git merge, reset or rebase"},
		{"FETCH_HEAD", "a person's git pull"},
	} {
		fi, err := os.Stat(filepath.Join(r.gitDir, c.file))
		// Not before: file times come from a coarse clock, and one tick
		// may hold the branch's last move and the command's start.
		if err == nil && now.Sub(fi.ModTime()) < commandStart && !fi.ModTime().Before(moved) {
			return c.what + " has just begun"
		}
	}
	return ""
}

// Exclude makes git ignore paths matching pattern in this repository, as a
// line of .git/info/exclude: like a .gitignore, but not a file of the work
// tree, so nobody commits it. A pattern already there is not added again.
func (r *Repo) Exclude(pattern, why string) error {
	p := filepath.Join(r.gitDir, "info", "exclude")
	have, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, line := range strings.Split(string(have), "\n") {
		if strings.TrimSpace(line) == pattern {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	text := "# " + why + "\n" + pattern + "\n"
	if len(have) > 0 && have[len(have)-1] != '\n' {
		text = "\n" + text
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// CheckedOut is the commit HEAD names, through the branch it is on or
// detached: the commit the work tree and git's index are of.
func (r *Repo) CheckedOut() (Hash, error) {
	head, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	if err != nil {
		return ZeroHash, err
	}
	s := strings.TrimSpace(string(head))
	if ref, ok := strings.CutPrefix(s, "ref: "); ok {
		return r.readRef(ref)
	}
	return ParseHash(s)
}
