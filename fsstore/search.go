package fsstore

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
)

// Search limits.
const (
	maxIndexedBody = 1 << 20 // the first MiB of content is searchable
	maxIdentifiers = 2000
	maxQueryTerms  = 32
	MaxSearchLimit = 100
)

// identifiers calls fn for each identifier in s: runs of letters and digits
// joined by single separators (deploy-v2.4.7-hotfix, ERR_CONN_RESET,
// cache_test.go, v2.4.7). A hand-written scanner: the equivalent regular
// expression took a tenth of a full rebuild.
func identifiers(s string, fn func(string)) {
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

// isIdentifier reports whether s is one identifier, separators included.
func isIdentifier(s string) bool {
	found := ""
	identifiers(s, func(id string) { found = id })
	return found == s
}

// squash turns an identifier into the one token the ids column holds:
// lower case, separators dropped.
func squash(id string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '.', '_', '/', ':':
			return -1
		}
		return r
	}, strings.ToLower(id))
}

// searchText is what full-text search indexes of a note.
func searchText(key string, f *noteFile, content string) index.Text {
	if len(content) > maxIndexedBody {
		content = content[:maxIndexedBody]
	}
	var fields []string
	c := f.front.Content
	for i := 0; i+1 < len(c); i += 2 {
		switch c[i].Value {
		case keyDigest, keyUpdated, keyBlob, keyBytes:
			continue
		}
		fields = append(fields, c[i].Value)
		collectScalars(c[i+1], &fields)
	}
	t := index.Text{
		Addr:   key,
		Digest: f.str(keyDigest),
		Body:   content,
		Fields: strings.Join(fields, " "),
	}
	seen := map[string]bool{}
	var ids []string
	for _, s := range []string{key, t.Digest, t.Fields, content} {
		identifiers(s, func(id string) {
			sq := squash(id)
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

// ftsTerm is one term of a user's query.
type ftsTerm struct {
	text   string
	phrase bool // quoted by the user
	prefix bool // ended in *
}

// parseQuery splits a user's query into terms: "quoted phrases", prefix*
// and words. Nothing a user types is an FTS5 syntax error: every term is
// passed to FTS5 as a quoted string, so AND, NEAR, -, * and stray quotes are
// searched as words or dropped.
func parseQuery(q string) []ftsTerm {
	// Control characters (a NUL ends an SQL string) separate words.
	q = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, q)
	var terms []ftsTerm
	for len(terms) < maxQueryTerms {
		q = strings.TrimLeft(q, " \t\r\n")
		if q == "" {
			break
		}
		if q[0] == '"' {
			if end := strings.IndexByte(q[1:], '"'); end >= 0 {
				if p := strings.TrimSpace(q[1 : end+1]); p != "" {
					terms = append(terms, ftsTerm{text: p, phrase: true})
				}
				q = q[end+2:]
				continue
			}
			q = q[1:] // an unbalanced quote is dropped
			continue
		}
		end := strings.IndexAny(q, " \t\r\n\"")
		if end < 0 {
			end = len(q)
		}
		word := q[:end]
		q = q[end:]
		t := ftsTerm{}
		if strings.HasSuffix(word, "*") {
			t.prefix = true
			word = strings.TrimRight(word, "*")
		}
		word = strings.Trim(word, "-*+^:(){}[],;!?'`")
		if !hasWordChar(word) {
			continue
		}
		t.text = word
		terms = append(terms, t)
	}
	return terms
}

func hasWordChar(s string) bool {
	for _, r := range s {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127 {
			return true
		}
	}
	return false
}

func ftsString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// ftsExpr renders one term. An identifier matches its squashed token in the
// ids column (the exact hit, weighted highest) or its parts as a phrase.
func (t ftsTerm) ftsExpr() string {
	if t.prefix {
		return ftsString(t.text) + " *"
	}
	expr := ftsString(t.text)
	if !t.phrase && isIdentifier(t.text) {
		return "(ids : " + ftsString(squash(t.text)) + " OR " + expr + ")"
	}
	return expr
}

// ftsQuery joins terms with op ("AND" or "OR").
func ftsQuery(terms []ftsTerm, op string) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = t.ftsExpr()
	}
	return strings.Join(parts, " "+op+" ")
}
