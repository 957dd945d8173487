package note

import (
	"errors"
	"fmt"
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

// ConfigText is the content of ConfigFile for a workspace named name.
func ConfigText(name string) string {
	return "# blackboard-mcp workspace settings\nworkspace: " + name + "\n"
}

// ParseConfig reads ConfigFile's content and returns the workspace name.
func ParseConfig(raw []byte) (string, error) {
	var cfg struct {
		Workspace string `yaml:"workspace"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return "", fmt.Errorf("%s: %w", ConfigFile, err)
	}
	name, bad := FoldSegment(cfg.Workspace)
	if bad != "" {
		return "", errors.New(ConfigFile + ": workspace name: " + bad)
	}
	return name, nil
}
