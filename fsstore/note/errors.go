package note

import (
	"errors"
	"strconv"
	"unicode/utf8"
)

// The format's failures. fsstore's sentinels of the same names are these
// values, so errors.Is works whichever package a caller asks.
var (
	// ErrInvalid: the input is outside the format (an address outside the
	// grammar, a table whose rows do not fit its columns).
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge: the input is over one of the format's limits.
	ErrTooLarge = errors.New("too_large")
)

// AddressError is an address or topic outside the grammar. Its message quotes
// the grammar, so the reader can fix the input.
type AddressError struct {
	Op     string // "address" or "topic"
	Input  string // as given
	Reason string // what is wrong with it
}

func (e *AddressError) Error() string { return e.Op + " " + QuoteInput(e.Input) + ": " + e.Message() }

// Message is the error without the operation and the input: what was wrong,
// and the grammar.
func (e *AddressError) Message() string { return e.Reason + "; " + Grammar }

func (e *AddressError) Unwrap() error { return ErrInvalid }

// QuoteInput quotes caller input for an error message, bounded so that a
// hostile megabyte-long address does not come back in full.
func QuoteInput(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}

// Clip cuts caller input for echoing it back, at a rune boundary.
func Clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
