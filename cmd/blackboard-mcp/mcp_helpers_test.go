package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer"
	"go.yaml.in/yaml/v3"
)

// The end-to-end tests start the real binary (`serve`) on a fresh workspace
// and drive it over stdio with real MCP clients: mcp-go's, the official Go
// SDK's, and raw JSON-RPC lines. Every workspace is named "acme" (its
// directory's name), so full addresses are bb://acme/....

// protocolVersion is what today's hosts negotiate; both clients pin it.
const protocolVersion = "2025-06-18"

// callTimeout bounds one tool call: a hung server fails the test instead of
// the whole run.
const callTimeout = 30 * time.Second

// toolNames are the five tools, sorted.
var toolNames = []string{"get_state", "link_state", "list_keys", "search_keys", "update_state"}

// mcpEnv is the environment of a server process: no user or system git
// configuration, a fixed person for commits a person makes (the same as
// fixtures.PersonEnv, the environment of the tests' own git commands), and
// the agent name the server writes as. Variables
// of ours inherited from the caller (a token, a workspace, no-sync) are
// dropped so that each test says what it means.
func mcpEnv(agent string) []string {
	var env []string
	for _, kv := range os.Environ() {
		profile := strings.HasPrefix(kv, "BLACKBOARD_ENGINE_CPUPROFILE=") || strings.HasPrefix(kv, "BLACKBOARD_ENGINE_MEMPROFILE=")
		if !profile && (strings.HasPrefix(kv, "BLACKBOARD_") || strings.HasPrefix(kv, "GIT_")) {
			// A test's own settings only; an engine's profile, a
			// maintainer's look at a benchmark, passes.
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Ada Person", "GIT_AUTHOR_EMAIL=ada@example.com",
		"GIT_COMMITTER_NAME=Ada Person", "GIT_COMMITTER_EMAIL=ada@example.com",
	)
	if agent != "" {
		env = append(env, "BLACKBOARD_AGENT="+agent)
	}
	// The board's engine leaves soon after a test's last agent, so that
	// the test ends with no process of its own left (engineStopped).
	return append(env, "BLACKBOARD_ENGINE_IDLE="+testEngineIdle.String())
}

// testEngineIdle is how long a test's engine stays once its last agent
// left.
const testEngineIdle = 100 * time.Millisecond

// engineStopped waits until the engine of the board at dir has stopped,
// as it does once its last agent left; one still running after 20 s is an
// error, and is killed.
func engineStopped(t testing.TB, dir string) {
	t.Helper()
	place, err := engine.Locate(dir)
	if err != nil {
		t.Errorf("locate the board's engine: %v", err)
		return
	}
	// The engine that holds the board, and any other started for it that
	// still waits for the board's lock (a relay started it as the last one
	// died): it would take the lock, and write into the board, after the
	// test.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		others := engineProcesses(place.Board)
		if !place.Running() && len(others) == 0 {
			return
		}
		if time.Now().After(deadline) {
			pid := place.Engine()
			t.Errorf("the engine of %s (pid %d; engine processes %v) still runs 20 s after its last agent left; its log:\n%s", dir, pid, others, tail(readFileString(place.Log)))
			for _, p := range append(others, pid) {
				if p > 0 {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
			return
		}
	}
}

// engineProcesses are the pids of the engine processes started for the
// board at dir (`blackboard-mcp engine --dir DIR`).
func engineProcesses(board string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte("\x00engine\x00--dir\x00"+board+"\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// readFileString is the file at p, "" when it cannot be read.
func readFileString(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// newWorkspaceDir returns a path for a workspace named acme that does not
// exist yet (serve initializes it), inside a directory of its own: that
// directory is the workspace's parent, the default source root.
func newWorkspaceDir(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "acme")
}

// serveArgs is the command line of a test server: no fsync, as the suite
// must be fast (the bench turns durability back on).
func serveArgs(dir string, extra ...string) []string {
	return append([]string{"serve", "--dir", dir, "--no-sync"}, extra...)
}

// lockedBuffer collects a server's stderr (its log) from the goroutine
// exec starts, for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// toolResult is a tool call's outcome as the model would see it.
type toolResult struct {
	text    string
	isError bool
}

// session is one server process and the MCP client driving it, seen from
// one test: subtests take their own view with on(t), so that a failure
// stops the subtest that saw it.
type session struct {
	t testing.TB
	*conn
}

// on returns the session as seen from t.
func (s *session) on(t testing.TB) *session { return &session{t: t, conn: s.conn} }

// conn is the server process and its client.
type conn struct {
	dir    string
	client string
	stderr *lockedBuffer
	// callTool runs one tools/call; err is a protocol or transport failure.
	callTool func(ctx context.Context, name string, args map[string]any) (toolResult, error)
	// listTools returns tools/list as JSON objects, one per tool.
	listTools func(ctx context.Context) ([]map[string]any, error)
	// stop ends the session as a host does (closes the server's stdin) and
	// returns the server's exit error.
	stop func() error
	// kill ends the server process at once (kill -9), as a crash would; set
	// by the starters that own the process.
	kill   func() error
	once   sync.Once
	result error
}

// close ends the session once and returns how the server exited.
func (s *conn) close() error {
	s.once.Do(func() { s.result = s.stop() })
	return s.result
}

// closeClean ends the session and fails the test unless the server exited
// with status 0.
func (s *session) closeClean() {
	s.t.Helper()
	if err := s.close(); err != nil {
		s.t.Errorf("%s session: server did not exit cleanly: %v\nserver log:\n%s", s.client, err, s.stderr.String())
	}
}

// serverOpts say how a test starts `serve`. Every starter takes them:
// startServer (a stdio server driven by an MCP client), startRaw (a stdio
// server driven by raw JSON-RPC lines), startHTTP (`serve --http`) and
// connectGoSDK (a stdio server and a Go SDK client of the test's own).
// Only dir is required; the zero value of every other field is what most
// tests want.
type serverOpts struct {
	dir     string     // the workspace; serve initializes it if it does not exist
	agent   string     // BLACKBOARD_AGENT; "" leaves it unset
	token   string     // BLACKBOARD_TOKEN; "" leaves it unset
	flags   []string   // serve's flags, after --dir and --no-sync
	env     []string   // more of serve's environment
	durable bool       // leave out --no-sync: the server fsyncs, as a benchmark measures it
	client  clientKind // startServer's client: mcp-go's (the zero value) or the Go SDK's
}

// clientKind is the MCP client startServer drives a stdio server with.
type clientKind int

const (
	mcpGo clientKind = iota // mcp-go's stdio client
	goSDK                   // the official Go SDK's client over its CommandTransport
)

// launch registers the version check of o.dir at the end of t (once per
// board, however many servers t starts on it; before the starter registers
// the cleanup that stops its server) and returns serve's command line and
// environment. Every starter calls it first.
func (o serverOpts) launch(t testing.TB) (args, env []string) {
	t.Helper()
	checkVersionsAtEnd(t, o.dir)
	args = []string{"serve", "--dir", o.dir}
	if !o.durable {
		args = append(args, "--no-sync")
	}
	args = append(args, o.flags...)
	env = append(mcpEnv(o.agent), o.env...)
	if o.token != "" {
		env = append(env, "BLACKBOARD_TOKEN="+o.token)
	}
	return args, env
}

// startServer starts `serve` as o says and connects o.client to it over
// stdio, initialized with the pinned protocol version; the session ends
// with the test.
func startServer(t testing.TB, o serverOpts) *session {
	t.Helper()
	if o.client == goSDK {
		return startGoSDKClient(t, o)
	}
	return startMCPGoClient(t, o)
}

// startMCPGo is startServer with mcp-go's client for agent on dir, and
// serve's flags after --no-sync: what most tests start.
func startMCPGo(t testing.TB, dir, agent string, flags ...string) *session {
	t.Helper()
	return startServer(t, serverOpts{dir: dir, agent: agent, flags: flags})
}

// startMCPGoClient is startServer's mcp-go half.
func startMCPGoClient(t testing.TB, o serverOpts) *session {
	t.Helper()
	args, env := o.launch(t)
	dir := o.dir
	stderr := &lockedBuffer{}
	var proc *exec.Cmd // set by Start, which runs the command function before it returns
	tr := transport.NewStdioWithOptions(testBinary, nil, args,
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = env
			cmd.Stderr = stderr
			proc = cmd
			return cmd, nil
		}))
	c := client.NewClient(tr, client.WithProtocolVersion(protocolVersion))
	// The process lives until the session is closed, not until a call's
	// deadline: Start's context is the process's.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("start mcp-go client: %v", err)
	}
	s := &session{t: t, conn: &conn{dir: dir, client: "mcp-go", stderr: stderr}}
	s.stop = c.Close
	s.kill = func() error { return proc.Process.Kill() }
	t.Cleanup(func() { _ = s.close() })

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-mcp-go", Version: "1.0.0"}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("mcp-go initialize: %v\nserver log:\n%s", err, stderr.String())
	}
	if res.ProtocolVersion != protocolVersion || res.ServerInfo.Name != "blackboard-mcp" || res.Capabilities.Tools == nil {
		t.Fatalf("initialize: protocol %q, server %q, tools capability %v; want %q, blackboard-mcp, set",
			res.ProtocolVersion, res.ServerInfo.Name, res.Capabilities.Tools, protocolVersion)
	}
	if !strings.Contains(res.Instructions, "run/state/current") {
		t.Errorf("initialize instructions do not point at run/state/current: %q", res.Instructions)
	}

	bindMCPGo(s, c)
	return s
}

