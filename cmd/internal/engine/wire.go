package engine

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Protocol is the version of what a relay and an engine say to each other:
// the hello and welcome lines, then MCP's JSON-RPC lines, with the write
// ids of tools.MetaWriteID, or a command's outcome. A change either side
// would misread raises it; a relay of another protocol does not use the
// engine.
const Protocol = 3

// Hello is the relay's first line: who connects.
type Hello struct {
	Protocol int `json:"protocol"`
	// Version is the relay's build, for the engine's log.
	Version string `json:"version"`
	// Agent and Token are the relay's BLACKBOARD_AGENT and BLACKBOARD_TOKEN:
	// the engine checks the token as a stdio server checks its own.
	Agent string `json:"agent,omitempty"`
	Token string `json:"token,omitempty"`
	// Dir is the relay's working directory, and SourceRoots the
	// directories source_path may read from as the relay was told
	// (absolute): an agent names files as its own process sees them.
	Dir         string   `json:"dir,omitempty"`
	SourceRoots []string `json:"source_roots,omitempty"`
	PID         int      `json:"pid"`
	// Command, when set, is a command line's verb and arguments for the
	// engine to run on its board (RunCommand), instead of an MCP session;
	// Stdin is what the command reads there.
	Command []string `json:"command,omitempty"`
	Stdin   []byte   `json:"stdin,omitempty"`
	// Page, when set, asks the engine to serve HTTP on the connection
	// (Host.Page): the board's page for people, or, when HTTP is set too,
	// serve --http's endpoint as HTTP describes it (the caller's encoding).
	Page bool            `json:"page,omitempty"`
	HTTP json.RawMessage `json:"http,omitempty"`
}

// Outcome is what a command the engine ran printed, and its exit code:
// the engine's last line to a command's connection.
type Outcome struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Code   int    `json:"code"`
}

// Welcome is the engine's answer to a hello: its build and process, or why
// it refuses.
type Welcome struct {
	Protocol int    `json:"protocol"`
	Version  string `json:"version"`
	PID      int    `json:"pid"`
	// Error refuses the relay, in words for its user (a wrong token).
	Error string `json:"error,omitempty"`
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one JSON line into v.
func readLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return err
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("a malformed line from the other side: %w", err)
	}
	return nil
}
