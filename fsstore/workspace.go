package fsstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/follow"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/gitremote"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/journal"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/localboard"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/people"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/pipeline"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/vectors"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Options configure an opened workspace. The zero value is durable, in open
// mode, with the author "agent".
type Options struct {
	// NoSync turns off fsync: faster, and an acknowledged write can be lost
	// by a power failure (never by a crash of the process).
	NoSync bool
	// Agent is the author of the tool writes this process makes; "agent"
	// when empty.
	Agent string
	// SourceRoots are directories source_path may read from besides the
	// workspace's parent directory, which always may be.
	SourceRoots []string
	// OnEdits, when set, is told of every commit of people's edits (to log
	// them). It runs under the write lock and must be quick.
	OnEdits func(*EditReport)
	// Logf, when set, is told what the workspace repaired on its own (a
	// person's reset that dropped agents' commits). It runs under the
	// write lock and must be quick.
	Logf func(format string, args ...any)
	// OneShot opens the workspace for one command (the CLI): a write then
	// compares only its own note with the work tree, not the whole tree, so
	// its cost does not grow with the board. A person's edit to the note
	// written is still committed first; edits to other notes wait for a
	// server, which compares the whole tree, or a write of their own.
	OneShot bool
	// IndexInBackground is a server's: a call never waits for a long
	// catch-up of the derived index (a board cloned without one, a person's
	// pull of thousands of commits). The catch-up then runs in the
	// background, in steps; meanwhile listings and searches answer from
	// the index as far as it has come, named notes are read from git, a
	// write is checked against git for its own note (catchup.NoteFromGit)
	// once the build is near enough its end, and other calls are
	// ErrUnavailable, saying how far. The zero value waits for the
	// catch-up.
	IndexInBackground bool
}

// Workspace is a board on disk: the notes, the git repository and the derived
// index. It is safe for concurrent use, and any number of processes may open
// the same workspace: writes are serialized by a file lock and checked by
// compare-and-swap against git, never against a copy.
type Workspace struct {
	dir  string
	name string
	// sourceRoots are absolute, links resolved.
	sourceRoots []string
	repo        *gitver.Repo
	idx         *index.DB
	catch       *catchup.Catcher // brings idx to the branch
	hist        *history.History // questions about the branch's history
	root        *os.Root         // every note file is opened through it: no link leads out
	files       *worktree.Files  // writes and places the notes' files, through root
	commits     *commits.Builder // builds every commit the program makes
	logFn       func(format string, args ...any)
	agent       string
	// The parts, each with one job, each holding the parts below it:
	// lock, then mover (the branch move with its files and journal),
	// follower (the upstream, where writes count, and the branch brought
	// to it), people (people's edits and git), pipe (tool writes).
	lock     *writeLock
	mover    *mover.Mover
	follower *follow.Follower
	people   *people.People
	// displaced are the files moves kept for a person.
	displaced *mover.Displaced
	edits     *people.Pending
	pipe      *pipeline.Pipeline
	vectors   *vectors.Vectors // the notes' meaning, made in the background
	reader    *noteReader      // the notes as the index and git hold them
}

// ReleaseMemory gives back what the workspace keeps only to go faster:
// SQLite's caches and the pages of git's packs read, and with all git's
// index as parsed, which costs the next write a parse (60-110 ms at
// 100,000 notes). A server that has gone quiet calls it, with all once it
// has been quiet for long; the next call builds them again.
func (w *Workspace) ReleaseMemory(all bool) {
	w.repo.ReleaseMemory(all)
	w.idx.ReleaseMemory()
}

// Name is the workspace name that full addresses carry.
func (w *Workspace) Name() string { return w.name }

// Dir is the workspace root.
func (w *Workspace) Dir() string { return w.dir }

// Agent is the author of this process's tool writes.
func (w *Workspace) Agent() string { return w.agent }

// Init makes dir a workspace: a git repository, the .blackboard directory
// (its config, and a .gitignore for the derived index), and the note
// run/state/current, committed together. Running it again changes nothing.
// name is the workspace name; empty means the directory's name.
func Init(dir, name string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := gitver.Init(abs, note.DefaultBranch); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(abs, note.MetaDir), 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, note.ConfigFile)); errors.Is(err, fs.ErrNotExist) {
		if name == "" {
			name = note.WorkspaceNameFor(abs)
		}
		if _, bad := note.FoldSegment(name); bad != "" {
			return fmt.Errorf("workspace name %q: %s", name, bad)
		}
		// The board's branch is the one checked out now: a new repository's
		// main, or the branch of a repository the person made before.
		branch, err := gitver.HeadBranch(abs)
		if err != nil {
			return fmt.Errorf("choose the board's branch: %w", err)
		}
		if why := note.BranchProblem(branch); why != "" {
			return fmt.Errorf("the branch checked out, %q, cannot be the board's: it %s; check out another (git switch -c main)", branch, why)
		}
		cfg := note.ConfigText(note.Config{Workspace: name, Branch: branch})
		if err := os.WriteFile(filepath.Join(abs, note.ConfigFile), []byte(cfg), 0o644); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(abs, note.GitignoreFile)); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(filepath.Join(abs, note.GitignoreFile), []byte(note.GitignoreText), 0o644); err != nil {
			return err
		}
	}
	w, err := Open(abs, Options{Agent: "blackboard-mcp"})
	if err != nil {
		return err
	}
	defer w.Close()
	return w.initCommit()
}

