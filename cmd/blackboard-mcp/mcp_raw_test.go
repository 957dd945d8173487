package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// Raw JSON-RPC over the server's stdin and stdout, as a host's transport
// sees it: several requests written at once, responses matched by id, and
// every stdout line a protocol message.

// rawServer is `serve` with its pipes in the test's hands.
type rawServer struct {
	t        *testing.T
	dir      string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	stderr   *lockedBuffer
	lines    chan string   // stdout, line by line; closed at EOF
	exited   chan struct{} // closed once the process is waited for
	waitOnce sync.Once
	// arrival is the order in which response ids arrived.
	arrival []string
	// calls are the tools/call requests sent and not yet answered, by id
	// (its JSON text): their answers are recorded for the version check.
	calls map[string]map[string]any
}

// startRaw starts `serve` as o says, its stdin and stdout in the test's
// hands; the server is stopped (stdin closed, killed after 10 s) when the
// test ends.
func startRaw(t *testing.T, o serverOpts) *rawServer {
	t.Helper()
	args, env := o.launch(t)
	r := &rawServer{t: t, dir: o.dir, stderr: &lockedBuffer{}, lines: make(chan string, 1024), exited: make(chan struct{}),
		calls: map[string]map[string]any{}}
	r.cmd = exec.Command(testBinary, args...)
	r.cmd.Env = env
	r.cmd.Stderr = r.stderr
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		br := bufio.NewReader(r.stdout)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				r.lines <- line
			}
			if err != nil {
				close(r.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = r.stdin.Close()
		r.startWait()
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.exited
		}
	})
	return r
}

// startWait waits for the process in the background, once: the rest of
// stdout is drained first, as Wait closes the pipe. The exit status is read
// from ProcessState, not from Wait's error.
func (r *rawServer) startWait() {
	r.waitOnce.Do(func() {
		go func() {
			for range r.lines {
			}
			_ = r.cmd.Wait()
			close(r.exited)
		}()
	})
}

// wait waits for the process to exit, at most d, and returns its state.
func (r *rawServer) wait(d time.Duration) *os.ProcessState {
	r.t.Helper()
	r.startWait()
	select {
	case <-r.exited:
		return r.cmd.ProcessState
	case <-time.After(d):
		_ = r.cmd.Process.Kill()
		<-r.exited
		r.t.Fatalf("the server did not exit within %s after its client went away\nserver log:\n%s", d, r.stderr.String())
		return nil
	}
}

// next returns the next stdout line, failing the test on EOF or a timeout.
func (r *rawServer) next() string {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("the server closed stdout\nserver log:\n%s", r.stderr.String())
		}
		return line
	case <-time.After(callTimeout):
		r.t.Fatalf("no message from the server in %s\nserver log:\n%s", callTimeout, r.stderr.String())
		return ""
	}
}

// send writes messages to stdin in one write: each a JSON line (a string is
// sent as it is, for malformed input).
func (r *rawServer) send(msgs ...any) {
	r.t.Helper()
	var b strings.Builder
	for _, m := range msgs {
		if s, ok := m.(string); ok {
			b.WriteString(s + "\n")
			continue
		}
		line, err := json.Marshal(m)
		if err != nil {
			r.t.Fatal(err)
		}
		r.rememberCall(m)
		b.Write(line)
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(r.stdin, b.String()); err != nil {
		r.t.Fatalf("write to the server's stdin: %v", err)
	}
}

// rpcResponse is a JSON-RPC 2.0 response.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// parseRPCLine checks that a stdout line is one JSON-RPC 2.0 message: a
// response (an id and exactly one of result or error) or a notification.
func parseRPCLine(line string) (rpcResponse, error) {
	var m rpcResponse
	dec := json.NewDecoder(strings.NewReader(line))
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("stdout line is not JSON: %q: %w", line, err)
	}
	if dec.More() {
		return m, fmt.Errorf("stdout line holds more than one JSON value: %q", line)
	}
	if m.JSONRPC != "2.0" {
		return m, fmt.Errorf("stdout line is not JSON-RPC 2.0: %q", line)
	}
	isResponse := m.ID != nil && (m.Result != nil) != (m.Error != nil)
	isNotification := m.ID == nil && m.Method != ""
	if !isResponse && !isNotification {
		return m, fmt.Errorf("stdout line is neither a response nor a notification: %q", line)
	}
	return m, nil
}

