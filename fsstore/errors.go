package fsstore

import (
	"errors"
	"fmt"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
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

// errMsg is the reader-facing message of err, without the operation prefix.
func errMsg(err error) string {
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

func errorf(op, uri string, kind error, format string, args ...any) *Error {
	return &Error{Op: op, URI: uri, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// parseAddress reads s as an address of this workspace (note.ParseAddress);
// a malformed one is an *Error of kind ErrInvalid that quotes the grammar.
func (b *board) parseAddress(s string) (note.Address, error) {
	a, err := note.ParseAddress(s, b.name)
	return a, fromFormat(err)
}

// parseVersioned reads an address that may name one version of its note
// (note.ParseVersioned): version is 0 when it names none.
func (b *board) parseVersioned(s string) (a note.Address, version int, err error) {
	a, version, err = note.ParseVersioned(s, b.name)
	return a, version, fromFormat(err)
}

// parseTopic reads a topic or topic prefix (note.ParseTopic).
func (b *board) parseTopic(s string) ([]string, error) {
	segs, err := note.ParseTopic(s, b.name)
	return segs, fromFormat(err)
}

// fromFormat gives the format's address error the engine's one error type.
func fromFormat(err error) error {
	var ae *note.AddressError
	if errors.As(err, &ae) {
		return &Error{Op: ae.Op, URI: note.QuoteInput(ae.Input), Kind: ErrInvalid, Msg: ae.Message(), Err: ae}
	}
	return err
}

// because records the cause of e: errors.Is and errors.As see it, and the
// message keeps its own words.
func (e *Error) because(cause error) *Error {
	e.Err = cause
	return e
}
