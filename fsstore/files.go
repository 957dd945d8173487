package fsstore

import (
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/people"
)

// The engine's view of the work tree's files: what a recorded stat is
// worth, and the walk of the whole tree. Writing and placing the files is
// fsstore/internal/worktree's.

// TreeProblem is a path of the work tree that cannot be read as a note's
// file: what is wrong, and what to do.
type TreeProblem = people.TreeProblem

// EditReport is what committing people's edits did.
type EditReport = people.EditReport

// Edit is one note a person changed.
type Edit = people.Edit
