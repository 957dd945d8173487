package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Severities of a Finding.
const (
	// SeverityError: something is broken, or writes or reads will fail.
	SeverityError = "error"
	// SeverityWarning: nothing is lost and the program copes, but a person
	// should look (an uncommitted edit, an index behind the branch).
	SeverityWarning = "warning"
)

// Finding is one problem health found, written for the operator who must act
// on it.
type Finding struct {
	// Check names the check that found it: repository, objects, locks,
	// journal, files, uncommitted, front_matter, digest, blob, index,
	// access, or a caller's own (tool_surface).
	Check    string
	Severity string
	// Path is the workspace-relative, slash-separated file concerned; ""
	// when the finding is about no one file.
	Path    string
	Message string // what is wrong
	Fix     string // what to do about it
}

// Report is what health found. A workspace is sound when there are no
// findings; Info says what was checked or skipped and is never a problem.
type Report struct {
	Findings []Finding
	Info     []string
}

// OK reports whether the workspace is sound.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// Add records a finding.
func (r *Report) Add(f Finding) { r.Findings = append(r.Findings, f) }

// Infof records what was checked or skipped.
func (r *Report) Infof(format string, args ...any) {
	r.Info = append(r.Info, fmt.Sprintf(format, args...))
}

// Options tune the checks. The zero value checks the last 200 commits'
// objects, 200 notes' versions against up to 100,000 commits of history,
// calls a git lock file stale after 5 seconds, and runs `git fsck` (when the
// git CLI is installed) for at most a minute.
type Options struct {
	// Open configures the workspace Check opens.
	Open fsstore.Options
	// RecentCommits is how many first-parent commits, newest first, have
	// every commit and tree object read. 0 means 200.
	RecentCommits int
	// SampleNotes is how many notes (the most recently changed) have their
	// indexed version recounted from git. 0 means 200.
	SampleNotes int
	// VersionCommits bounds the history walk of that recount: past it, only
	// the commits walked are compared. 0 means 100,000.
	VersionCommits int
	// LockAge is the age after which a git lock file counts as left behind
	// by a dead process. 0 means 5 seconds.
	LockAge time.Duration
	// FsckTimeout bounds `git fsck --connectivity-only`. 0 means one minute;
	// negative skips it.
	FsckTimeout time.Duration
}

func (o *Options) defaults() {
	if o.RecentCommits <= 0 {
		o.RecentCommits = 200
	}
	if o.SampleNotes <= 0 {
		o.SampleNotes = 200
	}
	if o.VersionCommits <= 0 {
		o.VersionCommits = 100_000
	}
	if o.LockAge <= 0 {
		o.LockAge = 5 * time.Second
	}
	if o.FsckTimeout == 0 {
		o.FsckTimeout = time.Minute
	}
}

// maxFindingsPerCheck keeps a badly broken workspace's report readable: past
// it, one more finding says how many were left out.
const maxFindingsPerCheck = 50

// Fixes shared by several findings.
const (
	fixObjects = "the repository is damaged: copy the missing or corrupt objects from another clone " +
		"(git fetch from a remote that has them, or copy .git/objects from a backup); `git fsck --full` lists every bad object"
	fixReindex      = "run `blackboard-mcp reindex`: the index is derived from git, so rebuilding it loses nothing"
	fixFrontMatter  = "edit the file: a line ---, then YAML keys (at least `digest:`, one line saying what the note holds; no anchors or aliases), then a line ---; then commit it (git commit), or save it while a server runs and it is committed for you"
	fixUncommitted  = "a running server commits it as your edit within a moment (it watches the files), and so does any blackboard-mcp put; or commit it yourself (git add and git commit); to drop the edit, git restore it"
	fixAccess       = "correct the entry by hand, or recreate the agent with `blackboard-mcp token revoke NAME` and `blackboard-mcp token add NAME --read TOPICS --write TOPICS`"
	fixJournalLater = "open the workspace once (any blackboard-mcp verb, e.g. `blackboard-mcp ls`) or make any write (`blackboard-mcp put`): either finishes it from the journal"
)

