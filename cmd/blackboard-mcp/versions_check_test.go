package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Every end-to-end test ends with the one version rule (SPEC section 4),
// checked on each board its servers served: the version every update_state
// and link_state was acknowledged at is the one git holds for that content,
// and the live index, `reindex` and a fresh clone agree note by note
// (fsstoretest.CheckVersionsAgree). The server starters register the check
// (checkVersionsAtEnd) before the cleanup that stops their server, so that,
// cleanups running last registered first, it runs once every server on the
// board has stopped. The MCP clients of the sessions record every
// acknowledged write (recordingWrites, and the raw server's await).
//
// A test that leaves its board broken on purpose (branch deleted, history
// rewritten, disk full, a damaged repository) says so with skipVersionCheck.

// board is a workspace the running tests' servers write, and what they were
// acknowledged.
type board struct {
	dir string

	mu     sync.Mutex
	writes []ackedWrite
	optOut string // why the test leaves this board out of the check
}

// ackedWrite is a tool write a server acknowledged, as its client saw it.
// The address is kept as the call gave it (short or full, any case) and
// resolved at the check, against the board's own name.
type ackedWrite struct {
	tool    string // update_state or link_state
	address string // the call's uri (update_state) or src (link_state)
	version int
	digest  string   // update_state's answer; a link answers none
	rel     string   // a link's relation
	dst     []string // a link's targets, as given
}

// boards are the boards tracked by the running tests, by absolute
// directory; a board leaves the map when its check has run.
var boards = struct {
	sync.Mutex
	byDir map[string]*board
}{byDir: map[string]*board{}}

func boardKey(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	return abs
}

func trackedBoard(dir string) *board {
	boards.Lock()
	defer boards.Unlock()
	return boards.byDir[boardKey(dir)]
}

// checkVersionsAtEnd makes the board at dir end t with the version check,
// once, however many servers t starts on it. A server starter calls it
// before it registers the cleanup that stops its server.
func checkVersionsAtEnd(t testing.TB, dir string) *board {
	t.Helper()
	key := boardKey(dir)
	boards.Lock()
	defer boards.Unlock()
	if b, ok := boards.byDir[key]; ok {
		return b
	}
	b := &board{dir: key}
	boards.byDir[key] = b
	t.Cleanup(func() {
		boards.Lock()
		delete(boards.byDir, key)
		boards.Unlock()
		engineStopped(t, dir)
		b.check(t)
	})
	return b
}

// skipVersionCheck leaves the board at dir out of the check t ends with;
// why says what the test broke on purpose.
func skipVersionCheck(t testing.TB, dir, why string) {
	t.Helper()
	b := checkVersionsAtEnd(t, dir)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.optOut = why
}

// record adds an acknowledged write to the board at dir, if a test tracks
// it. res is the tool's answer; errors and answers that are not a write's
// JSON are not acknowledgements.
func recordWrite(dir, tool string, args map[string]any, res toolResult) {
	if res.isError || (tool != "update_state" && tool != "link_state") {
		return
	}
	b := trackedBoard(dir)
	if b == nil {
		return
	}
	var ans struct {
		Version int    `json:"version"`
		Digest  string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(res.text), &ans); err != nil {
		return
	}
	w := ackedWrite{tool: tool, version: ans.Version, digest: ans.Digest}
	if tool == "update_state" {
		w.address, _ = args["uri"].(string)
	} else {
		w.address, _ = args["src"].(string)
		w.rel, _ = args["rel"].(string)
		switch d := args["dst"].(type) {
		case []string:
			w.dst = d
		case []any:
			for _, v := range d {
				s, _ := v.(string)
				w.dst = append(w.dst, s)
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes = append(b.writes, w)
}

// recordingWrites wraps a session's tool calls so that every write the
// server at dir acknowledges is recorded for the check.
func recordingWrites(dir string, call func(context.Context, string, map[string]any) (toolResult, error)) func(context.Context, string, map[string]any) (toolResult, error) {
	return func(ctx context.Context, name string, args map[string]any) (toolResult, error) {
		res, err := call(ctx, name, args)
		if err == nil {
			recordWrite(dir, name, args, res)
		}
		return res, err
	}
}

// check runs the version check on the board, with every write recorded.
func (b *board) check(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	why, writes := b.optOut, slices.Clone(b.writes)
	b.mu.Unlock()
	switch {
	case why != "":
		t.Logf("versions of %s not checked: %s", filepath.Base(b.dir), why)
		return
	case t.Skipped():
		return
	}
	if _, err := os.Stat(filepath.Join(b.dir, note.ConfigFile)); err != nil {
		return // no server made a board here (it refused to start)
	}
	fsstoretest.CheckVersionsAgree(t, b.dir, b.acks(t, writes))
}

// acks turns the recorded writes into the check's acknowledgements. A link
// answers no digest: its ack carries the digest git holds at the version it
// was acknowledged at (so the check holds it to that version existing), and
// the note at that version must hold the link. A version git does not hold
// keeps an empty digest, which the check reports.
func (b *board) acks(t testing.TB, writes []ackedWrite) []fsstoretest.Ack {
	t.Helper()
	if len(writes) == 0 {
		return nil
	}
	w, err := fsstore.Open(b.dir, fsstore.Options{NoSync: true, Agent: "check"})
	if err != nil {
		t.Errorf("check versions: open %s: %v", b.dir, err)
		return nil
	}
	defer w.Close()
	view := w.As(fsstore.OpenCaller("check"))
	name := w.Name()
	histories := map[string][]fsstore.LogEntry{}
	var acks []fsstoretest.Ack
	for _, wr := range writes {
		addr, err := note.ParseAddress(wr.address, name)
		if err != nil {
			t.Errorf("check versions: %s acknowledged %q, which is no address of %s: %v", wr.tool, wr.address, name, err)
			continue
		}
		ack := fsstoretest.Ack{URI: addr.String(), Version: wr.version, Digest: wr.digest}
		if wr.tool == "link_state" {
			h, ok := histories[ack.URI]
			if !ok {
				h, _ = view.Log(ack.URI, 1<<30) // no history: the check says so
				histories[ack.URI] = h
			}
			if i := slices.IndexFunc(h, func(e fsstore.LogEntry) bool { return e.Version == wr.version }); i >= 0 {
				ack.Digest = h[i].Digest
				b.checkLinkHeld(t, name, addr, h[i], wr)
			}
		}
		acks = append(acks, ack)
	}
	return acks
}

// checkLinkHeld fails t unless the note, as git holds it at the version a
// link was acknowledged at, links to every target under the relation.
func (b *board) checkLinkHeld(t testing.TB, name string, addr note.Address, e fsstore.LogEntry, wr ackedWrite) {
	t.Helper()
	if e.Deleted {
		t.Errorf("check versions: link %s %s acknowledged at v%d, where git holds the note deleted", addr, wr.rel, wr.version)
		return
	}
	raw := fixtures.GitOutput(t, b.dir, "show", e.Commit+":"+addr.NotePath())
	front, _, _ := splitFrontMatter(raw)
	var fm struct {
		Links map[string][]string `yaml:"links"`
	}
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		t.Errorf("check versions: %s at v%d: front matter: %v", addr, wr.version, err)
		return
	}
	for _, d := range wr.dst {
		dst, err := note.ParseAddress(d, name)
		if err != nil || !slices.Contains(fm.Links[wr.rel], dst.String()) {
			t.Errorf("check versions: link %s %s %s acknowledged at v%d, but git's v%d (%.12s) links %s to %q",
				addr, wr.rel, d, wr.version, wr.version, e.Commit, wr.rel, fm.Links[wr.rel])
		}
	}
}
