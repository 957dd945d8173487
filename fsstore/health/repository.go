package health

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// checkRepository reads the branch, its commit and that commit's whole tree.
// It returns the tree's files (path -> blob) and whether they could be read.
func (c *checker) checkRepository(r *Report) (map[string]gitver.Hash, gitver.Hash, bool) {
	branch := strings.TrimPrefix(c.repo.Branch(), "refs/heads/")
	head, err := c.repo.Head()
	if err != nil {
		r.Add(Finding{Check: "repository", Severity: SeverityError, Path: ".git/" + c.repo.Branch(),
			Message: fmt.Sprintf("the branch %s cannot be read: %v", branch, err),
			Fix:     "restore the branch: point it at its last good commit (git reflog " + branch + ", then git update-ref " + c.repo.Branch() + " COMMIT)"})
		return nil, head, false
	}
	if head.IsZero() {
		f := Finding{Check: "repository", Severity: SeverityError,
			Message: fmt.Sprintf("the board's branch %s has no commit", branch),
			Fix:     "run `blackboard-mcp init` in the workspace, which makes the first commit"}
		if last, _, err := c.ws.IndexHead(); err == nil && !last.IsZero() {
			f.Message = fmt.Sprintf("the board's branch %s does not exist (deleted?); the board's last known commit is %s", branch, last.Short())
			f.Fix = fmt.Sprintf("restore it: git branch %s %s (or find it in git reflog); nothing is read or written until then", branch, last)
		}
		r.Add(f)
		return nil, head, false
	}
	if elsewhere := c.repo.WorkTree().Elsewhere; elsewhere != "" {
		r.Add(Finding{Check: "repository", Severity: SeverityWarning,
			Message: elsewhere + ": agents write to " + branch + ", and the files on disk are not the board's",
			Fix:     "git switch " + branch + " to see the board; the board never writes to another branch"})
	}
	r.Infof("branch: the board's branch is %s", branch)
	c.checkRescued(branch, r)
	commit, err := c.repo.ReadCommit(head)
	if err != nil {
		r.Add(Finding{Check: "repository", Severity: SeverityError,
			Message: fmt.Sprintf("the branch %s names commit %s, which cannot be read: %v", branch, head.Short(), err),
			Fix:     fixObjects})
		return nil, head, false
	}
	changes, err := c.repo.DiffTrees(gitver.ZeroHash, commit.Tree)
	if err != nil {
		r.Add(Finding{Check: "repository", Severity: SeverityError,
			Message: fmt.Sprintf("the tree of the last commit %s cannot be read: %v", head.Short(), err),
			Fix:     fixObjects})
		return nil, head, false
	}
	files := make(map[string]gitver.Hash, len(changes))
	for _, ch := range changes {
		files[ch.Path] = ch.New
	}
	return files, head, true
}

// checkRescued reports the commits a person's rewind dropped from the
// branch, which the program keeps under rescue refs until a person decides.
func (c *checker) checkRescued(branch string, r *Report) {
	refs, err := c.repo.Refs(fsstore.RescuePrefix)
	if err != nil {
		r.Infof("rescued commits: not listed (%v)", err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		r.Add(Finding{Check: "repository", Severity: SeverityWarning, Path: ".git/" + name,
			Message: fmt.Sprintf("commits %s no longer holds are kept under %s (a reset to another branch dropped them, "+
				"or a remote write contradicted them)", branch, name),
			Fix: fmt.Sprintf("see them: git log %s..%s; bring them back: git merge %s; or forget them: git update-ref -d %s",
				branch, name, name, name)})
	}
}

// checkObjects reads every commit and tree of the recent first-parent
// history: the oldest commit of the window whole, then what each later commit
// changed (an unchanged subtree is the object already read).
func (c *checker) checkObjects(head gitver.Hash, n int, r *Report) {
	var chain []*gitver.CommitInfo
	h := head
	for len(chain) < n && !h.IsZero() {
		commit, err := c.repo.ReadCommit(h)
		if err != nil {
			r.Add(Finding{Check: "objects", Severity: SeverityError,
				Message: fmt.Sprintf("commit %s, %d commits back on the branch, cannot be read: %v", h.Short(), len(chain), err),
				Fix:     fixObjects})
			break
		}
		chain = append(chain, commit)
		h = commit.FirstParent()
	}
	for i := len(chain) - 1; i >= 0; i-- {
		var prev gitver.Hash
		if i < len(chain)-1 {
			prev = chain[i+1].Tree
		}
		if _, err := c.repo.DiffTrees(prev, chain[i].Tree); err != nil {
			r.Add(Finding{Check: "objects", Severity: SeverityError,
				Message: fmt.Sprintf("a tree of commit %s cannot be read: %v", chain[i].Hash.Short(), err),
				Fix:     fixObjects})
		}
	}
	r.Infof("objects: read %d recent commits and their trees", len(chain))
}

// checkFsck runs git's own connectivity check when the git CLI is installed:
// it sees packs and refs this program never reads.
func (c *checker) checkFsck(timeout time.Duration, r *Report) {
	if timeout < 0 {
		return
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		r.Infof("git fsck: skipped, the git command is not installed")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitPath, "fsck", "--connectivity-only", "--no-dangling", "--no-progress")
	cmd.Dir = c.dir
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		r.Infof("git fsck: did not finish within %s; run `git fsck` in the workspace by hand", timeout)
	case err == nil:
		r.Infof("git fsck --connectivity-only: clean")
	case bytes.Contains(out, []byte("dubious ownership")):
		r.Infof("git fsck: skipped, git refuses a repository owned by another user (safe.directory)")
	default:
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 3 {
			lines = append(lines[:3], fmt.Sprintf("and %d more lines", len(lines)-3))
		}
		r.Add(Finding{Check: "objects", Severity: SeverityError,
			Message: "git fsck --connectivity-only fails: " + strings.Join(lines, " | "),
			Fix:     fixObjects})
	}
}