// bindMCPGo makes mcp-go's client c the tool calls of session s.
func bindMCPGo(s *session, c *client.Client) {
	s.callTool = func(ctx context.Context, name string, args map[string]any) (toolResult, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return toolResult{}, err
		}
		if len(res.Content) != 1 {
			return toolResult{}, errors.New("result has " + strconv.Itoa(len(res.Content)) + " content blocks, want 1")
		}
		tc, ok := mcp.AsTextContent(res.Content[0])
		if !ok {
			return toolResult{}, errors.New("result content is not text")
		}
		if res.StructuredContent != nil {
			return toolResult{}, errors.New("result has structured content; tools have no output schema")
		}
		return toolResult{text: tc.Text, isError: res.IsError}, nil
	}
	s.callTool = recordingWrites(s.dir, s.callTool)
	s.listTools = func(ctx context.Context) ([]map[string]any, error) {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return nil, err
		}
		return toJSONObjects(res.Tools)
	}
}

// startGoSDKClient is startServer's Go SDK half.
func startGoSDKClient(t testing.TB, o serverOpts) *session {
	t.Helper()
	stderr := &lockedBuffer{}
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e-go-sdk", Version: "1.0.0"}, nil)
	cs, cmd := connectGoSDK(t, o, c, stderr)
	s := &session{t: t, conn: &conn{dir: o.dir, client: "go-sdk", stderr: stderr}}
	s.stop = func() error {
		err := cs.Close()
		if cmd.ProcessState == nil {
			return errors.Join(err, errors.New("the server process was not waited for"))
		}
		if !cmd.ProcessState.Success() {
			return errors.Join(err, errors.New("server exited with "+cmd.ProcessState.String()))
		}
		return err
	}
	t.Cleanup(func() { _ = s.close() })
	init := cs.InitializeResult()
	if init.ProtocolVersion != protocolVersion || init.ServerInfo == nil || init.ServerInfo.Name != "blackboard-mcp" {
		t.Fatalf("go-sdk initialize: %+v; want protocol %q from blackboard-mcp", init, protocolVersion)
	}
	bindGoSDK(s, cs)
	return s
}

