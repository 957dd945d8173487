package fsstore

import (
	"errors"
	"fmt"
)

// The closed set of failures callers branch on. Every error the store returns
// for a caller's mistake or a lost race wraps exactly one of them; anything
// else is an internal failure (a disk or repository problem).
var (
	// ErrInvalid: the request is malformed (an address outside the grammar,
	// a missing digest, two content forms at once). Nothing was written.
	ErrInvalid = errors.New("invalid")
	// ErrNotFound: no such note, or the caller may not see it (the two look
	// the same).
	ErrNotFound = errors.New("not_found")
	// ErrConflict: expect_version did not match the note's current version.
	// Nothing was written; the error says what the note is now.
	ErrConflict = errors.New("conflict")
	// ErrForbidden: the caller may read the topic but not write it.
	ErrForbidden = errors.New("forbidden")
	// ErrTooLarge: content, a request or a note is over a documented limit.
	ErrTooLarge = errors.New("too_large")
)

// Error is a failure of one operation on one address. It unwraps to one of
// the sentinels above (Kind), so errors.Is works, and its message is written
// for the agent or person who must act on it.
type Error struct {
	Op   string // "update", "get", "append", "link", "log"
	URI  string // the canonical address, when there is one
	Kind error  // one of the sentinels
	Msg  string // what was wrong and what to do
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
	if e.URI == "" {
		return fmt.Sprintf("%s: %s", e.Op, e.Msg)
	}
	return fmt.Sprintf("%s %s: %s", e.Op, e.URI, e.Msg)
}

func (e *Error) Unwrap() error { return e.Kind }

// errMsg is the reader-facing message of err, without the operation prefix.
func errMsg(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}

func errorf(op, uri string, kind error, format string, args ...any) *Error {
	return &Error{Op: op, URI: uri, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
