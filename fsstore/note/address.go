package note

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Address limits (SPEC section 2).
const (
	MaxSegmentBytes = 64
	MinSegments     = 2 // topic and key
	MaxSegments     = 8
	// maxAddressBytes bounds the input before it is split: the longest valid
	// address is well under it.
	maxAddressBytes = 1024
	// Scheme starts every full address.
	Scheme = "bb://"
)

// Grammar is quoted by every address error, so the reader can fix the input.
const Grammar = "an address is bb://<workspace>/<topic>/<key...> or <topic>/<key...>: 2 to 8 segments, " +
	"each [a-z0-9][a-z0-9._-]* and at most 64 bytes, not ending in .md, .blob, .tsv or .lock, and not a device name such as con or nul; " +
	"a read may add @N for version N"

// Address names one note: a topic and a key of one or more segments in one
// workspace. The zero value is not valid; get one from ParseAddress.
type Address struct {
	Workspace string
	Segments  []string // topic first; lower case; at least MinSegments
}

// Topic is the first segment, the unit of access.
func (a Address) Topic() string { return a.Segments[0] }

// Short is the address without scheme and workspace: "topic/key", the key
// every index and access check uses.
func (a Address) Short() string { return strings.Join(a.Segments, "/") }

// String is the canonical form every response carries.
func (a Address) String() string { return URI(a.Workspace, a.Short()) }

// NotePath is the note file, slash-separated, relative to the workspace root.
func (a Address) NotePath() string { return a.Short() + ".md" }

// BlobPath is the sibling file holding content stored out of line; ext is
// "md" for a body and "tsv" for a table.
func (a Address) BlobPath(ext string) string { return a.Short() + ".blob." + ext }

// BlobName is the blob file's name as the note's `blob:` field gives it:
// the last segment, relative to the note's own directory.
func (a Address) BlobName(ext string) string { return a.Segments[len(a.Segments)-1] + ".blob." + ext }

// URI is the canonical address of the note key (topic/key...) in workspace.
func URI(workspace, key string) string { return Scheme + workspace + "/" + key }

// ParseAddress reads a full or short address for the workspace named
// workspace. Upper-case ASCII is folded to lower case; everything else outside
// the grammar is an *AddressError (ErrInvalid) that quotes the grammar. No
// valid address names a path outside the workspace, a hidden path (.git,
// .blackboard), or a program file (blob, lock, table, temp).
func ParseAddress(s, workspace string) (Address, error) {
	bad := func(why string) (Address, error) {
		return Address{}, &AddressError{Op: "address", Input: s, Reason: why}
	}
	if s == "" {
		return bad("empty address")
	}
	if len(s) > maxAddressBytes {
		return bad("address too long")
	}
	rest := s
	if len(s) >= len(Scheme) && strings.EqualFold(s[:len(Scheme)], Scheme) {
		rest = s[len(Scheme):]
		ws, tail, ok := strings.Cut(rest, "/")
		if !ok {
			return bad("no topic after the workspace")
		}
		ws, err := FoldSegment(ws)
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
	if strings.Contains(rest, VersionMark) {
		return bad("@N names a past version of a note, which is only read")
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
		seg, err := FoldSegment(p)
		if err != "" {
			return bad(err)
		}
		a.Segments[i] = seg
	}
	return a, nil
}

// VersionMark joins an address and the number of one version of its note:
// research/cache/latency@3 is the note as its third version left it.
const VersionMark = "@"

// maxVersionDigits bounds the number after VersionMark.
const maxVersionDigits = 9

// ParseVersioned reads an address that may name one version of its note
// (topic/key@N, N from 1): the address, and N, 0 when none is named. Only
// reads take one; everything else takes ParseAddress, which refuses @N.
func ParseVersioned(s, workspace string) (Address, int, error) {
	at := strings.LastIndex(s, VersionMark)
	if at < 0 {
		a, err := ParseAddress(s, workspace)
		return a, 0, err
	}
	a, err := ParseAddress(s[:at], workspace)
	if err != nil {
		return a, 0, err
	}
	digits := s[at+len(VersionMark):]
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || len(digits) > maxVersionDigits || digits[0] < '1' || digits[0] > '9' {
		return Address{}, 0, &AddressError{Op: "address", Input: s, Reason: "a version after @ is a whole number from 1"}
	}
	return a, n, nil
}

// VersionedURI is the canonical address of one version of a note.
func VersionedURI(a Address, version int) string {
	return a.String() + VersionMark + strconv.Itoa(version)
}

// ParseTopic reads a topic or topic prefix for listing ("research",
// "research/cache"): the same segments as an address, at least one, folded
// to lower case. An empty s is no topic: every topic.
func ParseTopic(s, workspace string) ([]string, error) {
	s = strings.TrimSuffix(s, "/")
	if s == "" {
		return nil, nil
	}
	if a, err := ParseAddress(s+"/x", workspace); err == nil {
		return a.Segments[:len(a.Segments)-1], nil
	}
	return nil, &AddressError{Op: "topic", Input: s, Reason: "not a topic"}
}

// TopicPrefixProblem says why s is not a topic or topic prefix in the
// grammar's canonical (lower-case) form, as the access file must name them,
// or returns "". A trailing / is allowed.
func TopicPrefixProblem(s string) string {
	segs := strings.Split(strings.TrimSuffix(s, "/"), "/")
	if len(segs) > MaxSegments-1 {
		return fmt.Sprintf("has more than %d segments", MaxSegments-1)
	}
	for _, seg := range segs {
		folded, bad := FoldSegment(seg)
		if bad != "" {
			return "is not a topic prefix: " + bad
		}
		if folded != seg {
			return "must be lower case"
		}
	}
	return ""
}

// reservedSuffixes end no segment: the board's own file names end so.
var reservedSuffixes = []string{".md", ".blob", ".tsv", ".lock", ".tmp"}

// FoldSegment lower-cases ASCII letters and checks one segment, returning
// the reason when it is invalid. Only ASCII is folded: Unicode case folding
// maps some non-ASCII letters (the Kelvin sign) onto ASCII ones.
func FoldSegment(p string) (folded, problem string) {
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
			return "", "segment " + QuoteInput(p) + " must start with a letter or digit"
		default:
			return "", "segment " + QuoteInput(p) + " has a character outside [a-z0-9._-]"
		}
	}
	seg := string(b)
	for _, suffix := range reservedSuffixes {
		if strings.HasSuffix(seg, suffix) {
			return "", "segment " + QuoteInput(p) + " ends in " + suffix + ", which the board reserves"
		}
	}
	if isDeviceName(seg) {
		return "", "segment " + QuoteInput(p) + " is a reserved device name"
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

// WorkspaceNameFor turns a directory's name into a valid workspace name:
// what init names a workspace when it is not told.
func WorkspaceNameFor(dir string) string {
	b := []byte(strings.ToLower(filepath.Base(dir)))
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '-'
		}
	}
	name := strings.Trim(string(b), "-_.")
	if len(name) > MaxSegmentBytes {
		name = name[:MaxSegmentBytes]
	}
	if _, bad := FoldSegment(name); bad != "" {
		return "board"
	}
	return name
}