// connectGoSDK starts `serve` as o says, its log into stderr, and connects
// the Go SDK's client c to it through the SDK's CommandTransport, pinned to
// the same protocol version. The caller closes the session (which ends the
// server) in a cleanup registered after this returns; cmd is the server
// process.
func connectGoSDK(t testing.TB, o serverOpts, c *sdk.Client, stderr *lockedBuffer) (cs *sdk.ClientSession, cmd *exec.Cmd) {
	t.Helper()
	args, env := o.launch(t)
	cmd = exec.Command(testBinary, args...)
	cmd.Env = env
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("go-sdk connect: %v\nserver log:\n%s", err, stderr.String())
	}
	return cs, cmd
}

// bindGoSDK makes the official Go SDK's client session cs the tool calls of
// session s.
func bindGoSDK(s *session, cs *sdk.ClientSession) {
	s.callTool = func(ctx context.Context, name string, args map[string]any) (toolResult, error) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return toolResult{}, err
		}
		if len(res.Content) != 1 {
			return toolResult{}, errors.New("result has " + strconv.Itoa(len(res.Content)) + " content blocks, want 1")
		}
		tc, ok := res.Content[0].(*sdk.TextContent)
		if !ok {
			return toolResult{}, errors.New("result content is not text")
		}
		if res.StructuredContent != nil {
			return toolResult{}, errors.New("result has structured content; tools have no output schema")
		}
		return toolResult{text: tc.Text, isError: res.IsError}, nil
	}
	s.callTool = recordingWrites(s.dir, s.callTool)
	s.listTools = func(ctx context.Context) ([]map[string]any, error) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			return nil, err
		}
		return toJSONObjects(res.Tools)
	}
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// toJSONObjects re-encodes a client's typed tool list as plain JSON objects,
// so the two clients' views compare field by field.
func toJSONObjects(v any) ([]map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	return out, json.Unmarshal(b, &out)
}

func contextWithTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

// call runs a tool and returns its result; a protocol failure is fatal, and
// an internal error is always a failure (SPEC: internal details stay in the
// server's log).
func (s *session) call(name string, args map[string]any) toolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := s.callTool(ctx, name, args)
	if err != nil {
		s.t.Fatalf("%s %s(%s): %v\nserver log:\n%s", s.client, name, jsonString(args), err, s.stderr.String())
	}
	if res.isError && strings.HasPrefix(res.text, "internal:") {
		s.t.Errorf("%s(%s) is an internal error: %s\nserver log:\n%s", name, jsonString(args), res.text, s.stderr.String())
	}
	return res
}

// ok runs a tool that must succeed and returns its text.
func (s *session) ok(name string, args map[string]any) string {
	s.t.Helper()
	res := s.call(name, args)
	if res.isError {
		s.t.Fatalf("%s(%s) failed: %s", name, jsonString(args), res.text)
	}
	return res.text
}

// fail runs a tool that must fail with code and returns the message.
func (s *session) fail(name string, args map[string]any, code string) string {
	s.t.Helper()
	res := s.call(name, args)
	if !res.isError {
		s.t.Errorf("%s(%s) = %s; want isError with %q", name, jsonString(args), res.text, code+": ")
		return ""
	}
	if !strings.HasPrefix(res.text, code+": ") {
		s.t.Errorf("%s(%s) error = %q; want it to start with %q", name, jsonString(args), res.text, code+": ")
	}
	return res.text
}

// writeResult is update_state's and link_state's answer.
type writeResult struct {
	Version  int      `json:"version"`
	Digest   string   `json:"digest"`
	Summary  string   `json:"summary"`
	Warnings []string `json:"warnings"`
}

// write runs update_state, which must succeed.
func (s *session) write(args map[string]any) writeResult {
	s.t.Helper()
	return decodeWrite(s.t, s.ok("update_state", args))
}

// link runs link_state, which must succeed.
func (s *session) link(src, rel string, dst ...string) writeResult {
	s.t.Helper()
	return decodeWrite(s.t, s.ok("link_state", map[string]any{"src": src, "rel": rel, "dst": dst}))
}

func decodeWrite(t testing.TB, text string) writeResult {
	t.Helper()
	var w writeResult
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		t.Fatalf("write result %q: %v", text, err)
	}
	return w
}

// item is one item of a read's envelope; raw keeps its keys, in order.
type item struct {
	URI            string              `json:"uri"`
	Version        int                 `json:"version"`
	Digest         string              `json:"digest"`
	EstTokens      int                 `json:"est_tokens"`
	Error          string              `json:"error"`
	Message        string              `json:"message"`
	Commit         string              `json:"commit"`
	Problem        string              `json:"problem"`
	Body           string              `json:"body"`
	KeptChars      int                 `json:"kept_chars"`
	TotalChars     int                 `json:"total_chars"`
	Score          float64             `json:"score"`
	Kind           string              `json:"kind"`
	Author         string              `json:"author"`
	Updated        string              `json:"updated"`
	Confidence     *float64            `json:"confidence"`
	Sources        []string            `json:"sources"`
	Links          map[string][]string `json:"links"`
	Columns        []string            `json:"columns"`
	SupersededBy   []string            `json:"superseded_by"`
	ContradictedBy []string            `json:"contradicted_by"`
	keys           []string
}

// envelope is the answer of every read (SPEC section 5).
type envelope struct {
	Items       []item   `json:"items"`
	Spent       int      `json:"spent_tokens"`
	Truncated   bool     `json:"truncated"`
	Omitted     int      `json:"omitted"`
	OmittedURIs []string `json:"omitted_uris"`
	Cursor      int      `json:"cursor"`
}