// await reads responses until every id in ids has one, and returns them by
// id (the id's JSON text). Every line must be JSON-RPC; an id answered
// twice, or one nobody asked for, fails the test.
func (r *rawServer) await(ids ...string) map[string]rpcResponse {
	r.t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]rpcResponse{}
	for len(got) < len(want) {
		line := r.next()
		m, err := parseRPCLine(line)
		if err != nil {
			r.t.Fatal(err)
		}
		if m.ID == nil {
			continue // a notification
		}
		id := string(m.ID)
		if !want[id] {
			r.t.Fatalf("a response with id %s nobody is waiting for: %s", id, line)
		}
		if _, dup := got[id]; dup {
			r.t.Fatalf("a second response with id %s: %s", id, line)
		}
		got[id] = m
		r.arrival = append(r.arrival, id)
		r.recordCall(id, m)
	}
	return got
}

// rememberCall keeps a tools/call request built with toolCall until its
// answer arrives.
func (r *rawServer) rememberCall(m any) {
	req, ok := m.(map[string]any)
	if !ok || req["method"] != "tools/call" {
		return
	}
	params, _ := req["params"].(map[string]any)
	id, err := json.Marshal(req["id"])
	if params == nil || err != nil {
		return
	}
	r.calls[string(id)] = params
}

// recordCall records the answer to a remembered tools/call for the version
// check.
func (r *rawServer) recordCall(id string, m rpcResponse) {
	params, ok := r.calls[id]
	if !ok {
		return
	}
	delete(r.calls, id)
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || len(res.Content) != 1 {
		return
	}
	name, _ := params["name"].(string)
	args, _ := params["arguments"].(map[string]any)
	recordWrite(r.dir, name, args, toolResult{text: res.Content[0].Text, isError: res.IsError})
}

// request builds a JSON-RPC request; id is any JSON value.
func request(id any, method string, params any) map[string]any {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	return m
}

func toolCall(id any, name string, args map[string]any) map[string]any {
	return request(id, "tools/call", map[string]any{"name": name, "arguments": args})
}

// toolText is the text of a tools/call response.
func toolText(t *testing.T, m rpcResponse) (string, bool) {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("id %s: JSON-RPC error %d %s; tool failures belong in results", m.ID, m.Error.Code, m.Error.Message)
	}
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("id %s: result %s is not one text block (%v)", m.ID, m.Result, err)
	}
	return res.Content[0].Text, res.IsError
}

func (r *rawServer) initialize() {
	r.t.Helper()
	r.send(request("init", "initialize", map[string]any{"protocolVersion": protocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "e2e-raw", "version": "1.0.0"}}))
	res := r.await(`"init"`)[`"init"`]
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res.Result, &init); err != nil || init.ProtocolVersion != protocolVersion {
		r.t.Fatalf("initialize: %s (%v)", res.Result, err)
	}
	r.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	r.arrival = nil
}

