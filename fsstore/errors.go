package fsstore

import (
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
)

// The closed set of failures callers branch on (fsstore/internal/fail,
// where the engine's parts share them). Every error the store returns for
// a caller's mistake or a lost race wraps exactly one of them; anything
// else is an internal failure (a disk or repository problem).
var (
	// ErrInvalid: the request is malformed (an address outside the grammar,
	// a missing digest, two content forms at once). Nothing was written.
	ErrInvalid = fail.ErrInvalid
	// ErrNotFound: no such note, or the caller may not see it (the two look
	// the same).
	ErrNotFound = fail.ErrNotFound
	// ErrConflict: expect_version did not match the note's current version,
	// or the branch kept moving under the write. Nothing was written; the
	// error says what the note is now.
	ErrConflict = fail.ErrConflict
	// ErrForbidden: the caller may read the topic but not write it.
	ErrForbidden = fail.ErrForbidden
	// ErrTooLarge: content, a request or a note is over a documented limit.
	ErrTooLarge = fail.ErrTooLarge
	// ErrNotWorkspace: the directory is not a workspace (it has no
	// .blackboard/config.yaml); `blackboard-mcp init` makes it one.
	ErrNotWorkspace = fail.ErrNotWorkspace
	// ErrUnavailable: the board cannot take the call now: its remote cannot
	// take writes, or the derived index is being built (the message says
	// how far; retry).
	ErrUnavailable = fail.ErrUnavailable
	// ErrWorkTreeBusy means people's edits wait: the files are not the
	// branch's right now (a merge or a rebase in progress, another branch
	// checked out, a git command holding the index).
	ErrWorkTreeBusy = fail.ErrWorkTreeBusy
	// ErrWorkspaceReplaced is the cause of the error of a process whose
	// workspace directory was removed or replaced under it.
	ErrWorkspaceReplaced = fail.ErrWorkspaceReplaced
	// ErrOutcomeUnknown means a write failed at a point where whether git
	// holds it cannot be told: the writer reads the note before writing it
	// again. Every other failure of a write means git does not hold it.
	ErrOutcomeUnknown = fail.ErrOutcomeUnknown
)

// Error is a failure of one operation on one address (fail.Error).
type Error = fail.Error

// ConflictInfo is what a losing writer needs to decide without another read.
type ConflictInfo = fail.ConflictInfo

// errBranchMoved tells a write to start over: a person's git commit moved
// the branch under it (fail.ErrBranchMoved).
var errBranchMoved = fail.ErrBranchMoved

var (
	errMsg     = fail.Msg
	errorf     = fail.Errorf
	fromFormat = fail.FromFormat
)