// KeyOf maps a repository path to the note it belongs to: "t/a/b.md",
// "t/a/b.blob.md" and "t/a/b.blob.tsv" all belong to "t/a/b". Paths that no
// address can name (README.md at the root, .blackboard/, upper case, spaces)
// belong to no note.
func KeyOf(p string) (string, bool) {
	key, ok := strings.CutSuffix(p, ".blob.md")
	if !ok {
		key, ok = strings.CutSuffix(p, ".blob.tsv")
	}
	if !ok {
		key, ok = strings.CutSuffix(p, ".md")
	}
	if !ok {
		return "", false
	}
	segs := strings.Count(key, "/") + 1
	if segs < MinSegments || segs > MaxSegments {
		return "", false
	}
	for rest := key; ; {
		seg, more, found := strings.Cut(rest, "/")
		if !isCanonicalSegment(seg) {
			return "", false
		}
		if !found {
			return key, true
		}
		rest = more
	}
}

// isCanonicalSegment reports whether FoldSegment takes seg and leaves it as
// it is, without allocating: KeyOf asks it of every path of a tree, and a
// board's tree holds a hundred thousand.
func isCanonicalSegment(seg string) bool {
	if seg == "" || len(seg) > MaxSegmentBytes {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	for _, suffix := range reservedSuffixes {
		if strings.HasSuffix(seg, suffix) {
			return false
		}
	}
	return !isDeviceName(seg)
}

// Files are the files a note may have: its own and its two blob files.
func Files(key string) []string {
	return append([]string{key + ".md"}, BlobFiles(key)...)
}

// BlobFiles are the two files that may hold a note's content out of line:
// a body's, and a table's.
func BlobFiles(key string) []string {
	return []string{key + ".blob.md", key + ".blob.tsv"}
}

// IsNoteFile reports whether p is a note's own .md file (not its blob).
func IsNoteFile(p string) bool {
	_, ok := KeyOf(p)
	return ok && !isBlobName(p)
}

// IsBlobFile reports whether p is a note's blob file.
func IsBlobFile(p string) bool {
	_, ok := KeyOf(p)
	return ok && isBlobName(p)
}

func isBlobName(p string) bool {
	return strings.HasSuffix(p, ".blob.md") || strings.HasSuffix(p, ".blob.tsv")
}

// SiblingBlobPath returns the path of the blob file a note's `blob:` field
// names, or "" when the name is not one of the note's own two blob names: a
// person's `blob: ../../secret` never leads elsewhere.
func SiblingBlobPath(key, blob string) string {
	base := key[strings.LastIndexByte(key, '/')+1:]
	for _, ext := range []string{"md", "tsv"} {
		if blob == base+".blob."+ext {
			return key + ".blob." + ext
		}
	}
	return ""
}
