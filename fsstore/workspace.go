package fsstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/journal"
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
	// the index as far as it has come, and other calls are ErrUnavailable,
	// saying how far. The zero value waits for the catch-up.
	IndexInBackground bool
}

// Workspace is a board on disk: the notes, the git repository and the derived
// index. It is safe for concurrent use, and any number of processes may open
// the same workspace: writes are serialized by a file lock and checked by
// compare-and-swap against git, never against a copy.
type Workspace struct {
	dir   string
	name  string
	agent string
	// sourceRoots are absolute, links resolved.
	sourceRoots []string
	repo        *gitver.Repo
	idx         *index.DB
	catch       *catchup.Catcher // brings idx to the branch
	root        *os.Root         // every note file is opened through it: no link leads out
	files       *worktree.Files  // writes and places the notes' files, through root
	journal     *journal.File    // the intent of the write in progress, for whoever comes next

	// mu serializes this process's writes; lock (flock) serializes processes.
	mu     sync.Mutex
	lock   *os.File
	writes int // commits made by this process, guarded by mu: paces maintenance

	edits   pendingEdits // people's changes reported and not yet committed
	onEdits func(*EditReport)
	logFn   func(format string, args ...any)
	// displaced watches the files writes replaced while a person may still
	// write into them (see displaced.go).
	displaced displacedFiles
	// vectors are the notes' meaning: made in the background, held by
	// this process to search (fsstore/internal/vectors).
	vectors *vectors.Vectors
	// remote is the remote the board's branch follows, "" for none: a
	// write counts once it took it (see remote.go).
	remote string
	// queue holds this process's tool writes waiting to be built; pub
	// publishes them (see batch.go).
	queue writeQueue
	pub   publisher
	// pending is the record of the clone's pending writes (pending.go).
	pending pendingFile
	// pendingDiffs remembers what pending commits changed; guarded by the
	// write lock.
	pendingDiffs map[gitver.Hash][]gitver.PathChange
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
	lock, err := os.OpenFile(filepath.Join(abs, note.LockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		root.Close()
		return nil, err
	}
	idx, err := index.Open(filepath.Join(abs, note.IndexFile))
	if err != nil {
		root.Close()
		lock.Close()
		return nil, fmt.Errorf("open the derived index: %w", err)
	}
	agent := opts.Agent
	if agent == "" {
		agent = "agent"
	}
	// The workspace's parent is always a source root; --source-root adds more.
	roots := append(defaultSourceRoots(abs), opts.SourceRoots...)
	w := &Workspace{dir: abs, name: cfg.Workspace, agent: agent, repo: repo, idx: idx, root: root, lock: lock,
		sourceRoots: resolveRoots(roots), onEdits: opts.OnEdits, logFn: opts.Logf, remote: repo.Upstream()}
	w.files = worktree.New(root, repo, reach)
	w.vectors = vectors.New(repo, idx)
	w.journal = journal.At(filepath.Join(abs, note.JournalFile), repo.Durable())
	w.catch = catchup.New(repo, idx, catchup.Options{Workspace: cfg.Workspace,
		BuildPath: filepath.Join(abs, note.IndexFile+"-build"), Gone: w.branchGone, Logf: w.logf,
		InBackground: opts.IndexInBackground})
	w.edits.oneShot = opts.OneShot
	w.pub.gitDir = repo.GitDir()
	w.pending = pendingFile{path: filepath.Join(repo.GitDir(), pendingName), logf: w.logf}
	if fi, err := os.Stat(filepath.Join(abs, note.JournalFile)); err == nil && fi.Size() > 0 {
		// A writer died mid-write: finish its work now, so the files are
		// right from the start and not only after the next write.
		if err := w.withWriteLock(func() error { return nil }); err != nil {
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
	return errors.Join(w.pub.close(), w.idx.Close(), w.lock.Close(), w.root.Close(), w.repo.Close())
}

// withWriteLock runs fn holding the workspace's write lock: the in-process
// mutex (go-git and our caches are not goroutine-safe) and an exclusive flock
// on .blackboard/write.lock (other processes). The kernel releases the flock
// when a process dies, so a killed writer never blocks the next one; what it
// left half-done is finished first, from its journal.
func (w *Workspace) withWriteLock(fn func() error) error {
	_, err := w.holdWriteLock(unix.LOCK_EX, func() (bool, error) { return true, fn() })
	return err
}

// withFreeWriteLock is withWriteLock when no other process holds the lock:
// then fn runs and says whether it did the work (took). took is false when
// the lock was held elsewhere.
func (w *Workspace) withFreeWriteLock(fn func() (took bool, err error)) (took bool, err error) {
	return w.holdWriteLock(unix.LOCK_EX|unix.LOCK_NB, fn)
}

// holdWriteLock takes the write lock by flock(how), finishes what a killed
// writer left, runs the repairs and then fn. took is false, and fn not run,
// when how does not block and another process holds the lock.
func (w *Workspace) holdWriteLock(how int, fn func() (took bool, err error)) (took bool, err error) {
	return w.holdBareWriteLock(how, func() (bool, error) {
		if err := w.recover(); err != nil {
			return true, fmt.Errorf("finish an interrupted write: %w", err)
		}
		if err := w.repair(); err != nil {
			return true, err
		}
		return fn()
	})
}

// withBareWriteLock runs fn under the write lock without finishing or
// repairing anything first: for a decision that must not wait for work
// that may be what fails (on a full disk, say).
func (w *Workspace) withBareWriteLock(fn func() error) error {
	_, err := w.holdBareWriteLock(unix.LOCK_EX, func() (bool, error) { return true, fn() })
	return err
}

// holdBareWriteLock takes the write lock by flock(how) and runs fn.
func (w *Workspace) holdBareWriteLock(how int, fn func() (took bool, err error)) (took bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		err := unix.Flock(int(w.lock.Fd()), how)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		if !errors.Is(err, unix.EINTR) {
			return true, fmt.Errorf("lock %s: %w", note.LockFile, err)
		}
	}
	defer unix.Flock(int(w.lock.Fd()), unix.LOCK_UN)
	return fn()
}

// personSignature is the author of an edit a person made by hand: git's
// user.name, else "human".
func (w *Workspace) personSignature() gitver.Signature {
	name, email := w.repo.UserIdentity()
	if name == "" {
		name = "human"
	}
	if email == "" {
		email = name + "@blackboard.local"
	}
	return gitver.Signature{Name: name, Email: email, When: time.Now()}
}

func (w *Workspace) agentSignature(agent string) gitver.Signature {
	return gitver.Signature{Name: agent, Email: agent + "@blackboard.local", When: time.Now()}
}

// logf tells the operator what the workspace repaired on its own.
func (w *Workspace) logf(format string, args ...any) {
	if w.logFn != nil {
		w.logFn(format, args...)
	}
}
