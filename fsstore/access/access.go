// Package access owns who may read and write which topics of a board: the
// file .blackboard/access.yaml, its agents with their token hashes and topic
// scopes, and token checks. Without the file the board is open.
//
// Tokens are never stored, only their SHA-256; they are compared in constant
// time. The package knows topics and names, not notes or git.
package access

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Agent is one caller the access file knows.
type Agent struct {
	Name        string   `yaml:"name"`
	TokenSHA256 string   `yaml:"token_sha256"`
	Read        []string `yaml:"read"`
	Write       []string `yaml:"write"`
}

// File is the access file.
type File struct {
	Agents []Agent `yaml:"agents"`
}

// MaxFileBytes bounds the access file before it is parsed (the YAML
// parser's duplicate-key check is quadratic).
const MaxFileBytes = 1 << 20

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Load reads the access file at path; ok is false when there is none (open
// mode).
func Load(path string) (f *File, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	f, err = Parse(data)
	return f, true, err
}

// Parse reads an access file's content. A file with any problem Lint finds
// is refused, with the first of them; an empty file has no agents.
func Parse(data []byte) (*File, error) {
	if _, problems := Lint(data); len(problems) > 0 {
		return nil, fmt.Errorf("the access file is not valid: %s", problems[0])
	}
	var f File
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("the access file is not valid: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return &f, nil
}

// Check reports the first problem of the agents, as Parse would find it in
// the file Marshal writes.
func (f *File) Check() error {
	data, err := f.Marshal()
	if err != nil {
		return err
	}
	if _, problems := Lint(data); len(problems) > 0 {
		return errors.New(problems[0].Message)
	}
	return nil
}

// Problem is one thing wrong with an access file.
type Problem struct {
	Line    int // 1-based; 0 when it is about the whole file
	Message string
}

func (p Problem) String() string {
	if p.Line == 0 {
		return p.Message
	}
	return "line " + strconv.Itoa(p.Line) + ": " + p.Message
}

// Lint checks an access file's content and returns the number of agents it
// lists and every problem, each at its line, in the order of the lines: a top-level `agents:` list
// whose entries have a unique name, a unique token_sha256 (the hex SHA-256
// of the token, never the token), and read and write lists of topic
// prefixes or *, and nothing else. It reads the YAML as a node tree and
// refuses anchors and aliases rather than expanding them.
func Lint(data []byte) (agents int, problems []Problem) {
	bad := func(line int, format string, args ...any) {
		problems = append(problems, Problem{Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if len(data) > MaxFileBytes {
		bad(0, "the file is %d bytes, over the limit of %d", len(data), MaxFileBytes)
		return 0, problems
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		bad(0, "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return 0, problems
	}
	if doc.Kind == 0 {
		return 0, nil // empty: no agents
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		bad(0, "the file must be a mapping with an `agents:` list")
		return 0, problems
	}
	top := doc.Content[0]
	if line := note.FirstAliasOrDeep(top); line > 0 {
		// Refused rather than expanded: a few aliases can make a small file
		// into a huge list to walk (a YAML bomb).
		bad(line, "the file uses YAML anchors or aliases; write each list out")
		return 0, problems
	}
	for k := 0; k+1 < len(top.Content); k += 2 {
		if key := top.Content[k]; key.Value != "agents" {
			bad(key.Line, "unknown key `%s`: the file holds only `agents:`", key.Value)
		}
	}
	list := mappingValue(top, "agents")
	if list == nil || list.Kind != yaml.SequenceNode {
		bad(top.Line, "there is no top-level `agents:` list")
		return 0, problems
	}
	names := map[string]int{}
	tokens := map[string]string{}
	for i, a := range list.Content {
		label := fmt.Sprintf("agent %d", i+1)
		if a.Kind != yaml.MappingNode {
			bad(a.Line, "%s is not a mapping of name, token_sha256, read and write", label)
			continue
		}
		seen := map[string]bool{}
		for k := 0; k+1 < len(a.Content); k += 2 {
			key := a.Content[k]
			switch {
			case seen[key.Value]:
				bad(key.Line, "%s has `%s` twice", label, key.Value)
			case !slices.Contains(agentKeys, key.Value):
				bad(key.Line, "%s has an unknown key `%s`: an agent has %s", label, key.Value, strings.Join(agentKeys, ", "))
			}
			seen[key.Value] = true
		}
		name := mappingValue(a, "name")
		switch {
		case name == nil || name.Kind != yaml.ScalarNode || strings.TrimSpace(name.Value) == "":
			bad(a.Line, "%s has no name", label)
		case !nameRE.MatchString(name.Value):
			bad(name.Line, "%s: the name %q must be 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit (it becomes the commit author)", label, name.Value)
		default:
			label = fmt.Sprintf("agent %q", name.Value)
			if first, dup := names[name.Value]; dup {
				bad(name.Line, "%s appears twice (first at line %d): names must be unique", label, first)
			} else {
				names[name.Value] = name.Line
			}
		}
		tok := mappingValue(a, "token_sha256")
		switch {
		case tok == nil || tok.Kind != yaml.ScalarNode:
			bad(a.Line, "%s has no token_sha256 (the SHA-256 of its token, in hex)", label)
		case !isHex64(tok.Value):
			bad(tok.Line, "%s: token_sha256 must be 64 lower-case hexadecimal characters (the SHA-256 of the token, never the token itself); it has %d characters", label, len(tok.Value))
		default:
			if other, dup := tokens[tok.Value]; dup {
				bad(tok.Line, "%s has the same token_sha256 as %s: one token would be two agents", label, other)
			} else {
				tokens[tok.Value] = label
			}
		}
		for _, field := range []string{"read", "write"} {
			topics := mappingValue(a, field)
			if topics == nil || topics.Kind != yaml.SequenceNode {
				bad(a.Line, "%s has no `%s:` list (topic prefixes, or \"*\" for every topic; [] for none)", label, field)
				continue
			}
			for _, t := range topics.Content {
				if t.Kind != yaml.ScalarNode {
					bad(t.Line, "%s: %s holds something that is not a topic", label, field)
					continue
				}
				if t.Value == "*" {
					continue
				}
				if why := note.TopicPrefixProblem(t.Value); why != "" {
					bad(t.Line, "%s: %s topic %q %s", label, field, t.Value, why)
				}
			}
		}
	}
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
	return len(list.Content), problems
}

// agentKeys are the keys of an agent's entry, in the order Marshal writes.
var agentKeys = []string{"name", "token_sha256", "read", "write"}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Marshal renders the file with two-space indent.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# blackboard-mcp access: agents, their token hashes and topics.\n# Manage it with `blackboard-mcp token add|list|revoke`.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// HashToken is what the file stores of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh random token.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "bb_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Add creates an agent with a new token and returns the token, shown once.
func (f *File) Add(name string, read, write []string) (string, error) {
	for _, a := range f.Agents {
		if a.Name == name {
			return "", fmt.Errorf("agent %s already exists; revoke it first to issue a new token", name)
		}
	}
	token, err := NewToken()
	if err != nil {
		return "", err
	}
	f.Agents = append(f.Agents, Agent{Name: name, TokenSHA256: HashToken(token), Read: read, Write: write})
	if err := f.Check(); err != nil {
		f.Agents = f.Agents[:len(f.Agents)-1]
		return "", err
	}
	return token, nil
}

// Revoke removes an agent; false when there is none of that name.
func (f *File) Revoke(name string) bool {
	for i, a := range f.Agents {
		if a.Name == name {
			f.Agents = append(f.Agents[:i], f.Agents[i+1:]...)
			return true
		}
	}
	return false
}

// Authenticate finds the agent a token belongs to. Every agent's hash is
// compared, in constant time, whether or not an earlier one matched.
func (f *File) Authenticate(token string) (*Agent, bool) {
	if token == "" {
		return nil, false
	}
	want := []byte(HashToken(token))
	var found *Agent
	for i := range f.Agents {
		if subtle.ConstantTimeCompare(want, []byte(f.Agents[i].TokenSHA256)) == 1 {
			found = &f.Agents[i]
		}
	}
	return found, found != nil
}

// Scope is a set of topic prefixes; All admits every topic.
type Scope struct {
	All      bool
	Prefixes []string
}

// NewScope reads a list of topics, topic prefixes or "*".
func NewScope(list []string) Scope {
	var s Scope
	for _, t := range list {
		if t == "*" {
			return Scope{All: true}
		}
		s.Prefixes = append(s.Prefixes, strings.TrimSuffix(t, "/"))
	}
	return s
}

// Allows reports whether key (topic/key...) lies under the scope.
func (s Scope) Allows(key string) bool {
	if s.All {
		return true
	}
	for _, p := range s.Prefixes {
		if key == p || strings.HasPrefix(key, p+"/") {
			return true
		}
	}
	return false
}

// Reaches reports whether some key under prefix ("" for any) lies under
// the scope.
func (s Scope) Reaches(prefix string) bool {
	if s.All {
		return true
	}
	for _, p := range s.Prefixes {
		if prefix == "" || p == prefix || strings.HasPrefix(p, prefix+"/") || strings.HasPrefix(prefix, p+"/") {
			return true
		}
	}
	return false
}

// Narrow intersects the scope with a topic prefix ("" for all topics). It
// returns the prefixes a query may cover: nil for every topic, an empty
// list for none.
func (s Scope) Narrow(prefix string) []string {
	switch {
	case prefix == "" && s.All:
		return nil
	case prefix == "":
		return append([]string{}, s.Prefixes...)
	case s.Allows(prefix):
		return []string{prefix}
	}
	out := []string{}
	for _, p := range s.Prefixes {
		if strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	return out
}
