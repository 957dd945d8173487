package fsstore

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Address limits (SPEC section 2).
const (
	MaxSegmentBytes = 64
	MinSegments     = 2 // topic and key
	MaxSegments     = 8
	// maxAddressBytes bounds the input before it is split: the longest valid
	// address is well under it.
	maxAddressBytes = 1024
	scheme          = "bb://"
)

// Grammar is quoted by every address error, so the reader can fix the input.
const Grammar = "an address is bb://<workspace>/<topic>/<key...> or <topic>/<key...>: 2 to 8 segments, " +
	"each [a-z0-9][a-z0-9._-]* and at most 64 bytes, not ending in .md, .blob, .tsv or .lock, and not a device name such as con or nul"

// Address names one note: a topic and a key of one or more segments in one
// workspace. The zero value is not valid; get one from ParseAddress.
type Address struct {
	Workspace string
	Segments  []string // topic first; lower case; at least MinSegments
}

// Topic is the first segment, the unit of access.
func (a Address) Topic() string { return a.Segments[0] }

// Short is the address without scheme and workspace: "topic/key".
func (a Address) Short() string { return strings.Join(a.Segments, "/") }

// String is the canonical form every response carries.
func (a Address) String() string { return scheme + a.Workspace + "/" + a.Short() }

// NotePath is the note file, slash-separated, relative to the workspace root.
func (a Address) NotePath() string { return a.Short() + ".md" }

// BlobPath is the sibling file holding content stored out of line; ext is
// "md" for a body and "tsv" for a table.
func (a Address) BlobPath(ext string) string { return a.Short() + ".blob." + ext }

// ParseAddress reads a full or short address for the workspace named
// workspace. Upper-case ASCII is folded to lower case; everything else outside
// the grammar is an ErrInvalid that quotes the grammar. No valid address names
// a path outside the workspace, a hidden path (.git, .blackboard), or a
// program file (blob, lock, table, temp).
func ParseAddress(s, workspace string) (Address, error) {
	bad := func(why string) (Address, error) {
		return Address{}, errorf("address", quoteInput(s), ErrInvalid, "%s; %s", why, Grammar)
	}
	if s == "" {
		return bad("empty address")
	}
	if len(s) > maxAddressBytes {
		return bad("address too long")
	}
	rest := s
	if len(s) >= len(scheme) && strings.EqualFold(s[:len(scheme)], scheme) {
		rest = s[len(scheme):]
		ws, tail, ok := strings.Cut(rest, "/")
		if !ok {
			return bad("no topic after the workspace")
		}
		ws, err := foldSegment(ws)
		if err != "" {
			return bad("workspace name: " + err)
		}
		if ws != workspace {
			return bad("this server serves the workspace " + workspace + ", not " + ws)
		}
		rest = tail
	} else if strings.Contains(s, "://") {
		return bad("unknown scheme")
	}
	parts := strings.Split(rest, "/")
	if len(parts) < MinSegments {
		return bad("a topic and a key are needed")
	}
	if len(parts) > MaxSegments {
		return bad("too many segments")
	}
	a := Address{Workspace: workspace, Segments: make([]string, len(parts))}
	for i, p := range parts {
		seg, err := foldSegment(p)
		if err != "" {
			return bad(err)
		}
		a.Segments[i] = seg
	}
	return a, nil
}

// ParseTopic reads a topic or topic prefix for listing ("research",
// "research/cache"): the same segments as an address, at least one.
func ParseTopic(s, workspace string) ([]string, error) {
	s = strings.TrimSuffix(s, "/")
	if s == "" {
		return nil, nil
	}
	if a, err := ParseAddress(s+"/x", workspace); err == nil {
		return a.Segments[:len(a.Segments)-1], nil
	}
	return nil, errorf("topic", quoteInput(s), ErrInvalid, "not a topic; %s", Grammar)
}

// foldSegment lower-cases ASCII letters and checks one segment, returning
// the reason when it is invalid. Only ASCII is folded: Unicode case folding
// maps some non-ASCII letters (the Kelvin sign) onto ASCII ones.
func foldSegment(p string) (string, string) {
	if p == "" {
		return "", "empty segment (a doubled or leading or trailing /)"
	}
	if len(p) > MaxSegmentBytes {
		return "", "segment longer than 64 bytes"
	}
	b := []byte(p)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		case c == '.' || c == '_' || c == '-':
			return "", "segment " + quoteInput(p) + " must start with a letter or digit"
		default:
			return "", "segment " + quoteInput(p) + " has a character outside [a-z0-9._-]"
		}
	}
	seg := string(b)
	for _, suffix := range []string{".md", ".blob", ".tsv", ".lock", ".tmp"} {
		if strings.HasSuffix(seg, suffix) {
			return "", "segment " + quoteInput(p) + " ends in " + suffix + ", which the board reserves"
		}
	}
	if isDeviceName(seg) {
		return "", "segment " + quoteInput(p) + " is a reserved device name"
	}
	return seg, ""
}

// isDeviceName reports names Windows reserves for devices, with or without an
// extension, so a workspace stays usable when cloned there.
func isDeviceName(seg string) bool {
	base, _, _ := strings.Cut(seg, ".")
	switch base {
	case "con", "prn", "aux", "nul", "conin$", "conout$":
		return true
	}
	if len(base) == 4 && (strings.HasPrefix(base, "com") || strings.HasPrefix(base, "lpt")) {
		return base[3] >= '0' && base[3] <= '9'
	}
	return false
}

// clip cuts caller input for echoing it back, at a rune boundary.
func clip(s string) string {
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

// quoteInput quotes caller input for an error message, bounded so that a
// hostile megabyte-long address does not come back in full.
func quoteInput(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
