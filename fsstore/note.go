package fsstore

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Front-matter limits. yaml.v3's duplicate-key check is quadratic (50,000
// keys took 5.8 s), so a person's front matter is bounded before it is parsed.
const (
	MaxFrontMatterBytes = 64 * 1024
	maxFrontMatterDepth = 16
)

// BlobThreshold is the content size above which content is stored out of
// line, in a sibling blob file.
const BlobThreshold = 10 * 1024

// Front-matter keys the program reads or writes. Any other key belongs to
// whoever wrote it and survives every rewrite unchanged.
const (
	keyDigest     = "digest"
	keyKind       = "kind"
	keyAuthor     = "author"
	keyUpdated    = "updated"
	keyConfidence = "confidence"
	keySources    = "sources"
	keyLinks      = "links"
	keyColumns    = "columns"
	keyBlob       = "blob"
	keyBytes      = "bytes"
	keySummary    = "summary"
)

var errNoFrontMatter = errors.New("the file does not start with a front-matter block (a line ---)")

// noteFile is a note as it is stored: a YAML front-matter mapping kept as a
// node tree (so unknown keys, comments, key order and a person's scalars such
// as 08 or yes survive) and the body that follows it.
type noteFile struct {
	front *yaml.Node // a mapping node
	raw   []byte     // the front matter as read; written back unless changed
	dirty bool       // a field changed since parsing: raw is stale
	body  []byte
}

func newNoteFile() *noteFile {
	return &noteFile{front: &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}, dirty: true}
}

// parseNote splits a note file into front matter and body. It refuses front
// matter that is too large, too deep, or uses anchors and aliases (a YAML
// bomb), before or while parsing, so a hostile note cannot stall a reader.
func parseNote(data []byte) (*noteFile, error) {
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		rest, ok = bytes.CutPrefix(data, []byte("---\r\n"))
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
	n := &noteFile{raw: raw, body: body}
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
	if err := checkNode(n.front, 0); err != nil {
		return nil, err
	}
	return n, nil
}

func checkNode(n *yaml.Node, depth int) error {
	if depth > maxFrontMatterDepth {
		return fmt.Errorf("the front matter nests deeper than %d levels", maxFrontMatterDepth)
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return errors.New("the front matter uses YAML anchors or aliases, which notes do not allow")
	}
	for _, c := range n.Content {
		if err := checkNode(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// render returns the file's bytes. Unchanged front matter is written back
// byte for byte; changed front matter is re-encoded with two-space indent.
func (n *noteFile) render() ([]byte, error) {
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
	}
	out := make([]byte, 0, len(raw)+len(n.body)+8)
	out = append(out, "---\n"...)
	out = append(out, raw...)
	out = append(out, "---\n"...)
	out = append(out, n.body...)
	return out, nil
}

// lookup returns the value node of key, or nil.
func (n *noteFile) lookup(key string) *yaml.Node {
	c := n.front.Content
	for i := 0; i+1 < len(c); i += 2 {
		if c[i].Value == key {
			return c[i+1]
		}
	}
	return nil
}

// str returns a scalar field's value, "" when absent or not a scalar.
func (n *noteFile) str(key string) string {
	if v := n.lookup(key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// strs returns a sequence of scalars (sources, columns), or a lone scalar as a
// one-element list.
func (n *noteFile) strs(key string) []string {
	return scalarList(n.lookup(key))
}

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

// links returns the links mapping as rel -> targets, in file order.
func (n *noteFile) links() (rels []string, targets map[string][]string) {
	v := n.lookup(keyLinks)
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

// set replaces key's value with value (encoded by yaml), appending the key
// when absent. It marks the note dirty only when the encoded value differs, so
// a person's formatting is kept when nothing really changed.
func (n *noteFile) set(key string, value any) error {
	var v yaml.Node
	if err := v.Encode(value); err != nil {
		return err
	}
	if v.Kind == yaml.SequenceNode {
		v.Style = yaml.FlowStyle
	}
	old := n.lookup(key)
	if old != nil && sameNode(old, &v) {
		return nil
	}
	n.dirty = true
	if old != nil {
		*old = v
		return nil
	}
	n.front.Content = append(n.front.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &v)
	return nil
}

// setNode is set for a value already built as a node (links).
func (n *noteFile) setNode(key string, v *yaml.Node) {
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

// remove deletes key when present.
func (n *noteFile) remove(key string) {
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

// confidence parses the confidence field; ok is false when absent or not a
// number.
func (n *noteFile) confidence() (float64, bool) {
	s := n.str(keyConfidence)
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