// Workspace is what health reads of an open workspace; *fsstore.Workspace
// has it. Health only reads: it never takes the write lock.
type Workspace interface {
	Dir() string
	Repo() *gitver.Repo
	// IndexHead is the commit the derived index reflects, and its cursor.
	IndexHead() (commit gitver.Hash, cursor int, err error)
	// ReadIndex reads the derived index at one point of history.
	ReadIndex(fn func(*index.Snapshot) error) error
	// WalkNotes lists the work tree's note and blob files, with their stat,
	// and the paths that would be but cannot be read.
	WalkNotes() (found map[string]fs.FileInfo, problems []fsstore.TreeProblem, ok bool)
	// ReadFile reads a workspace file (not following links); ok is false
	// when it does not exist.
	ReadFile(p string) (content []byte, info fs.FileInfo, ok bool, err error)
	// Rel is a path under the workspace relative to it, slash-separated.
	Rel(abs string) string
}

// checker runs the checks on one workspace.
type checker struct {
	ws   Workspace
	dir  string
	repo *gitver.Repo
}

// Check checks the workspace at dir and reports every problem it finds,
// each with its fix. It looks at the journal of an interrupted write before
// opening the workspace, because opening finishes that write; the other
// checks see the workspace as opened. A workspace that does not open is
// reported, not returned as an error.
func Check(dir string, opts Options) *Report {
	opts.defaults()
	r := &Report{}
	abs, err := filepath.Abs(dir)
	if err != nil {
		r.Add(Finding{Check: "repository", Severity: SeverityError, Message: err.Error(),
			Fix: "name an existing workspace directory with --dir"})
		return r
	}
	journalBefore := inspectJournal(abs)
	w, err := fsstore.Open(abs, opts.Open)
	if err != nil {
		r.Add(openFinding(abs, err))
		if journalBefore != nil {
			journalBefore.Fix = fixJournalLater
			r.Add(*journalBefore)
		}
		checkAccess(abs, r)
		r.finish()
		return r
	}
	defer w.Close()
	if journalBefore != nil {
		f := *journalBefore
		if st := inspectJournal(abs); st == nil {
			f.Message += "; health finished it when it opened the workspace"
			f.Fix = "nothing left to do: it is finished; run health again to confirm, and look for what killed the writer"
		} else {
			f.Fix = fixJournalLater
		}
		r.Add(f)
	}
	newChecker(w).run(opts, r, false)
	r.finish()
	return r
}

// CheckOpen checks an open workspace: the same checks as Check, except that
// an interrupted write is only seen while no process has finished it.
func CheckOpen(w Workspace, opts Options) *Report {
	opts.defaults()
	r := &Report{}
	newChecker(w).run(opts, r, true)
	r.finish()
	return r
}

func newChecker(w Workspace) *checker {
	return &checker{ws: w, dir: w.Dir(), repo: w.Repo()}
}

func openFinding(dir string, err error) Finding {
	f := Finding{Check: "repository", Severity: SeverityError, Message: "the workspace does not open: " + err.Error()}
	switch {
	case errors.Is(err, gitver.ErrDetached):
		f.Fix = "check out the workspace's branch: git switch " + note.DefaultBranch
	case errors.Is(err, gitver.ErrNotRepository):
		f.Fix = "make it a workspace with `blackboard-mcp init`, or point --dir at the workspace"
	case errors.Is(err, fsstore.ErrNotWorkspace):
		f.Fix = "make it a workspace with `blackboard-mcp init " + filepath.Base(dir) + "`, or point --dir at the workspace"
	default:
		f.Fix = "fix what the message names; if it is the derived index, delete .blackboard/index.db (it is rebuilt from git)"
	}
	return f
}

// run runs the checks in the order a person would fix things: the
// repository first, the derived index last.
func (c *checker) run(opts Options, r *Report, journal bool) {
	files, head, ok := c.checkRepository(r)
	if ok {
		c.checkObjects(head, opts.RecentCommits, r)
	}
	c.checkFsck(opts.FsckTimeout, r)
	c.checkLocks(opts.LockAge, r)
	if journal {
		if f := inspectJournal(c.dir); f != nil {
			f.Fix = fixJournalLater
			r.Add(*f)
		}
	}
	if ok {
		notes := c.readHeadNotes(files, r)
		disk := c.checkDisk(files, notes, r)
		c.checkStaged(r)
		checkNotes(notes, disk, files, r)
		c.checkIndex(head, files, opts, r)
	} else {
		c.checkIndex(head, nil, opts, r)
	}
	checkAccess(c.dir, r)
}

