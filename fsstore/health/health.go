package health

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Workspace is what health reads of an open workspace; *fsstore.Workspace
// has it. Health only reads: it never takes the write lock.
type Workspace interface {
	Dir() string
	Repo() *gitver.Repo
	// IndexHead is the commit the derived index reflects, and its cursor.
	IndexHead() (commit gitver.Hash, cursor int, err error)
	// IndexBuild says how far a build of the derived index in the
	// background has come, while one runs.
	IndexBuild() (fsstore.BuildProgress, bool)
	// ReadIndex reads the derived index at one point of history.
	ReadIndex(fn func(*index.Snapshot) error) error
	// WalkNotes lists the work tree's note and blob files, with their stat,
	// and the paths that would be but cannot be read.
	WalkNotes() (found map[string]gitver.FileStat, problems []fsstore.TreeProblem, ok bool)
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
	// readings is what the derived index read of every present note, read
	// once for the checks that run side by side.
	readings func() (map[string]index.Reading, error)
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
	return &checker{ws: w, dir: w.Dir(), repo: w.Repo(), readings: sync.OnceValues(func() (map[string]index.Reading, error) {
		var readings map[string]index.Reading
		err := w.ReadIndex(func(s *index.Snapshot) error {
			var err error
			readings, err = s.Readings()
			return err
		})
		return readings, err
	})}
}

func openFinding(dir string, err error) Finding {
	f := Finding{Check: "repository", Severity: SeverityError, Message: "the workspace does not open: " + err.Error()}
	switch {
	case errors.Is(err, gitver.ErrNotRepository):
		f.Fix = "make it a workspace with `blackboard-mcp init`, or point --dir at the workspace"
	case errors.Is(err, fsstore.ErrNotWorkspace):
		f.Fix = "make it a workspace with `blackboard-mcp init " + filepath.Base(dir) + "`, or point --dir at the workspace"
	default:
		f.Fix = "fix what the message names; if it is the derived index, delete .blackboard/index.db (it is rebuilt from git)"
	}
	return f
}

// run runs the checks and reports them in the order a person would fix
// things: the repository first, the derived index last. git's own fsck, the
// reading of the last commit's blobs, the comparison of the work tree with
// them and the index's with git run side by side; each reports into a part
// of its own, and the parts are put together in order.
func (c *checker) run(opts Options, r *Report, journal bool) {
	progress := opts.Progress
	// git's fsck needs nothing of the other checks and takes longest.
	fsck := &Report{}
	fsckDone := make(chan struct{})
	go func() {
		defer close(fsckDone)
		c.checkFsck(opts.FsckTimeout, fsck)
	}()
	progress("the repository")
	files, head, ok := c.checkRepository(r)
	if ok {
		c.checkObjects(head, opts.RecentCommits, r)
	}
	c.checkRemote(r)
	rest := &Report{}
	c.checkLocks(opts.LockAge, rest)
	if journal {
		if f := inspectJournal(c.dir); f != nil {
			f.Fix = fixJournalLater
			rest.Add(*f)
		}
	}
	indexed := &Report{}
	indexDone := make(chan struct{})
	if ok {
		progress(fmt.Sprintf("the %d files of the last commit, the work tree and the derived index", len(files)))
		go func() {
			defer close(indexDone)
			c.checkIndex(head, files, opts, indexed)
		}()
		blobs, tree := &Report{}, &Report{}
		var notes map[string]noteInfo
		read := make(chan struct{})
		go func() {
			defer close(read)
			notes = c.readHeadNotes(files, opts.ReparseOneIn, blobs)
		}()
		disk := c.checkDisk(files, tree)
		<-read
		rest.merge(blobs)
		rest.merge(tree)
		c.reportDeleted(files, notes, disk, rest)
		c.checkStaged(rest)
		checkNotes(notes, disk, files, rest)
	} else {
		go func() {
			defer close(indexDone)
			c.checkIndex(head, nil, opts, indexed)
		}()
	}
	<-indexDone
	rest.merge(indexed)
	checkAccess(c.dir, rest)
	c.checkClaims(time.Now(), rest)
	c.checkWaits(rest)
	c.checkVectors(rest)
	progress("git fsck")
	<-fsckDone
	r.merge(fsck)
	r.merge(rest)
}
