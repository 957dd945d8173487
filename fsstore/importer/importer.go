package importer

import (
	"crypto/sha1" //nolint:gosec // names a note whose name has no letters to slug; not security.
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Note is one note to write.
type Note struct {
	Key    string // topic/key...
	Digest string
	Body   string
	Kind   string
	Fields map[string]any
	Links  map[string][]string
	From   string // what it came from: an entity's name, a file's path
}

// Plan is what an import will write, and what it could not map.
type Plan struct {
	Notes []Note
	// Unmapped says, one line each, what the board has no place for
	// (beyond what the notes' fields keep).
	Unmapped []string
}

// Report is what an import did.
type Report struct {
	Written, Unchanged, Links int
	Failed                    []string // "<from>: <why>"
}

// Progress hears of each note written: done of total.
type Progress func(done, total int, n Note)

// Apply writes the plan's notes through v, each as one commit.
func Apply(v *fsstore.View, p *Plan, progress Progress) Report {
	var r Report
	for i, n := range p.Notes {
		body := n.Body
		res, err := v.Update(fsstore.UpdateRequest{URI: n.Key, Digest: n.Digest, Body: &body, Kind: n.Kind,
			Fields: n.Fields, Links: n.Links})
		switch {
		case err != nil:
			r.Failed = append(r.Failed, n.From+": "+err.Error())
		case res.Unchanged:
			r.Unchanged++
		default:
			r.Written++
		}
		if err == nil {
			for _, t := range n.Links {
				r.Links += len(t)
			}
		}
		if progress != nil {
			progress(i+1, len(p.Notes), n)
		}
	}
	return r
}

// keys hands out addresses: each name becomes a valid segment, and two
// names that would share a key are told apart, in the order they come.
type keys struct {
	used map[string]string // key -> what took it
}

// key returns the address for from, built of segs, each slugged.
func (k *keys) key(from string, segs ...string) string {
	if k.used == nil {
		k.used = map[string]string{}
	}
	var parts []string
	for _, s := range segs {
		parts = append(parts, Slug(s))
	}
	if len(parts) > note.MaxSegments {
		// Deep folders: the last segments are joined into one.
		parts = append(parts[:note.MaxSegments-1], Slug(strings.Join(parts[note.MaxSegments-1:], "-")))
	}
	head, last := strings.Join(parts[:len(parts)-1], "/"), parts[len(parts)-1]
	key := head + "/" + last
	for n := 2; ; n++ {
		if owner, taken := k.used[key]; !taken || owner == from {
			break
		}
		suffix := "-" + strconv.Itoa(n)
		key = head + "/" + strings.TrimRight(last[:min(len(last), note.MaxSegmentBytes-len(suffix))], "._-") + suffix
	}
	k.used[key] = from
	return key
}

// Slug makes s one address segment: lower case, runs of other characters
// as one "-", at most 64 bytes, never a name the grammar refuses; a name
// with nothing to keep becomes "n-" and a short hash of it.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_'
		if !ok {
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteRune(r)
	}
	out := strings.Trim(b.String(), "._-")
	if len(out) > note.MaxSegmentBytes {
		out = strings.TrimRight(out[:note.MaxSegmentBytes], "._-")
	}
	if out == "" {
		sum := sha1.Sum([]byte(s)) //nolint:gosec // see the import.
		return "n-" + hex.EncodeToString(sum[:4])
	}
	if _, err := note.ParseAddress("t/"+out, "w"); err != nil {
		// A reserved ending (.md, .lock...) or a device name (con, nul).
		out = strings.TrimRight(out[:min(len(out), note.MaxSegmentBytes-5)], "._-") + "-note"
	}
	return out
}

// digestOf makes text a digest: one line, within the board's limit. The
// second result is the whole text when it had to be cut.
func digestOf(text string) (digest, cut string) {
	d := strings.Join(strings.Fields(text), " ")
	if len(d) <= note.DigestWarnChars {
		return d, ""
	}
	end := note.DigestWarnChars
	for end > 0 && !utf8.RuneStart(d[end]) {
		end--
	}
	return strings.TrimSpace(d[:end]) + "…", text
}

// kindOf is name as a note's kind (one word), or "" when it cannot be one.
func kindOf(name string) string {
	k := Slug(name)
	if strings.HasPrefix(k, "n-") && !strings.HasPrefix(strings.ToLower(name), "n-") {
		return ""
	}
	return k
}