// finish orders the findings by check and path and caps each check's count.
func (r *Report) finish() {
	order := map[string]int{}
	for i, c := range []string{"repository", "objects", "locks", "journal", "files", "uncommitted",
		"front_matter", "digest", "blob", "index", "access"} {
		order[c] = i + 1
	}
	rank := func(c string) int {
		if n, ok := order[c]; ok {
			return n
		}
		return len(order) + 1 // a caller's own checks come last
	}
	seen := map[Finding]bool{}
	var out []Finding
	for _, f := range r.Findings {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := rank(out[i].Check), rank(out[j].Check); a != b {
			return a < b
		}
		return out[i].Path < out[j].Path
	})
	count := map[string]int{}
	capped := out[:0]
	for _, f := range out {
		count[f.Check]++
		if count[f.Check] <= maxFindingsPerCheck {
			capped = append(capped, f)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(count)) {
		if n := count[c]; n > maxFindingsPerCheck {
			capped = append(capped, Finding{Check: c, Severity: SeverityWarning,
				Message: fmt.Sprintf("%d more %s findings not shown", n-maxFindingsPerCheck, c),
				Fix:     "fix the ones shown and run health again"})
		}
	}
	r.Findings = capped
}

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
		r.Add(Finding{Check: "repository", Severity: SeverityError,
			Message: fmt.Sprintf("the branch %s has no commit", branch),
			Fix:     "run `blackboard-mcp init` in the workspace, which makes the first commit"})
		return nil, head, false
	}
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

// noteInfo is what health needs of a note file's front matter.
type noteInfo struct {
	unread  bool   // its blob could not be read: nothing is known of it
	problem string // why it does not parse (parseNote's reason), "" when it does
	digest  string
	blob    string // the blob: field
}

func infoOf(content []byte) noteInfo {
	f, err := note.Parse(content)
	if err != nil {
		return noteInfo{problem: err.Error()}
	}
	return noteInfo{digest: f.Str(note.KeyDigest), blob: f.Str(note.KeyBlob)}
}

// readHeadNotes reads every blob of the last commit, checks that its content
// matches its name, and parses the notes' front matter. It returns the notes
// by path.
func (c *checker) readHeadNotes(files map[string]gitver.Hash, r *Report) map[string]noteInfo {
	notes := map[string]noteInfo{}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		h := files[p]
		content, err := c.repo.ReadBlob(h)
		if err == nil && gitver.BlobHash(content) != h {
			err = errors.New("its content does not match its name")
		}
		if err != nil {
			r.Add(Finding{Check: "objects", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the last commit's blob %s of this file cannot be read: %v", h.Short(), err),
				Fix:     c.blobFix(p, h)})
			if note.IsNoteFile(p) {
				notes[p] = noteInfo{unread: true}
			}
			continue
		}
		if note.IsNoteFile(p) {
			notes[p] = infoOf(content)
		}
	}
	return notes
}

// blobFix says how to repair a damaged blob. When the work tree still holds
// its content, the object can be written again from the file; git itself
// would not overwrite the damaged loose object, so it goes first.
func (c *checker) blobFix(p string, h gitver.Hash) string {
	content, _, ok, err := c.ws.ReadFile(p)
	if err != nil || !ok || gitver.BlobHash(content) != h {
		return fixObjects
	}
	loose := filepath.Join(c.repo.GitDir(), "objects", h.String()[:2], h.String()[2:])
	if _, err := os.Stat(loose); err != nil {
		return fixObjects
	}
	return fmt.Sprintf("the file on disk still holds this content: delete the damaged object (rm -f %s), then write it again from the file (git hash-object -w %s)",
		c.ws.Rel(loose), p)
}

// diskFile is a note or blob file in the work tree.
type diskFile struct {
	blob gitver.Hash
	info *noteInfo // parsed when it is a note file that differs from the last commit
}

