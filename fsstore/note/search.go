package note

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// What search indexes of one note is bounded.
const (
	maxIndexedBody = 1 << 20 // the first MiB of content is searchable
	maxIdentifiers = 2000
	shortBody      = 2000 // the most bytes of a body a digest may repeat (digestRepeatsBody)
)

// SearchText is what full-text search indexes of a note, column by column.
type SearchText struct {
	Addr   string // the short address
	Digest string
	Body   string // the content, inline or out of line, cut at 1 MiB
	Fields string // front-matter keys and scalar values, but the digest and the program's bookkeeping
	IDs    string // the note's identifiers, squashed (see Squash), space-separated
	// Echo holds the digest instead of Digest when it only repeats most of
	// a short body (digestRepeatsBody): a column of its own, weighed as the
	// body is, so that a phrase never spans the digest and the body.
	Echo string
}

// TextOf is what search indexes of the note key with front matter f and
// content (its body, or its blob file's content).
func TextOf(key string, f *File, content string) SearchText {
	if len(content) > maxIndexedBody {
		content = content[:maxIndexedBody]
	}
	var fields []string
	c := f.front.Content
	for i := 0; i+1 < len(c); i += 2 {
		switch c[i].Value {
		case KeyDigest, KeyUpdated, KeyBlob, KeyBytes:
			continue
		}
		fields = append(fields, c[i].Value)
		collectScalars(c[i+1], &fields)
	}
	digest := f.Str(KeyDigest)
	t := SearchText{
		Addr:   key,
		Digest: digest,
		Body:   content,
		Fields: strings.Join(fields, " "),
	}
	if digestRepeatsBody(t.Digest, content) {
		t.Echo, t.Digest = t.Digest, ""
	}
	seen := map[string]bool{}
	var ids []string
	for _, s := range []string{key, digest, t.Fields, content} {
		Identifiers(s, func(id string) {
			sq := Squash(id)
			if !seen[sq] && len(ids) < maxIdentifiers {
				seen[sq] = true
				ids = append(ids, sq)
			}
		})
	}
	t.IDs = strings.Join(ids, " ")
	return t
}

func collectScalars(n *yaml.Node, out *[]string) {
	if n.Kind == yaml.ScalarNode {
		*out = append(*out, n.Value)
		return
	}
	for _, c := range n.Content {
		collectScalars(c, out)
	}
}

// Identifiers calls fn for each identifier in s: runs of letters and digits
// joined by single separators (deploy-v2.4.7-hotfix, ERR_CONN_RESET,
// cache_test.go, v2.4.7). A hand-written scanner: the equivalent regular
// expression took a tenth of a full rebuild.
func Identifiers(s string, fn func(string)) {
	start, end, seps, pending := -1, 0, 0, false
	finish := func() {
		if pending {
			seps-- // a trailing separator joins nothing
		}
		if start >= 0 && seps > 0 {
			fn(s[start:end])
		}
		start, seps, pending = -1, 0, false
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
			end, pending = i+utf8.RuneLen(r), false
		case isIdentSep(r) && start >= 0 && !pending:
			seps, pending = seps+1, true
		default:
			finish()
		}
	}
	finish()
}

func isIdentSep(r rune) bool {
	return r == '-' || r == '.' || r == '_' || r == '/' || r == ':'
}

// IsIdentifier reports whether s is one identifier, separators included.
func IsIdentifier(s string) bool {
	found := ""
	Identifiers(s, func(id string) { found = id })
	return found == s
}

// Squash turns an identifier into the one token the search index holds for
// it: lower case, separators dropped.
func Squash(id string) string {
	return strings.Map(func(r rune) rune {
		if isIdentSep(r) {
			return -1
		}
		return r
	}, strings.ToLower(id))
}

// digestRepeatsBody reports whether a digest is most of a short body and
// says nothing the body does not: the opening words of a chat turn, a line
// cut short. Weighted above the body, it would count those words twice over
// the rest; such a digest is searched as the body is.
func digestRepeatsBody(digest, body string) bool {
	if len(body) > shortBody {
		return false
	}
	dw, bw := LowerWords(digest), LowerWords(body)
	if len(dw) == 0 || len(dw)*3 < len(bw) {
		return false // a title over a document says what the document is about
	}
	in := make(map[string]bool, len(bw))
	for _, w := range bw {
		in[w] = true
	}
	missing := 0
	for _, w := range dw {
		if !in[w] {
			missing++
		}
	}
	return missing*10 <= len(dw)
}

// LowerWords are the runs of letters and digits of s, in lower case.
func LowerWords(s string) []string {
	var words []string
	eachLowerWord(s, func(w string) bool {
		words = append(words, w)
		return true
	})
	return words
}
