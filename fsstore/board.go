package fsstore

import (
	"os"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// board is what every part of the engine shares: the workspace's
// directory and name, its git repository, the derived index and the part
// that catches it up, and the notes' files. Each part holds it; it is set
// at Open.
type board struct {
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
}

// stillOpen checks that the workspace's directory is still the one this
// process opened. A directory removed, or replaced by another at the same
// path (restored from a backup, cloned again) while a server runs, leaves
// the server's files (opened through root) in the old one and its git
// (named by path) in the new one: compared with the new branch, every
// note looked deleted by hand, and was committed so. Before anything
// compares the work tree with git or moves the branch, the two must be
// one directory.
func (b *board) stillOpen() error {
	opened, err := b.root.Stat(".")
	if err == nil {
		var now os.FileInfo
		if now, err = os.Stat(b.dir); err == nil && os.SameFile(opened, now) {
			return nil
		}
	}
	return errorf("write", "", ErrUnavailable,
		"the workspace directory %s was removed or replaced while this process had it open; nothing is written or compared: restart the server", b.dir).
		Because(ErrWorkspaceReplaced)
}

// ownMove starts the reflog message of every move of the branch the program
// makes.
const ownMove = history.OwnMove

func (b *board) agentSignature(agent string) gitver.Signature {
	return gitver.Signature{Name: agent, Email: agent + "@blackboard.local", When: time.Now()}
}

// logf tells the operator what the workspace repaired on its own.
func (b *board) logf(format string, args ...any) {
	if b.logFn != nil {
		b.logFn(format, args...)
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