// checkDisk compares the work tree's note and blob files with the last
// commit, as `git status` would, and returns them by path. A file whose stat
// is what the index recorded when it last matched the committed blob is not
// read again.
func (c *checker) checkDisk(files map[string]gitver.Hash, notes map[string]noteInfo, r *Report) map[string]diskFile {
	disk := map[string]diskFile{}
	found, problems, listed := c.ws.WalkNotes()
	for _, p := range problems {
		r.Add(Finding{Check: "files", Severity: SeverityError, Path: p.Path, Message: p.What, Fix: p.Fix})
	}
	if !listed {
		return disk
	}
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		for _, p := range slices.Sorted(maps.Keys(found)) {
			fi := found[p]
			committed := files[p]
			if d, ok, err := s.Disk(p); err == nil && ok && !committed.IsZero() &&
				d.Blob == committed && fsstore.SameStat(d, fi) {
				disk[p] = diskFile{blob: committed}
				continue
			}
			content, _, exists, err := c.ws.ReadFile(p)
			if err != nil {
				r.Add(Finding{Check: "files", Severity: SeverityError, Path: p,
					Message: "cannot be read: " + message(err), Fix: "fix the file, or remove it"})
				continue
			}
			if !exists {
				continue
			}
			df := diskFile{blob: gitver.BlobHash(content)}
			if df.blob != committed && note.IsNoteFile(p) {
				info := infoOf(content)
				df.info = &info
			}
			disk[p] = df
		}
		return nil
	})
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
	}
	for _, p := range slices.Sorted(maps.Keys(disk)) {
		committed, ok := files[p]
		switch {
		case !ok:
			r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
				Message: "new on disk, not committed", Fix: fixUncommitted})
		case disk[p].blob != committed:
			r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
				Message: "differs from the last commit (an edit not committed yet)", Fix: fixUncommitted})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if _, ok := note.KeyOf(p); !ok {
			continue
		}
		if _, ok := disk[p]; !ok {
			if _, listed := notes[p]; listed || note.IsBlobFile(p) {
				r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
					Message: "deleted on disk but not in git",
					Fix:     "commit the deletion (git rm " + p + " and git commit), or bring the file back with git restore " + p})
			}
		}
	}
	return disk
}

// checkNotes reports unreadable front matter, notes without a digest, blob
// files no note uses and notes whose blob file is missing: in the last
// commit (what agents read) and in the work tree (what the next commit
// holds). A problem only the work tree has says so.
func checkNotes(head map[string]noteInfo, disk map[string]diskFile, files map[string]gitver.Hash, r *Report) {
	headBlobs := map[string]bool{}
	for p := range files {
		if note.IsBlobFile(p) {
			headBlobs[p] = true
		}
	}
	committed := notesFindings(head, headBlobs)
	seen := map[Finding]bool{}
	for _, f := range committed {
		seen[f] = true
		r.Add(f)
	}

	diskNotes := map[string]noteInfo{}
	diskBlobs := map[string]bool{}
	for p, f := range disk {
		switch {
		case note.IsBlobFile(p):
			diskBlobs[p] = true
		case f.info != nil:
			diskNotes[p] = *f.info
		default:
			if info, ok := head[p]; ok {
				diskNotes[p] = info
			}
		}
	}
	for _, f := range notesFindings(diskNotes, diskBlobs) {
		if !seen[f] {
			f.Message += " (in the copy on disk, not committed)"
			r.Add(f)
		}
	}
}

func notesFindings(notes map[string]noteInfo, blobs map[string]bool) []Finding {
	var out []Finding
	for _, p := range slices.Sorted(maps.Keys(notes)) {
		n := notes[p]
		key, _ := note.KeyOf(p)
		switch {
		case n.unread:
			continue // reported under objects
		case n.problem != "":
			out = append(out, Finding{Check: "front_matter", Severity: SeverityError, Path: p,
				Message: "the front matter cannot be read: " + n.problem, Fix: fixFrontMatter})
			continue
		case strings.TrimSpace(n.digest) == "":
			out = append(out, Finding{Check: "digest", Severity: SeverityWarning, Path: p,
				Message: "the note has no digest",
				Fix:     "add a `digest:` line to its front matter (one line saying what the note holds) and commit it, or rewrite it with `blackboard-mcp put " + key + " --digest ...`"})
		}
		if n.blob == "" {
			continue
		}
		want := note.SiblingBlobPath(key, n.blob)
		switch {
		case want == "":
			out = append(out, Finding{Check: "blob", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the front matter names blob %q, which is not this note's own blob file", n.blob),
				Fix:     "set `blob:` to " + path.Base(key) + ".blob.md (or .blob.tsv for a table), the file beside the note, or remove it and put the content in the body"})
		case !blobs[want]:
			out = append(out, Finding{Check: "blob", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the note's content is in blob %s, which is missing", want),
				Fix:     "bring the blob back from history (git log -- " + want + ", then git checkout COMMIT -- " + want + ") and commit it, or rewrite the note with its content (blackboard-mcp put " + key + ")"})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(blobs)) {
		key, _ := note.KeyOf(p)
		n, ok := notes[key+".md"]
		switch {
		case !ok:
			out = append(out, Finding{Check: "blob", Severity: SeverityWarning, Path: p,
				Message: fmt.Sprintf("a blob file with no note (%s.md does not exist)", key),
				Fix:     "delete it (git rm " + p + ") if it is not needed, or restore the note " + key + ".md from history"})
		case !n.unread && n.problem == "" && note.SiblingBlobPath(key, n.blob) != p:
			out = append(out, Finding{Check: "blob", Severity: SeverityWarning, Path: p,
				Message: fmt.Sprintf("a blob file no note uses: %s.md does not name it in `blob:`", key),
				Fix:     "delete it (git rm " + p + ") if it is not needed, or set `blob: " + path.Base(p) + "` in " + key + ".md"})
		}
	}
	return out
}

// checkIndex compares the derived index with git: the commit it reflects,
// the notes of the last commit when it reflects that commit, and, for a
// sample of notes, the version recounted from the first-parent history.
func (c *checker) checkIndex(head gitver.Hash, files map[string]gitver.Hash, opts Options, r *Report) {
	indexed, seq, err := c.ws.IndexHead()
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(),
			Fix:     fixReindex + "; if that fails too, delete .blackboard/index.db* and run any read"})
		return
	}
	const fixStale = "nothing is lost: any read catches the index up (e.g. `blackboard-mcp ls`), or run `blackboard-mcp reindex`"
	switch {
	case indexed.IsZero():
		r.Add(Finding{Check: "index", Severity: SeverityWarning, Path: note.IndexFile,
			Message: "the derived index is empty", Fix: fixStale})
		return
	case !head.IsZero() && indexed != head:
		r.Add(Finding{Check: "index", Severity: SeverityWarning, Path: note.IndexFile,
			Message: fmt.Sprintf("the derived index is stale: it reflects commit %s (cursor %d), the branch is at %s", indexed.Short(), seq, head.Short()),
			Fix:     fixStale})
	}
	if files != nil && indexed == head {
		c.checkIndexNotes(files, r)
	}
	c.checkVersions(indexed, seq, opts, r)
}

