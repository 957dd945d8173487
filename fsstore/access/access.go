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
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
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

const maxFileBytes = 1 << 20

var (
	nameRE  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	topicRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$`)
	hashRE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

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

// Parse reads and checks an access file's content.
func Parse(data []byte) (*File, error) {
	if len(data) > maxFileBytes {
		return nil, errors.New("the access file is over 1 MiB")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the access file is not valid: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if hasAnchors(&doc) {
		return nil, errors.New("the access file uses YAML anchors or aliases, which it does not allow")
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("the access file is not valid: %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return &f, f.Check()
}

func hasAnchors(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode {
		return true
	}
	for _, c := range n.Content {
		if hasAnchors(c) {
			return true
		}
	}
	return false
}

// Check reports the first problem of the file's agents.
func (f *File) Check() error {
	seen := map[string]bool{}
	for i, a := range f.Agents {
		switch {
		case !nameRE.MatchString(a.Name):
			return fmt.Errorf("agent %d: name %q must be 1-64 letters, digits, '.', '_' or '-'", i+1, a.Name)
		case seen[a.Name]:
			return fmt.Errorf("agent %s appears twice", a.Name)
		case !hashRE.MatchString(a.TokenSHA256):
			return fmt.Errorf("agent %s: token_sha256 must be 64 lower-case hex digits (use `blackboard-mcp token add`)", a.Name)
		}
		seen[a.Name] = true
		for _, list := range [][]string{a.Read, a.Write} {
			for _, t := range list {
				if t != "*" && !topicRE.MatchString(t) {
					return fmt.Errorf("agent %s: %q is not a topic, topic prefix or *", a.Name, t)
				}
			}
		}
	}
	return nil
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