func (e envelope) uris() []string {
	out := make([]string, len(e.Items))
	for i, it := range e.Items {
		out[i] = it.URI
	}
	return out
}

// o200k counts tokens as the server promises to: o200k_base.
var o200k = sync.OnceValue(func() tokenizer.Codec {
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		panic(err)
	}
	return c
})

func countTokens(t testing.TB, s string) int {
	t.Helper()
	n, err := o200k().Count(s)
	if err != nil {
		t.Fatalf("count tokens: %v", err)
	}
	return n
}

// envelopeKeys are the keys of a JSON envelope, in order.
var envelopeKeys = []string{"items", "spent_tokens", "truncated", "omitted", "omitted_uris", "cursor"}

// parseEnvelope decodes a JSON read and checks what holds for every one:
// exactly the documented keys in order, spent_tokens equal to the response's
// own o200k size and within budget, omitted_uris present, a cursor.
func parseEnvelope(t testing.TB, text string, budget int) envelope {
	t.Helper()
	if keys := objectKeys(t, text); !slices.Equal(keys, envelopeKeys) {
		t.Fatalf("envelope keys %q, want %q in %s", keys, envelopeKeys, text)
	}
	var e envelope
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		t.Fatalf("envelope %s: %v", text, err)
	}
	var raw struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		t.Fatal(err)
	}
	for i := range e.Items {
		e.Items[i].keys = objectKeys(t, string(raw.Items[i]))
	}
	checkMeta(t, text, e, budget)
	return e
}

func checkMeta(t testing.TB, text string, e envelope, budget int) {
	t.Helper()
	if got := countTokens(t, text); e.Spent != got {
		t.Errorf("spent_tokens %d, but the response is %d o200k tokens", e.Spent, got)
	}
	if e.Spent > budget {
		t.Errorf("spent_tokens %d over the budget %d", e.Spent, budget)
	}
	if e.OmittedURIs == nil {
		t.Errorf("omitted_uris is missing or null in %s", text)
	}
	if e.Cursor < 1 {
		t.Errorf("cursor %d; every workspace has at least its init commit", e.Cursor)
	}
}

// parseTable decodes a mode=table read: a header line, rows, and the
// envelope as JSON in a final line starting with "# ".
func parseTable(t testing.TB, text string, budget int) (header []string, rows [][]string, e envelope) {
	t.Helper()
	lines := strings.Split(text, "\n")
	if len(lines) < 2 {
		t.Fatalf("table %q: want a header line and an envelope line", text)
	}
	last := lines[len(lines)-1]
	meta, ok := strings.CutPrefix(last, "# ")
	if !ok {
		t.Fatalf("table's last line %q does not start with %q", last, "# ")
	}
	if keys := objectKeys(t, meta); !slices.Equal(keys, envelopeKeys[1:]) {
		t.Errorf("table envelope keys %q, want %q", keys, envelopeKeys[1:])
	}
	if err := json.Unmarshal([]byte(meta), &e); err != nil {
		t.Fatalf("table envelope %q: %v", meta, err)
	}
	checkMeta(t, text, e, budget)
	header = strings.Split(lines[0], "\t")
	// Rows that share the start of their address leave it to the header:
	// "uri (after bb://acme/ops/)". The rows are given back whole.
	var prefix string
	if p, ok := strings.CutPrefix(header[0], "uri (after "); ok && strings.HasSuffix(p, ")") {
		prefix, header[0] = strings.TrimSuffix(p, ")"), "uri"
	}
	for _, l := range lines[1 : len(lines)-1] {
		row := strings.Split(l, "\t")
		if len(row) != len(header) {
			t.Errorf("table row %q has %d cells, header %d", l, len(row), len(header))
		}
		if strings.HasPrefix(row[0], "bb://") && prefix != "" {
			t.Errorf("table row %q repeats the address start the header gives (%s)", l, prefix)
		}
		row[0] = prefix + row[0]
		rows = append(rows, row)
	}
	return header, rows, e
}

// objectKeys returns the keys of a JSON object in document order.
func objectKeys(t testing.TB, text string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q (%v)", text, err)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("object %q: %v", text, err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("object %q: %v", text, err)
		}
	}
	return keys
}