// checkStaged compares git's index file with the last commit, when the git
// CLI is installed: a note staged with other content than the commit has is
// what a person's next `git commit` would commit, and if the program left
// git's index behind its own commits, that commit would put old content back.
func (c *checker) checkStaged(r *Report) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gitPath, "diff", "--cached", "--name-only", "--no-renames", "-z", "HEAD", "--")
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0") // a check takes no lock
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		r.Infof("git's index: not compared with the last commit (git diff --cached: %v)", err)
		return
	}
	for _, p := range strings.Split(string(out), "\x00") {
		if _, ok := note.KeyOf(p); !ok {
			continue
		}
		r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
			Message: "staged in git's index with other content than the last commit: the next `git commit` commits that",
			Fix:     "commit it (git commit) if that is meant; otherwise unstage it: git restore --staged " + p})
	}
}

// checkLocks finds git lock files a dead process left: while one exists,
// every write of the program and of git fails.
func (c *checker) checkLocks(age time.Duration, r *Report) {
	locks := []string{
		c.repo.IndexLockPath(),
		c.repo.LockPath(),
		filepath.Join(c.repo.GitDir(), "HEAD.lock"),
		filepath.Join(c.repo.GitDir(), "packed-refs.lock"),
	}
	for _, p := range locks {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		old := time.Since(fi.ModTime())
		if old < age {
			continue // a git command at work
		}
		rel := c.ws.Rel(p)
		r.Add(Finding{Check: "locks", Severity: SeverityError, Path: rel,
			Message: fmt.Sprintf("git's lock file is %s old: writes of the board and of git fail while it exists", old.Round(time.Second)),
			Fix:     fmt.Sprintf("make sure no git command is running in the workspace (an open `git commit` editor holds it), then delete it: rm %s", rel)})
	}
}

// inspectJournal reports a write that a killed process left half-finished.
func inspectJournal(dir string) *Finding {
	iw := fsstore.FindInterruptedWrite(dir)
	if iw == nil {
		return nil
	}
	what := "an interrupted write"
	if !iw.Commit.IsZero() {
		what = fmt.Sprintf("an interrupted write (commit %s of %s)", iw.Commit.Short(), strings.Join(iw.Paths, ", "))
	}
	return &Finding{Check: "journal", Severity: SeverityWarning, Path: note.JournalFile,
		Message: what + " was left in " + note.JournalFile + " by a process that died mid-write"}
}

// checkRemote says where the board stands against its remote, from what
// this clone knows (no network): when it last heard from it, and the local
// commits that have not gone yet.
func (c *checker) checkRemote(r *Report) {
	remote := c.repo.Upstream()
	if remote == "" {
		return
	}
	url := gitver.Redact(c.repo.RemoteURL(remote))
	local, err := c.repo.Head()
	if err != nil {
		return
	}
	theirs, err := c.repo.Tracking(remote)
	if err != nil {
		r.Infof("remote: %s (%s); what it holds cannot be read: %v", remote, url, err)
		return
	}
	heard := "never"
	if t := c.repo.LastSync(); !t.IsZero() {
		heard = time.Since(t).Round(time.Second).String() + " ago"
	}
	r.Infof("remote: %s (%s); last heard from %s", remote, url, heard)
	if waiting, err := c.repo.Count(theirs, local); err == nil && waiting > 0 {
		what := fmt.Sprintf("%d local commits are", waiting)
		if waiting == 1 {
			what = "1 local commit is"
		}
		r.Add(Finding{Check: "remote", Severity: SeverityWarning,
			Message: fmt.Sprintf("%s not on %s yet (a person's commits, or the remote was unreachable)", what, remote),
			Fix:     "they go with the next write or read, or a server's fetch; `blackboard-mcp remote` lists them"})
	}
}