// checkIndexNotes compares the index's present notes with the notes of the
// commit it reflects.
func (c *checker) checkIndexNotes(files map[string]gitver.Hash, r *Report) {
	var keys []string
	for p := range files {
		if note.IsNoteFile(p) {
			key, _ := note.KeyOf(p)
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		_, total, err := s.List(index.ListQuery{Limit: 1})
		if err != nil {
			return err
		}
		if total != len(keys) {
			r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
				Message: fmt.Sprintf("the derived index lists %d notes; the last commit has %d", total, len(keys)),
				Fix:     fixReindex})
		}
		for start := 0; start < len(keys); start += 500 {
			batch := keys[start:min(start+500, len(keys))]
			rows, err := s.Notes(batch)
			if err != nil {
				return err
			}
			for _, key := range batch {
				n, ok := rows[key]
				want := files[key+".md"]
				switch {
				case !ok || !n.Present:
					r.Add(Finding{Check: "index", Severity: SeverityError, Path: key + ".md",
						Message: "the note is in the last commit but the derived index does not list it", Fix: fixReindex})
				case n.NoteBlob != want:
					r.Add(Finding{Check: "index", Severity: SeverityError, Path: key + ".md",
						Message: fmt.Sprintf("the derived index holds blob %s of the note; the last commit has %s", n.NoteBlob.Short(), want.Short()),
						Fix:     fixReindex})
				case n.ContentPath != "" && files[n.ContentPath] != n.ContentBlob:
					r.Add(Finding{Check: "index", Severity: SeverityError, Path: n.ContentPath,
						Message: "the derived index holds another version of the note's blob file than the last commit", Fix: fixReindex})
				}
			}
		}
		return nil
	})
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
	}
}