// Open opens an initialized workspace.
func Open(dir string, opts Options) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(abs, note.ConfigFile))
	if err != nil {
		return nil, &Error{Kind: ErrNotWorkspace, Err: err,
			Msg: fmt.Sprintf("%s is not a blackboard workspace (no %s): run `blackboard-mcp init %s`", abs, note.ConfigFile, dir)}
	}
	cfg, err := note.ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	if cfg.Branch == "" {
		cfg.Branch = unrecordedBranch(abs)
	}
	repo, err := gitver.Open(abs, gitver.Options{NoSync: opts.NoSync, Branch: cfg.Branch})
	if err != nil {
		return nil, err
	}
	if err := repo.Exclude(worktree.TempPattern, "blackboard-mcp's temporary files: never a person's, never to commit"); err != nil {
		repo.Close()
		return nil, fmt.Errorf("keep the board's temporary files out of git: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, err
	}
	lockFile, err := os.OpenFile(filepath.Join(abs, note.LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		root.Close()
		return nil, err
	}
	idx, err := index.Open(filepath.Join(abs, note.IndexFile))
	if err != nil {
		root.Close()
		lockFile.Close()
		return nil, fmt.Errorf("open the derived index: %w", err)
	}
	agent := opts.Agent
	if agent == "" {
		agent = "agent"
	}
	// The workspace's parent is always a source root; --source-root adds more.
	roots := append(defaultSourceRoots(abs), opts.SourceRoots...)
	w := &Workspace{dir: abs, name: cfg.Workspace, repo: repo, idx: idx, root: root,
		sourceRoots: resolveRoots(roots), logFn: opts.Logf, agent: agent}
	w.files = worktree.New(root, repo, reach)
	w.hist = history.New(repo)
	w.commits = commits.New(repo, idx)
	w.catch = catchup.New(repo, idx, catchup.Options{Workspace: cfg.Workspace,
		BuildPath: filepath.Join(abs, note.IndexFile+"-build"), Gone: w.branchGone, Logf: w.logf,
		InBackground: opts.IndexInBackground})
	w.reader = &noteReader{name: cfg.Workspace, repo: repo, idx: idx, catch: w.catch, logf: w.logf}
	edits := people.NewPending(opts.OneShot)
	displaced := &mover.Displaced{}
	program := func() gitver.Signature { return w.agentSignature(note.InitAgent) }
	lock := &writeLock{file: lockFile}
	mv := mover.New(mover.Options{Git: repo, Dir: abs, Root: root, Files: w.files,
		Journal: journal.At(filepath.Join(abs, note.JournalFile), repo.Durable()), Catch: w.catch, History: w.hist,
		Displaced: displaced, Holds: lock.count, StillOpen: w.stillOpen, Signature: program,
		Edited: func(paths []string) { edits.Add(paths, false) }, Reach: reach})
	var up follow.Upstream = localboard.Board{}
	if name := repo.Upstream(); name != "" {
		up = gitremote.New(repo, name, w.logf, reach)
	}
	follower := follow.New(repo, w.hist, mv, up, program, w.logf)
	ppl := people.New(people.Options{Git: repo, Dir: abs, Name: cfg.Workspace, Root: root, Files: w.files, Index: idx,
		Catch: w.catch, History: w.hist, Commits: w.commits, Mover: mv, Follower: follower, Displaced: displaced, Edits: edits,
		Lock: lock.with, StillOpen: w.stillOpen, Program: program, OnEdits: opts.OnEdits, Logf: w.logf, Reach: reach})
	pipe := pipeline.New(pipeline.Options{Git: repo, Name: cfg.Workspace, Index: idx, Catch: w.catch, History: w.hist,
		Commits: w.commits, Mover: mv, People: ppl, Follower: follower, Lock: lock.with, Logf: w.logf, Reach: reach})
	w.lock, w.mover, w.follower, w.people, w.displaced, w.edits, w.pipe = lock, mv, follower, ppl, displaced, edits, pipe
	w.vectors = vectors.New(repo, idx)
	if fi, err := os.Stat(filepath.Join(abs, note.JournalFile)); err == nil && fi.Size() > 0 {
		// A writer died mid-write: finish its work now, so the files are
		// right from the start and not only after the next write.
		if err := w.lock.with(ppl.Repair); err != nil && !errors.Is(err, errBranchMoved) {
			w.Close()
			return nil, err
		}
	}
	return w, nil
}

// unrecordedBranch is the branch of a board made before its config named
// one: main, as init made every board, unless the repository has no main
// and HEAD names another branch (a board initialized in a repository a
// person made on another branch).
func unrecordedBranch(dir string) string {
	repo, err := gitver.Open(dir, gitver.Options{NoSync: true, Branch: note.DefaultBranch})
	if err != nil {
		return note.DefaultBranch
	}
	defer repo.Close()
	if head, err := repo.Head(); err == nil && !head.IsZero() {
		return note.DefaultBranch
	}
	if branch, err := gitver.HeadBranch(dir); err == nil {
		return branch
	}
	return note.DefaultBranch
}

// Close releases the workspace's files.
func (w *Workspace) Close() error {
	w.catch.Close()
	return errors.Join(w.idx.Close(), w.lock.file.Close(), w.root.Close(), w.repo.Close())
}

// As returns the board as caller sees it. A process without access control
// (the CLI, a board without an access file) calls as
// OpenCaller(w.Agent()).
func (w *Workspace) As(c *Caller) *View { return &View{w: w, c: c} }

// initCommit commits the workspace's own files and the state note, in one
// commit, unless they are already on the branch.
func (w *Workspace) initCommit() error {
	return w.lock.with(func() error {
		head, _, err := w.catch.CatchUp(nil, nil)
		if err != nil {
			return err
		}
		var changes []commits.Change
		own := []string{note.ConfigFile, note.GitignoreFile}
		blobs, err := w.people.CommittedBlobs(own)
		if err != nil {
			return err
		}
		for i, p := range own {
			if !blobs[i].IsZero() {
				continue
			}
			content, err := os.ReadFile(filepath.Join(w.dir, filepath.FromSlash(p)))
			if err != nil {
				return err
			}
			changes = append(changes, commits.Change{Path: p, Content: content})
		}
		state, err := w.idx.Note(note.StateNote)
		if err != nil {
			return err
		}
		if state.Version == 0 {
			if _, err := os.Stat(filepath.Join(w.dir, filepath.FromSlash(note.StateNote+".md"))); os.IsNotExist(err) {
				content, err := note.StateNoteFile(time.Now())
				if err != nil {
					return err
				}
				changes = append(changes, commits.Change{Path: note.StateNote + ".md", Content: content})
			}
		}
		if len(changes) == 0 {
			return nil
		}
		_, err = w.people.CommitLocked(head, changes, w.agentSignature(note.InitAgent), note.InitMessage(w.name).String(), false)
		return err
	})
}

// stillOpen checks that the workspace's directory is still the one this
// process opened. A directory removed, or replaced by another at the same
// path (restored from a backup, cloned again) while a server runs, leaves
// the server's files (opened through root) in the old one and its git
// (named by path) in the new one: compared with the new branch, every
// note looked deleted by hand, and was committed so. Before anything
// compares the work tree with git or moves the branch, the two must be
// one directory.
func (w *Workspace) stillOpen() error {
	opened, err := w.root.Stat(".")
	if err == nil {
		var now os.FileInfo
		if now, err = os.Stat(w.dir); err == nil && os.SameFile(opened, now) {
			return nil
		}
	}
	return errorf("write", "", ErrUnavailable,
		"the workspace directory %s was removed or replaced while this process had it open; nothing is written or compared: restart the server", w.dir).
		Because(ErrWorkspaceReplaced)
}

// ownMove starts the reflog message of every move of the branch the program
// makes.
const ownMove = history.OwnMove

func (w *Workspace) agentSignature(agent string) gitver.Signature {
	return gitver.Signature{Name: agent, Email: agent + "@blackboard.local", When: time.Now()}
}

// logf tells the operator what the workspace repaired on its own.
func (w *Workspace) logf(format string, args ...any) {
	if w.logFn != nil {
		w.logFn(format, args...)
	}
}

// crashPoint, when set (only by the crash tests), is called as a write passes
// each step; the tests kill the process there to prove every step recoverable.
var crashPoint func(step string)

func reach(step string) {
	if crashPoint != nil {
		crashPoint(step)
	}
}