// get runs get_state, which must succeed, and decodes its envelope.
func (s *session) get(uris []string, mode string, budget int, fields ...string) envelope {
	s.t.Helper()
	args := map[string]any{"uris": uris}
	if mode != "" {
		args["mode"] = mode
	}
	if budget != 0 {
		args["budget_tokens"] = budget
	} else {
		budget = 2000
	}
	if len(fields) > 0 {
		args["fields"] = fields
	}
	return parseEnvelope(s.t, s.ok("get_state", args), budget)
}

// gitLog returns `git log --format=%an%x09%s` as lines, newest first, for
// the whole branch or for paths.
func gitLog(t testing.TB, dir string, paths ...string) []string {
	t.Helper()
	args := []string{"log", "--format=%an%x09%s"}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	}
	out := strings.TrimRight(fixtures.GitOutput(t, dir, args...), "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// checkWorkspace checks what must hold on disk once every write is
// acknowledged: git status is clean, no lock file or write journal is left
// behind, and every note parses (front matter between --- lines with a
// one-line digest).
func checkWorkspace(t testing.TB, dir string) {
	t.Helper()
	if got := fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status --porcelain is not empty:\n%s", got)
	}
	if j, err := os.ReadFile(filepath.Join(dir, ".blackboard", "journal")); err == nil && len(j) > 0 {
		t.Errorf("the write journal is not empty after every write was acknowledged: %s", j)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if strings.HasSuffix(d.Name(), ".lock") && rel != ".blackboard/write.lock" && rel != ".git/blackboard-engine.lock" {
			// .blackboard/write.lock and the engine's lock are permanent
			// flock files (git-ignored); any other .lock is a git or
			// program lock left behind.
			t.Errorf("lock file left behind: %s", rel)
		}
		if d.IsDir() && (rel == ".git" || rel == ".blackboard") {
			if rel == ".blackboard" {
				return fs.SkipDir
			}
			return nil // walked for lock files, but holds no notes
		}
		if d.IsDir() || strings.HasPrefix(rel, ".git/") || !strings.HasSuffix(rel, ".md") || strings.HasSuffix(rel, ".blob.md") {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checkNoteFile(t, rel, raw)
		return nil
	})
	if err != nil {
		t.Errorf("walk %s: %v", dir, err)
	}
}

// checkNoteFile parses a note as people and tools other than ours would:
// front matter between --- lines, YAML, a one-line digest.
func checkNoteFile(t testing.TB, rel string, raw []byte) map[string]any {
	t.Helper()
	front, body, ok := splitFrontMatter(string(raw))
	if !ok {
		t.Errorf("%s: no front matter between --- lines:\n%s", rel, raw)
		return nil
	}
	var fm map[string]any
	if err := yaml.Unmarshal([]byte(front), &fm); err != nil {
		t.Errorf("%s: front matter does not parse: %v\n%s", rel, err, front)
		return nil
	}
	d, _ := fm["digest"].(string)
	if d == "" || strings.Contains(d, "\n") {
		t.Errorf("%s: digest %q is not one non-empty line", rel, d)
	}
	if blob, ok := fm["blob"].(string); ok {
		if body != "" {
			t.Errorf("%s: content is out of line in %s, yet the note has a body %q", rel, blob, body)
		}
	}
	return fm
}

func splitFrontMatter(s string) (front, body string, ok bool) {
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return "", "", false
	}
	if front, body, ok = strings.Cut(rest, "\n---\n"); ok {
		return front + "\n", body, true
	}
	if front, ok = strings.CutSuffix(rest, "\n---"); ok {
		return front + "\n", "", true
	}
	return "", "", false
}

// readNote reads a note file's front matter and body from disk.
func readNote(t testing.TB, dir, key string) (map[string]any, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)+".md"))
	if err != nil {
		t.Fatalf("note %s on disk: %v", key, err)
	}
	fm := checkNoteFile(t, key+".md", raw)
	_, body, _ := splitFrontMatter(string(raw))
	return fm, body
}

// uri is the full address of a short one in the test workspace.
func uri(short string) string { return "bb://acme/" + short }

// mustRel is filepath.Rel, fatal on failure: a path that walks out of base
// with "..", as a hostile caller would write it.
func mustRel(t testing.TB, base, target string) string {
	t.Helper()
	rel, err := filepath.Rel(base, target)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