func TestMCPRawResponsesByID(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	r := startRaw(t, serverOpts{dir: dir, agent: "raw-agent"})
	r.initialize()

	// One write of many requests: a slow write first, then quick ones,
	// creates on the worker pool, requests answered off the read loop, an
	// unknown method, and a line that is not JSON. Ids are numbers and
	// strings, not in any order.
	big := strings.Repeat("0123456789abcdef", 1024)
	batch := []any{
		toolCall(1000, "update_state", map[string]any{"uri": "raw/big", "digest": "Big", "body": big, "expect_version": 0}),
		request("list", "tools/list", nil),
		request(-7, "ping", nil),
	}
	want := []string{"1000", `"list"`, "-7"}
	for i := range 10 {
		id := 10 - i
		batch = append(batch, toolCall(id, "update_state", map[string]any{"uri": fmt.Sprintf("raw/n-%d", id),
			"digest": fmt.Sprintf("Raw note %d", id), "body": fmt.Sprintf("body %d", id), "expect_version": 0}))
		want = append(want, fmt.Sprint(id))
	}
	batch = append(batch, request("nope", "no/such/method", nil), "this line is not JSON-RPC")
	want = append(want, `"nope"`, "null")
	r.send(batch...)
	got := r.await(want...)

	for i := 1; i <= 10; i++ {
		text, isErr := toolText(t, got[fmt.Sprint(i)])
		var w writeResult
		if err := json.Unmarshal([]byte(text), &w); err != nil || isErr || w.Version != 1 || w.Digest != fmt.Sprintf("Raw note %d", i) {
			t.Errorf("response id %d = %s; want the create of raw/n-%d (its digest)", i, text, i)
		}
	}
	if text, isErr := toolText(t, got["1000"]); isErr || !strings.Contains(text, "big.blob.md") {
		t.Errorf("response id 1000 = %s; want the big write, stored out of line", text)
	}
	var tools struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(got[`"list"`].Result, &tools); err != nil || len(tools.Tools) != 5 {
		t.Errorf("response id \"list\" = %s; want the five tools", got[`"list"`].Result)
	}
	// What a host passes the model on every turn, each tool's name,
	// description and input schema as JSON (as sent), stays within 600
	// o200k tokens for the five tools (SPEC section 5).
	surface := 0
	for _, tool := range tools.Tools {
		seen, err := json.Marshal(map[string]any{"name": tool.Name, "description": tool.Description, "input_schema": tool.InputSchema})
		if err != nil {
			t.Fatal(err)
		}
		surface += countTokens(t, string(seen))
	}
	if surface > 600 {
		t.Errorf("the tool surface is %d o200k tokens; the budget is 600", surface)
	}
	if string(got["-7"].Result) != "{}" {
		t.Errorf("ping response = %s; want {}", got["-7"].Result)
	}
	if e := got[`"nope"`].Error; e == nil || e.Code != -32601 {
		t.Errorf("unknown method: %+v; want JSON-RPC error -32601", e)
	}
	if e := got["null"].Error; e == nil || e.Code != -32700 {
		t.Errorf("a line that is not JSON: %+v; want a parse error -32700 with id null", e)
	}
	if !slices.Equal(r.arrival, want) {
		t.Logf("responses arrived in another order than the requests were sent (matched by id):\nsent    %v\narrived %v", want, r.arrival)
	}

	// Reads of the notes just written, asked for in a shuffled order with
	// string ids: each answer is about the note its id asked for.
	var reads []any
	var ids []string
	for _, i := range []int{7, 2, 9, 4, 1, 10, 3, 8, 6, 5} {
		id := fmt.Sprintf("get-%d", i)
		reads = append(reads, toolCall(id, "get_state", map[string]any{"uris": []string{fmt.Sprintf("raw/n-%d", i)}, "mode": "full"}))
		ids = append(ids, `"`+id+`"`)
	}
	r.send(reads...)
	got = r.await(ids...)
	for _, id := range ids {
		text, _ := toolText(t, got[id])
		e := parseEnvelope(t, text, 2000)
		n := strings.TrimSuffix(strings.TrimPrefix(id, `"get-`), `"`)
		if len(e.Items) != 1 || e.Items[0].URI != uri("raw/n-"+n) || e.Items[0].Body != "body "+n {
			t.Errorf("response %s = %s; want raw/n-%s", id, text, n)
		}
	}

	if err := r.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	if st := r.wait(15 * time.Second); !st.Success() {
		t.Errorf("server exit: %s; want status 0 after stdin closed", st)
	}
	if !strings.Contains(r.stderr.String(), "serving over stdio") {
		t.Errorf("the server's log is not on stderr:\n%s", r.stderr.String())
	}
	checkWorkspace(t, dir)
	if n := len(gitLog(t, dir)); n != 12 {
		t.Errorf("%d commits; want init and 11 creates", n)
	}
}

// appendBurst sends n appends to key in one write, each its own line, and
// returns the lines appended.
func (r *rawServer) appendBurst(key string, n int, tag string) []string {
	var lines []string
	var msgs []any
	for i := range n {
		line := fmt.Sprintf("%s-%02d", tag, i)
		lines = append(lines, line)
		msgs = append(msgs, toolCall(fmt.Sprintf("%s-%d", tag, i), "update_state",
			map[string]any{"uri": key, "digest": "Log: " + line, "append": line + "\n"}))
	}
	r.send(msgs...)
	return lines
}

