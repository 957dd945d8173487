package note

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Layout of the program's own directory in a workspace. No address names a
// path in it.
const (
	MetaDir       = ".blackboard"
	ConfigFile    = ".blackboard/config.yaml"
	GitignoreFile = ".blackboard/.gitignore"
	// AccessFile lists the agents, their token hashes and topics. It is
	// committed like any file of the board, so `git log` tells who was
	// given access when.
	AccessFile = ".blackboard/access.yaml"
	// The derived and runtime files, kept out of git by GitignoreText.
	IndexFile   = ".blackboard/index.db"
	LockFile    = ".blackboard/write.lock"
	JournalFile = ".blackboard/journal"
)

// GitignoreText is the content of GitignoreFile.
const GitignoreText = `# Derived and runtime files of blackboard-mcp: never the source of truth.
/index.db*
/write.lock
/journal
`

// DefaultBranch is the branch a new workspace repository starts on.
const DefaultBranch = "main"

// Content limits (SPEC sections 3 and 5).
const (
	// BlobThreshold is the content size above which content is stored out
	// of line, in a sibling blob file.
	BlobThreshold = 10 * 1024
	// MaxContentBytes is the largest body or table a note may hold.
	MaxContentBytes = 16 << 20
	// MaxDigestBytes bounds the one-line summary; DigestWarnChars is where
	// a digest stops being cheap and a warning says so.
	MaxDigestBytes  = 2000
	DigestWarnChars = 300
)

// The well-known "catch me up" note that init creates.
const (
	StateNote = "run/state/current"
	// InitAgent is the author of the init commit and of the state note.
	InitAgent = "blackboard-mcp"

	stateNoteDigest = "Board state: nothing recorded yet. Keep this note to what a newcomer needs first."
	stateNoteBody   = "# Current state\n\nThe team's catch-me-up note: what is going on, what is decided, where to look.\n"
)

// StateNoteFile is the state note as init writes it, updated at when.
func StateNoteFile(when time.Time) ([]byte, error) {
	f := New()
	for _, kv := range []struct {
		key   string
		value any
	}{
		{KeyDigest, stateNoteDigest}, {KeyKind, "state"}, {KeyAuthor, InitAgent},
		{KeyUpdated, when.UTC().Truncate(time.Second)},
	} {
		if err := f.Set(kv.key, kv.value); err != nil {
			return nil, err
		}
	}
	f.Body = []byte(stateNoteBody)
	return f.Render()
}

// InitMessage is the message of the init commit of workspace.
func InitMessage(workspace string) Message {
	return Message{Subject: "init workspace " + workspace, URI: URI(workspace, StateNote), Version: 1, Agent: InitAgent}
}

// Config is what ConfigFile says of a workspace.
type Config struct {
	// Workspace is the name full addresses carry.
	Workspace string
	// Branch is the board's branch: every write goes to it, whatever a
	// person has checked out. "" for a board made before it was recorded.
	Branch string
}

// ConfigText is the content of ConfigFile.
func ConfigText(c Config) string {
	return "# blackboard-mcp workspace settings\nworkspace: " + c.Workspace + "\nbranch: " + c.Branch + "\n"
}

// ParseConfig reads ConfigFile's content.
func ParseConfig(raw []byte) (Config, error) {
	var cfg struct {
		Workspace string `yaml:"workspace"`
		Branch    string `yaml:"branch"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	name, bad := FoldSegment(cfg.Workspace)
	if bad != "" {
		return Config{}, errors.New(ConfigFile + ": workspace name: " + bad)
	}
	if cfg.Branch != "" {
		if why := BranchProblem(cfg.Branch); why != "" {
			return Config{}, fmt.Errorf("%s: branch %q %s", ConfigFile, cfg.Branch, why)
		}
	}
	return Config{Workspace: name, Branch: cfg.Branch}, nil
}

// BranchProblem says why name cannot be the board's branch, or returns "".
// It accepts the plain names people give branches (main, trunk,
// team/board-1): letters, digits, '.', '_', '-' and '/' between parts, as
// git's own rules for ref names allow them.
func BranchProblem(name string) string {
	if name == "" || len(name) > 200 {
		return "must be 1 to 200 characters"
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part[0] == '.' || part[0] == '-' || strings.HasSuffix(part, ".lock") {
			return "has an empty part, or a part starting with . or - or ending in .lock"
		}
		for _, c := range []byte(part) {
			ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
			if !ok {
				return "may hold only letters, digits, '.', '_', '-' and '/'"
			}
		}
	}
	if strings.Contains(name, "..") || strings.HasSuffix(name, ".") {
		return "must not hold .. or end in ."
	}
	return ""
}

// EstimateTokens is the index's estimate of what reading n bytes of content
// costs a model: about four bytes a token for English prose and Markdown.
func EstimateTokens(n int) int {
	return (n + 3) / 4
}
