// Package people is the engine's part for people's edits and a person's
// git: it finds and commits what people changed in the work tree
// (edits.go, displaced.go, stale.go, saves.go, unplaced.go), and repairs
// what a person's git did beside the agents (repair.go, rescue.go). Its
// commits are built where every commit is (fsstore/internal/commits),
// published where writes count through the follower it is handed, and
// put on the branch by the mover.
package people

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Git is what people's part needs of the board's repository: the branch
// and its moves, the commits and files it compares the work tree with,
// git's index for the files it commits as they are, and a person's
// identity.
type Git interface {
	Branch() string
	GitDir() string
	Head() (gitver.Hash, error)
	ReadCommit(h gitver.Hash) (*gitver.CommitInfo, error)
	ReadBlob(h gitver.Hash) ([]byte, error)
	PathBlob(commit gitver.Hash, path string) (gitver.Hash, error)
	DiffTrees(a, b gitver.Hash) ([]gitver.PathChange, error)
	WriteBlob(content []byte) (gitver.Hash, error)
	WriteCommit(c gitver.CommitObject) (gitver.Hash, error)
	DropStaged()
	UpdateBranch(old, new gitver.Hash, who gitver.Signature, reason string) error
	UpdateRef(name string, old, new gitver.Hash, who gitver.Signature, reason string) error
	Refs(prefix string) (map[string]gitver.Hash, error)
	LastMoveBy(own string) (last gitver.ReflogEntry, found bool, err error)
	RecentBranchMoves() ([]gitver.ReflogEntry, error)
	WorkTree() gitver.WorkTree
	IndexLockPath() string
	UpdateIndex(entries []gitver.IndexEntry) error
	WroteByGit(path string, fi os.FileInfo, blob gitver.Hash) bool
	UserIdentity() (name, email string)
}

// Follower is where people's commits count, and what brings the branch
// back to it: the upstream's follower.
type Follower interface {
	// Offer publishes a commit built on the local branch before the
	// branch moves to it; took says the upstream took it.
	Offer(commit *gitver.PendingCommit) (took bool, err error)
	// WhileBranchMoves runs attempt again, repair before each new one,
	// while the branch or the remote moves under it.
	WhileBranchMoves(op, uri string, repair func() error, attempt func() error) error
}

// Options are what People is handed: the board's parts it works through,
// and the functions it tells the engine through.
type Options struct {
	Git       Git
	Dir, Name string // the workspace's directory and name
	Root      *os.Root
	Files     *worktree.Files
	Index     *index.DB
	Catch     *catchup.Catcher
	History   *history.History
	Commits   *commits.Builder
	Mover     *mover.Mover
	Follower  Follower
	Displaced *mover.Displaced
	// Edits are the paths reported changed and not yet committed.
	Edits *Pending
	// Lock runs fn holding the workspace's write lock.
	Lock func(fn func() error) error
	// StillOpen fails when the workspace's directory is no longer the
	// one opened.
	StillOpen func() error
	// Program signs the program's own commits.
	Program func() gitver.Signature
	// OnEdits hears of every commit of people's edits; nil for none.
	OnEdits func(*EditReport)
	Logf    func(format string, args ...any)
	// Reach marks a step for the crash tests.
	Reach func(step string)
}

// People is the part for people's edits and a person's git.
type People struct {
	repo      Git
	dir, name string
	root      *os.Root
	files     *worktree.Files
	idx       *index.DB
	catch     *catchup.Catcher
	hist      *history.History
	commits   *commits.Builder
	mover     *mover.Mover
	follower  Follower // publishes its commits where writes count
	edits     *Pending // people's changes reported and not yet committed
	displaced *mover.Displaced
	lock      func(fn func() error) error
	stillOpen func() error
	program   func() gitver.Signature
	onEdits   func(*EditReport)
	logFn     func(format string, args ...any)
	reach     func(step string)
	vanished  vanishedFiles  // files found missing, not yet committed as deleted
	saves     committedSaves // people's commits looked at for saves to merge (saves.go)
	placed    placedTexts    // merged saves put in files, which the next saves may be made from (placed.go)
}

// New is the people's part of the board opts describe.
func New(opts Options) *People {
	return &People{repo: opts.Git, dir: opts.Dir, name: opts.Name, root: opts.Root, files: opts.Files, idx: opts.Index,
		catch: opts.Catch, hist: opts.History, commits: opts.Commits, mover: opts.Mover, follower: opts.Follower,
		edits: opts.Edits, displaced: opts.Displaced, lock: opts.Lock, stillOpen: opts.StillOpen, program: opts.Program,
		onEdits: opts.OnEdits, logFn: opts.Logf, reach: opts.Reach}
}

// logf tells the operator what the workspace repaired on its own.
func (p *People) logf(format string, args ...any) {
	if p.logFn != nil {
		p.logFn(format, args...)
	}
}

// PersonSignature is the author of an edit a person made by hand: git's
// user.name, else "human".
func (p *People) PersonSignature() gitver.Signature {
	name, email := p.repo.UserIdentity()
	if name == "" {
		name = "human"
	}
	if email == "" {
		email = name + "@blackboard.local"
	}
	return gitver.Signature{Name: name, Email: email, When: time.Now()}
}

// subject is a commit message's first line.
func subject(message string) string {
	line, _, _ := strings.Cut(message, "\n")
	return line
}

// TreeProblem is a path of the work tree that cannot be read as a note's
// file: what is wrong, and what to do.
type TreeProblem struct {
	Path, What, Fix string
	// Minor is set for a file that is no note at all (a Markdown file whose
	// name no address can have): nothing of the board is wrong, but a
	// person may have meant it as a note.
	Minor bool
}

func (t TreeProblem) String() string {
	if t.Path == "" {
		return t.What + "; " + t.Fix
	}
	return t.Path + " is " + t.What + "; " + t.Fix
}

// WalkNotes finds every file of the work tree that belongs to a note, with
// its stat, and the paths that would but cannot be read. It does not enter
// directories whose name starts with a dot (.git, .blackboard, editors'
// folders: no address names them) and does not follow links. ok is false
// when the work tree itself cannot be listed.
func (p *People) WalkNotes() (found map[string]gitver.FileStat, problems []TreeProblem, ok bool) {
	found = map[string]gitver.FileStat{}
	err := filepath.WalkDir(p.dir, func(abs string, d fs.DirEntry, err error) error {
		rel := p.rel(abs)
		if err != nil {
			if rel == "." {
				return err
			}
			problems = append(problems, TreeProblem{Path: rel, What: "unreadable (" + fail.Msg(err) + ")", Fix: "fix its permissions"})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if _, ok := note.KeyOf(rel); !ok {
			if problem := p.misnamed(rel); problem != nil && d.Type().IsRegular() {
				problems = append(problems, *problem)
			}
			return nil
		}
		const fix = "replace it with a regular file, or remove it"
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			problems = append(problems, TreeProblem{Path: rel, What: "a symbolic link, which the board does not follow", Fix: fix})
		case !d.Type().IsRegular():
			problems = append(problems, TreeProblem{Path: rel, What: "not a regular file", Fix: fix})
		default:
			if fi, err := d.Info(); err == nil {
				found[rel] = gitver.StatOfFile(fi)
			}
		}
		return nil
	})
	if err != nil {
		problems = append(problems, TreeProblem{What: "the work tree cannot be listed: " + fail.Msg(err), Fix: "fix the workspace directory's permissions"})
		return found, problems, false
	}
	return found, problems, true
}

// rel turns a path under the workspace into its slash-separated
// relative form.
func (p *People) rel(abs string) string {
	rel, err := filepath.Rel(p.dir, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}
