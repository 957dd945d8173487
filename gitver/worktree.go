package gitver

import (
	"os"
	"path/filepath"
	"strings"
)

// WorkTreeBusy says why the work tree does not stand for the branch right
// now, or "" when it does. While a person merges, rebases, cherry-picks,
// bisects or has another branch checked out, the files on disk are not
// edits to the branch: committing them onto it would mix two histories.
// Such edits wait until git is done.
func (r *Repo) WorkTreeBusy() string {
	for _, op := range []struct{ file, what string }{
		{"MERGE_HEAD", "a merge"},
		{"rebase-merge", "a rebase"},
		{"rebase-apply", "a rebase or git am"},
		{"CHERRY_PICK_HEAD", "a cherry-pick"},
		{"REVERT_HEAD", "a revert"},
		{"BISECT_LOG", "a bisect"},
	} {
		if _, err := os.Lstat(filepath.Join(r.gitDir, op.file)); err == nil {
			return op.what + " is in progress"
		}
	}
	head, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD"))
	if err != nil {
		return "HEAD cannot be read: " + err.Error()
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !ok {
		return "HEAD is detached (not on " + r.branch + ")"
	}
	if ref != r.branch {
		return strings.TrimPrefix(ref, "refs/heads/") + " is checked out, not " + strings.TrimPrefix(r.branch, "refs/heads/")
	}
	return ""
}
