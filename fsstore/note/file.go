package note

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Front-matter limits. yaml.v3's duplicate-key check is quadratic (50,000
// keys took 5.8 s), so a person's front matter is bounded before it is parsed.
const (
	MaxFrontMatterBytes = 64 * 1024
	MaxFrontMatterDepth = 16
)

// Front-matter keys the program reads or writes. Any other key belongs to
// whoever wrote it and survives every rewrite unchanged.
const (
	KeyDigest     = "digest"
	KeyKind       = "kind"
	KeyAuthor     = "author"
	KeyUpdated    = "updated"
	KeyConfidence = "confidence"
	KeySources    = "sources"
	KeyLinks      = "links"
	KeyColumns    = "columns"
	KeyBlob       = "blob"
	KeyBytes      = "bytes"
	KeySummary    = "summary"
)

// IsOwnKey reports whether key is one the program reads or writes (or
// "version", which reads of a note give beside them): another tool's field
// of that name cannot be kept under it.
func IsOwnKey(key string) bool {
	switch key {
	case KeyDigest, KeyKind, KeyAuthor, KeyUpdated, KeyConfidence, KeySources, KeyLinks, KeyColumns, KeyBlob,
		KeyBytes, KeySummary, KeyClaimedBy, KeyClaimUntil, KeyDoneBy, KeyDoneAt, "version":
		return true
	}
	return false
}

// Relations are the link types a note's `links:` may hold.
var Relations = []string{"depends_on", "derived_from", "supersedes", "refines", "cites", "part_of", "contradicts"}

// ValidRelation reports whether rel is one of Relations.
func ValidRelation(rel string) bool { return slices.Contains(Relations, rel) }

var utf8BOM = []byte("\xef\xbb\xbf")

var errNoFrontMatter = errors.New("the file does not start with a front-matter block (a line ---)")

// File is a note as it is stored: a YAML front-matter mapping kept as a node
// tree (so unknown keys, comments, key order and a person's scalars such as
// 08 or yes survive) and the body that follows it.
type File struct {
	front *yaml.Node // a mapping node
	raw   []byte     // the front matter as read; written back unless changed
	dirty bool       // a field changed since parsing: raw is stale
	bom   bool       // the file started with a UTF-8 byte-order mark
	crlf  bool       // its lines end in CRLF: a rewrite keeps them so
	// Body is what follows the front matter: Markdown, or a table's TSV;
	// empty when the content is stored out of line.
	Body []byte
}

// New returns a note file with empty front matter and no body.
func New() *File {
	return &File{front: &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, dirty: true}
}

// Parse splits a note file into front matter and body. It refuses front
// matter that is too large, too deep, or uses anchors and aliases (a YAML
// bomb), before or while parsing, so a hostile note cannot stall a reader.
func Parse(data []byte) (*File, error) {
	// A byte-order mark some editors write first is kept, not taken for
	// text before the front matter.
	data, bom := bytes.CutPrefix(data, utf8BOM)
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	crlf := false
	if !ok {
		rest, ok = bytes.CutPrefix(data, []byte("---\r\n"))
		crlf = ok
	}
	if !ok {
		return nil, errNoFrontMatter
	}
	var raw, body []byte
	switch {
	case bytes.HasPrefix(rest, []byte("---\n")):
		raw, body = nil, rest[4:]
	case bytes.Equal(rest, []byte("---")):
		raw, body = nil, nil
	default:
		i := bytes.Index(rest, []byte("\n---\n"))
		j := bytes.Index(rest, []byte("\n---\r\n"))
		switch {
		case i >= 0 && (j < 0 || i < j):
			raw, body = rest[:i+1], rest[i+5:]
		case j >= 0:
			raw, body = rest[:j+1], rest[j+6:]
		case bytes.HasSuffix(rest, []byte("\n---")):
			raw, body = rest[:len(rest)-3], nil
		default:
			return nil, errors.New("the front matter has no closing --- line")
		}
	}
	if len(raw) > MaxFrontMatterBytes {
		return nil, fmt.Errorf("the front matter is %d bytes, over the limit of %d", len(raw), MaxFrontMatterBytes)
	}
	n := &File{raw: raw, Body: body, bom: bom, crlf: crlf}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("the front matter is not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	switch {
	case doc.Kind == 0: // empty front matter
		n.front = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	case doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode:
		n.front = doc.Content[0]
	default:
		return nil, errors.New("the front matter is not a mapping of keys to values")
	}
	if line, deep := firstBadNode(n.front, 0); line > 0 {
		if deep {
			return nil, fmt.Errorf("the front matter nests deeper than %d levels", MaxFrontMatterDepth)
		}
		return nil, errors.New("the front matter uses YAML anchors or aliases, which notes do not allow")
	}
	return n, nil
}