// checkAppendLog checks a note written by a create ("# Log") and appends
// after an abrupt end of the session: the body holds each line once, and
// the history has one commit per line in the body, in the same order.
func checkAppendLog(t *testing.T, dir, key string, acked []string) {
	t.Helper()
	_, body := readNote(t, dir, key)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if lines[0] != "# Log" {
		t.Fatalf("%s body starts %q", key, lines[0])
	}
	lines = lines[1:]
	for _, a := range acked {
		if !slices.Contains(lines, a) {
			t.Errorf("acknowledged append %s is missing from the body %q", a, lines)
		}
	}
	hist := gitLog(t, dir, key+".md")
	if len(hist) != 1+len(lines) {
		t.Errorf("%d commits of %s for %d appended lines:\n%s", len(hist), key, len(lines), strings.Join(hist, "\n"))
		return
	}
	for i, l := range lines {
		if want := fmt.Sprintf("append %s v%d: Log: %s", key, i+2, l); !strings.HasSuffix(hist[len(hist)-2-i], want) {
			t.Errorf("commit %q; want %q", hist[len(hist)-2-i], want)
		}
	}
}

func TestMCPRawDisconnect(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// killClient also closes the read end of the server's stdout, as
		// a client that died does; otherwise only stdin is closed, as a
		// host that ends the session does.
		killClient bool
	}{{"stdin closed", false}, {"client killed", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newWorkspaceDir(t)
			r := startRaw(t, serverOpts{dir: dir, agent: "leaver"})
			r.initialize()
			const key = "run/log"
			r.send(toolCall("create", "update_state", map[string]any{"uri": key, "digest": "Log", "body": "# Log\n", "expect_version": 0}))
			r.await(`"create"`)
			r.appendBurst(key, 12, "x")
			// Wait for a couple of acknowledgements so that writes are in
			// flight, then go away.
			var acked []string
			for len(acked) < 2 {
				m, err := parseRPCLine(r.next())
				if err != nil {
					t.Fatal(err)
				}
				text, isErr := toolText(t, m)
				if isErr {
					t.Fatalf("append failed: %s", text)
				}
				id := strings.Trim(string(m.ID), `"`)
				acked = append(acked, lineOf(id))
			}
			if tc.killClient {
				_ = r.stdout.Close()
			}
			if err := r.stdin.Close(); err != nil {
				t.Fatal(err)
			}
			st := r.wait(15 * time.Second)
			if tc.killClient && !st.Success() {
				// Dying of SIGPIPE is a crash: what was in flight is finished
				// by the next process to open the workspace (SPEC section 4).
				// That guarantee is checked, then the unclean exit reported.
				var seen []string
				if j, err := os.ReadFile(filepath.Join(dir, ".blackboard", "journal")); err == nil && len(j) > 0 {
					seen = append(seen, "an unfinished write journal")
				}
				if out := fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all"); out != "" {
					seen = append(seen, "git status "+strings.TrimSpace(out))
				}
				runBinaryEnv(t, "ls", "--dir", dir, "--no-sync")
				checkWorkspace(t, dir)
				checkAppendLog(t, dir, key, acked)
				left := "this time nothing half-written, but a write in flight can be cut anywhere"
				if len(seen) > 0 {
					left = "this time " + strings.Join(seen, " and ") + ", until another process opens the workspace"
				}
				t.Errorf("regression: cmd/blackboard-mcp/serve.go runServe does not ignore SIGPIPE: when the client dies, the next "+
					"response written to stdout kills the server (%s) while other tool calls may be mid-write; %s", st, left)
			}
			if !st.Success() {
				t.Errorf("server exit: %s; want status 0 when its client goes away\nserver log:\n%s", st, r.stderr.String())
			}
			checkWorkspace(t, dir)
			checkAppendLog(t, dir, key, acked)
		})
	}
}

// lineOf maps an append's request id (x-3) to its line (x-03).
func lineOf(id string) string {
	tag, n, _ := strings.Cut(id, "-")
	i, _ := strconv.Atoi(n)
	return fmt.Sprintf("%s-%02d", tag, i)
}

// runBinaryEnv runs the real binary with the test environment.
func runBinaryEnv(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(testBinary, args...)
	cmd.Env = mcpEnv("")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("blackboard-mcp %s: %v\n%s", strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return string(out)
}
