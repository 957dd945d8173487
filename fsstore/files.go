package fsstore

import (
	"io/fs"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/people"
)

// The engine's view of the work tree's files: what a recorded stat is
// worth, and the walk of the whole tree. Writing and placing the files is
// fsstore/internal/worktree's.

// readFile returns a workspace file's content and its stat, taken before
// the content was read (worktree.Files.ReadFile). ok is false when the
// file does not exist.
func (w *Workspace) readFile(p string) (content []byte, fi fs.FileInfo, ok bool, err error) {
	return w.files.ReadFile(p)
}

// TreeProblem is a path of the work tree that cannot be read as a note's
// file: what is wrong, and what to do.
type TreeProblem = people.TreeProblem

// EditReport is what committing people's edits did.
type EditReport = people.EditReport

// Edit is one note a person changed.
type Edit = people.Edit