// checkVersions recounts, from git, the versions of the most recently
// changed notes: a note's version is the number of first-parent commits that
// changed its file or its blob (SPEC 4). The walk starts at the commit the
// index reflects, so a stale index is not mistaken for a wrong one. When the
// history is longer than the walk, the commits walked are compared one by
// one instead of the totals.
func (c *checker) checkVersions(from gitver.Hash, seq int, opts Options, r *Report) {
	var sample []index.Note
	if err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		var err error
		sample, _, err = s.List(index.ListQuery{Limit: opts.SampleNotes})
		return err
	}); err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
		return
	}
	sampled := make(map[string]bool, len(sample))
	for _, n := range sample {
		sampled[n.Key] = true
	}
	touched := map[string]map[gitver.Hash]bool{} // note -> commits that changed it
	walked := map[gitver.Hash]bool{}
	h := from
	var parentTree gitver.Hash
	var pending *gitver.CommitInfo
	// Walk newest first; each commit's changes need its parent's tree, so a
	// commit is diffed once its parent has been read.
	for !h.IsZero() && len(walked) < opts.VersionCommits {
		commit, err := c.repo.ReadCommit(h)
		if err != nil {
			r.Infof("index versions: not recounted, commit %s cannot be read (see objects)", h.Short())
			return
		}
		if pending != nil {
			if err := c.countChanges(pending, commit.Tree, sampled, touched); err != nil {
				r.Infof("index versions: not recounted, a tree of commit %s cannot be read (see objects)", pending.Hash.Short())
				return
			}
		}
		walked[commit.Hash] = true
		pending = commit
		h = commit.FirstParent()
	}
	complete := h.IsZero()
	if pending != nil {
		if !complete {
			// The oldest commit walked: its parent is outside the walk but
			// still needed for its diff.
			pc, err := c.repo.ReadCommit(h)
			if err != nil {
				r.Infof("index versions: not recounted, commit %s cannot be read (see objects)", h.Short())
				return
			}
			parentTree = pc.Tree
		}
		if err := c.countChanges(pending, parentTree, sampled, touched); err != nil {
			r.Infof("index versions: not recounted, a tree of commit %s cannot be read (see objects)", pending.Hash.Short())
			return
		}
	}
	if complete && len(walked) != seq {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: fmt.Sprintf("the derived index counts %d commits up to %s; git's first-parent history has %d", seq, from.Short(), len(walked)),
			Fix:     fixReindex})
	}
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		for _, n := range sample {
			events, err := s.History(n.Key, n.Version+1)
			if err != nil {
				return err
			}
			git := touched[n.Key]
			if complete {
				if n.Version != len(git) {
					r.Add(Finding{Check: "index", Severity: SeverityError, Path: n.Key + ".md",
						Message: fmt.Sprintf("the derived index says version %d; %d first-parent commits changed the note's files", n.Version, len(git)),
						Fix:     fixReindex})
				}
				continue
			}
			inWindow := 0
			for _, e := range events {
				if walked[e.Hash] {
					inWindow++
					if !git[e.Hash] {
						inWindow = -1
						break
					}
				}
			}
			if inWindow != len(git) {
				r.Add(Finding{Check: "index", Severity: SeverityError, Path: n.Key + ".md",
					Message: fmt.Sprintf("the derived index and git disagree on which of the last %d commits changed the note", len(walked)),
					Fix:     fixReindex})
			}
		}
		return nil
	})
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
		return
	}
	scope := "the whole history"
	if !complete {
		scope = fmt.Sprintf("the last %d commits", len(walked))
	}
	r.Infof("index: versions of %d notes recounted over %s", len(sample), scope)
}

func (c *checker) countChanges(commit *gitver.CommitInfo, parentTree gitver.Hash, sampled map[string]bool,
	touched map[string]map[gitver.Hash]bool) error {
	changes, err := c.repo.DiffTrees(parentTree, commit.Tree)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		key, ok := note.KeyOf(ch.Path)
		if !ok || !sampled[key] {
			continue
		}
		if touched[key] == nil {
			touched[key] = map[gitver.Hash]bool{}
		}
		touched[key][commit.Hash] = true
	}
	return nil
}

// checkAccess validates the access file (access.Lint, the rules the server
// holds it to), reporting every problem with its line.
func checkAccess(dir string, r *Report) {
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(note.AccessFile)))
	if errors.Is(err, fs.ErrNotExist) {
		r.Infof("access: no %s, open mode: every caller may read and write every topic", note.AccessFile)
		return
	}
	if err != nil {
		r.Add(Finding{Check: "access", Severity: SeverityError, Path: note.AccessFile,
			Message: fmt.Sprintf("cannot be read: %v", err), Fix: fixAccess})
		return
	}
	n, problems := access.Lint(raw)
	for _, p := range problems {
		r.Add(Finding{Check: "access", Severity: SeverityError, Path: note.AccessFile, Message: p.String(), Fix: fixAccess})
	}
	switch {
	case len(problems) > 0:
	case n == 0:
		r.Add(Finding{Check: "access", Severity: SeverityWarning, Path: note.AccessFile,
			Message: "the `agents:` list is empty: every token is refused",
			Fix:     "add an agent with `blackboard-mcp token add NAME --read TOPICS --write TOPICS`, or delete the file for open mode"})
	default:
		r.Infof("access: %s lists %d agents", note.AccessFile, n)
	}
}

// message is an error's text for a finding, without the operation prefix.
func message(err error) string {
	var e *fsstore.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}
