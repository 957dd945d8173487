package fsstore

import (
	"os"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
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
	root        *os.Root         // every note file is opened through it: no link leads out
	files       *worktree.Files  // writes and places the notes' files, through root
	logFn       func(format string, args ...any)
}

// personSignature is the author of an edit a person made by hand: git's
// user.name, else "human".
func (b *board) personSignature() gitver.Signature {
	name, email := b.repo.UserIdentity()
	if name == "" {
		name = "human"
	}
	if email == "" {
		email = name + "@blackboard.local"
	}
	return gitver.Signature{Name: name, Email: email, When: time.Now()}
}

func (b *board) agentSignature(agent string) gitver.Signature {
	return gitver.Signature{Name: agent, Email: agent + "@blackboard.local", When: time.Now()}
}

// logf tells the operator what the workspace repaired on its own.
func (b *board) logf(format string, args ...any) {
	if b.logFn != nil {
		b.logFn(format, args...)
	}
}