// FirstAliasOrDeep returns the line of the first anchor or alias under n, or
// of a node nested deeper than MaxFrontMatterDepth, or 0: what no YAML file
// of the board may hold (a few aliases can make a small file into a huge
// tree to walk, a YAML bomb).
func FirstAliasOrDeep(n *yaml.Node) int {
	line, _ := firstBadNode(n, 0)
	return line
}

// firstBadNode finds the first node, in document order, nested deeper than
// MaxFrontMatterDepth or being an anchor or alias. It returns its line (at
// least 1; 0 when there is none) and whether it is too deep.
func firstBadNode(n *yaml.Node, depth int) (line int, deep bool) {
	if depth > MaxFrontMatterDepth {
		return max(n.Line, 1), true
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return max(n.Line, 1), false
	}
	for _, c := range n.Content {
		if line, deep := firstBadNode(c, depth+1); line > 0 {
			return line, deep
		}
	}
	return 0, false
}

// DecodeFront decodes the whole front matter into v (a map, a struct).
func (n *File) DecodeFront(v any) error {
	if len(n.front.Content) == 0 {
		return nil
	}
	return n.front.Decode(v)
}

// Changed reports whether a field changed since the file was parsed.
func (n *File) Changed() bool { return n.dirty }

// Render returns the file's bytes. Unchanged front matter is written back
// byte for byte; changed front matter is re-encoded with two-space indent.
func (n *File) Render() ([]byte, error) {
	raw := n.raw
	if n.dirty || raw == nil {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if len(n.front.Content) > 0 {
			if err := enc.Encode(n.front); err != nil {
				return nil, err
			}
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		raw = b.Bytes()
		if n.crlf {
			raw = bytes.ReplaceAll(raw, []byte("\n"), []byte("\r\n"))
		}
	}
	delim := "---\n"
	if n.crlf {
		delim = "---\r\n"
	}
	out := make([]byte, 0, len(raw)+len(n.Body)+13)
	if n.bom {
		out = append(out, utf8BOM...)
	}
	out = append(out, delim...)
	out = append(out, raw...)
	out = append(out, delim...)
	out = append(out, n.Body...)
	return out, nil
}

// lookup returns the value node of key, or nil.
func (n *File) lookup(key string) *yaml.Node {
	c := n.front.Content
	for i := 0; i+1 < len(c); i += 2 {
		if c[i].Value == key {
			return c[i+1]
		}
	}
	return nil
}

// Str returns a scalar field's value, "" when absent or not a scalar.
func (n *File) Str(key string) string {
	if v := n.lookup(key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// Strs returns a sequence of scalars (sources, columns), or a lone scalar as
// a one-element list.
func (n *File) Strs(key string) []string {
	return scalarList(n.lookup(key))
}

// ContentWith is the note's content when it is stored out of line, in the
// blob file holding blob: that content, followed by any text a person typed
// into the note file's body (the program leaves it empty), so that no text
// of the note is out of a reader's reach. The next write moves it into the
// blob file.
func (n *File) ContentWith(blob []byte) string {
	if len(n.Body) == 0 {
		return string(blob)
	}
	sep := ""
	if len(blob) > 0 && blob[len(blob)-1] != '\n' {
		sep = "\n"
	}
	return string(blob) + sep + string(n.Body)
}

// Append adds text to the end of a note's content, on a line of its own,
// in the content's line endings: a note a person keeps with CRLF line
// endings gets CRLF lines.
func Append(content, text string) string {
	eol := "\n"
	if strings.Contains(content, "\r\n") {
		eol = "\r\n"
		text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
	}
	if content != "" && !strings.HasSuffix(content, "\n") {
		content += eol
	}
	return content + text
}

// IsTable reports whether the note is a table: it has columns.
func (n *File) IsTable() bool { return len(n.Strs(KeyColumns)) > 0 }

func scalarList(v *yaml.Node) []string {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if v.Value == "" {
			return nil
		}
		return []string{v.Value}
	case yaml.SequenceNode:
		out := make([]string, 0, len(v.Content))
		for _, c := range v.Content {
			if c.Kind == yaml.ScalarNode {
				out = append(out, c.Value)
			}
		}
		return out
	}
	return nil
}

// Links returns the links mapping as rel -> targets, and the relations in
// file order.
func (n *File) Links() (rels []string, targets map[string][]string) {
	v := n.lookup(KeyLinks)
	targets = map[string][]string{}
	if v == nil || v.Kind != yaml.MappingNode {
		return nil, targets
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		rel := v.Content[i].Value
		rels = append(rels, rel)
		targets[rel] = scalarList(v.Content[i+1])
	}
	return rels, targets
}

// SetLinks replaces the links mapping: rels in this order, each with its
// targets as a flow sequence.
func (n *File) SetLinks(rels []string, targets map[string][]string) error {
	links := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, r := range rels {
		var seq yaml.Node
		if err := seq.Encode(targets[r]); err != nil {
			return err
		}
		seq.Style = yaml.FlowStyle
		links.Content = append(links.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: r}, &seq)
	}
	n.setNode(KeyLinks, links)
	return nil
}

// Set replaces key's value with value (encoded by yaml), appending the key
// when absent. It marks the note changed only when the encoded value differs,
// so a person's formatting is kept when nothing really changed.
func (n *File) Set(key string, value any) error {
	var v yaml.Node
	if err := v.Encode(value); err != nil {
		return err
	}
	if v.Kind == yaml.SequenceNode {
		v.Style = yaml.FlowStyle
	}
	n.setNode(key, &v)
	return nil
}

func (n *File) setNode(key string, v *yaml.Node) {
	old := n.lookup(key)
	if old != nil && sameNode(old, v) {
		return
	}
	n.dirty = true
	if old != nil {
		*old = *v
		return
	}
	n.front.Content = append(n.front.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// Remove deletes key when present.
func (n *File) Remove(key string) {
	c := n.front.Content
	for i := 0; i+1 < len(c); i += 2 {
		if c[i].Value == key {
			n.front.Content = append(c[:i:i], c[i+2:]...) //nolint:gocritic // a new slice on purpose: c is not reused
			n.dirty = true
			return
		}
	}
}

// sameNode compares values, not presentation: a person's `[a, b]` and the
// program's block list of a and b are the same sources.
func sameNode(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.ScalarNode {
		return a.Value == b.Value && a.ShortTag() == b.ShortTag()
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// Confidence parses the confidence field; ok is false when absent or not a
// number.
func (n *File) Confidence() (float64, bool) {
	s := n.Str(KeyConfidence)
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// Contradicting is the path and text of a sibling note that keeps a
// version of key that lost (to the remote's, or a person's save that
// conflicts with the agents' writes): key-<commit>, made of raw, the
// losing file's text, linked `contradicts` to key. commit names the
// version it lost to. Unreadable front matter is kept as it is.
func Contradicting(key string, raw []byte, commit string) (string, []byte, error) {
	sibling := key + "-" + commit
	f, err := Parse(raw)
	if err != nil {
		return sibling + ".md", raw, nil
	}
	const contradicts = "contradicts"
	rels, targets := f.Links()
	if !slices.Contains(targets[contradicts], key) {
		if targets[contradicts] == nil {
			rels = append(rels, contradicts)
		}
		targets[contradicts] = append(targets[contradicts], key)
	}
	if err := f.SetLinks(rels, targets); err != nil {
		return "", nil, err
	}
	out, err := f.Render()
	return sibling + ".md", out, err
}
