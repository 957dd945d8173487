// Package fail is the engine's one error type and the closed set of
// failures callers branch on, shared by the parts of the engine
// (fsstore, people's edits, the write pipeline): fsstore gives them to
// its callers under the same names.
package fail

import (
	"errors"
	"fmt"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The closed set of failures callers branch on. Every error the store returns
// for a caller's mistake or a lost race wraps exactly one of them; anything
// else is an internal failure (a disk or repository problem).
var (
	// ErrInvalid: the request is malformed (an address outside the grammar,
	// a missing digest, two content forms at once). Nothing was written. It
	// is note.ErrInvalid: the format's rules and the engine's share it.
	ErrInvalid = note.ErrInvalid
	// ErrNotFound: no such note, or the caller may not see it (the two look
	// the same).
	ErrNotFound = errors.New("not_found")
	// ErrConflict: expect_version did not match the note's current version,
	// or the branch kept moving under the write. Nothing was written; the
	// error says what the note is now.
	ErrConflict = errors.New("conflict")
	// ErrForbidden: the caller may read the topic but not write it.
	ErrForbidden = errors.New("forbidden")
	// ErrTooLarge: content, a request or a note is over a documented limit.
	// It is note.ErrTooLarge.
	ErrTooLarge = note.ErrTooLarge
	// ErrNotWorkspace: the directory is not a workspace (it has no
	// .blackboard/config.yaml); `blackboard-mcp init` makes it one.
	ErrNotWorkspace = errors.New("not a workspace")
	// ErrUnavailable: the board cannot take the call now: its remote
	// cannot take writes (unreachable, or its history was rewritten;
	// nothing was written, reads still work), or the derived index is
	// being built (the message says how far; retry). It is
	// catchup.ErrUnavailable.
	ErrUnavailable = catchup.ErrUnavailable
)

// The failures the engine's parts tell each other, and its callers in
// their causes.
var (
	// ErrBranchMoved tells a write to start over: somebody outside the
	// program (a person's git commit) moved the branch between its check
	// and its commit.
	ErrBranchMoved = errors.New("branch moved during the write")
	// ErrRemoteMoved tells a write to start over because another clone's
	// push reached the remote first; the local branch has been brought to
	// it.
	ErrRemoteMoved = errors.New("the remote moved during the write")
	// ErrWorkTreeBusy means people's edits wait: the files are not the
	// branch's right now (a merge or a rebase in progress, another branch
	// checked out, a git command holding the index).
	ErrWorkTreeBusy = errors.New("the work tree is busy")
	// ErrWorkspaceReplaced is the cause of the error of a process whose
	// workspace directory was removed or replaced under it.
	ErrWorkspaceReplaced = errors.New("the workspace directory was removed or replaced")
	// ErrOutcomeUnknown means a write failed at a point where whether git
	// holds it cannot be told (a push that broke off, and the remote
	// cannot be asked): the writer reads the note before writing it
	// again. Every other failure of a write means git does not hold it.
	ErrOutcomeUnknown = errors.New("whether the write was committed cannot be told")
)

// Error is a failure of one operation on one address. It unwraps to one of
// the sentinels above (Kind), so errors.Is works, and to its cause (Err),
// when it has one; its message is written for the agent or person who must
// act on it.
type Error struct {
	Op   string // "update", "get", "append", "link", "log"; "" when the message says it all
	URI  string // the canonical address, when there is one
	Kind error  // one of the sentinels
	Msg  string // what was wrong and what to do
	Err  error  // the underlying cause, or nil
	// Conflict carries the note's current state for ErrConflict.
	Conflict *ConflictInfo
}

// ConflictInfo is what a losing writer needs to decide without another read.
type ConflictInfo struct {
	Version int
	Author  string
	Digest  string
}

func (e *Error) Error() string {
	switch {
	case e.Op == "":
		return e.Msg
	case e.URI == "":
		return fmt.Sprintf("%s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("%s %s: %s", e.Op, e.URI, e.Msg)
}

func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Because records the cause of e: errors.Is and errors.As see it, and the
// message keeps its own words.
func (e *Error) Because(cause error) *Error {
	e.Err = cause
	return e
}

// Errorf is an *Error of kind on op and uri, its message formatted.
func Errorf(op, uri string, kind error, format string, args ...any) *Error {
	return &Error{Op: op, URI: uri, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// Msg is the reader-facing message of err, without the operation prefix.
func Msg(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	var ae *note.AddressError
	if errors.As(err, &ae) {
		return ae.Message()
	}
	return err.Error()
}

// FromFormat gives the format's address error the engine's one error type.
func FromFormat(err error) error {
	var ae *note.AddressError
	if errors.As(err, &ae) {
		return &Error{Op: ae.Op, URI: note.QuoteInput(ae.Input), Kind: ErrInvalid, Msg: ae.Message(), Err: ae}
	}
	return err
}

// BusyWithGit refuses a tool write while a person is in the middle of a
// merge, a rebase or the like.
func BusyWithGit(wt gitver.WorkTree) error {
	return Errorf("write", "", ErrConflict,
		"the workspace is busy: %s (a person is working with git); write again once it is done", wt.Operation)
}

// Unfinished is a failure past a write's commit point (the disk full
// while git's index or the derived index was written, say): the commit is
// on the branch, so the write happened and is acknowledged; what did not
// finish is finished from the journal by the next write, or by the next
// process that opens the workspace.
type Unfinished struct {
	Commit gitver.Hash
	Err    error
}

func (e *Unfinished) Error() string {
	return fmt.Sprintf("commit %s is on the branch, but finishing the write failed: %v", e.Commit.Short(), e.Err)
}

func (e *Unfinished) Unwrap() error { return e.Err }
