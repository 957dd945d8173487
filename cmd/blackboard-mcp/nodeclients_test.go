package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// MCP clients that no one here wrote, driving the real binary: the official
// conformance suite's server scenarios over streamable HTTP, and the MCP
// Inspector's CLI over stdio and HTTP. Both are Node programs that need
// Node 22, newer than a machine's Node may be; .ci/node-tools installs them,
// with a Node 22 of their own, into a cache directory and prints it, and
// BLACKBOARD_NODE_TOOLS names that directory. Without it these tests skip.
//
// The Inspector is the current line's CLI mode (`mcp-inspector --cli` of
// @modelcontextprotocol/inspector 2.x). The separate package
// @modelcontextprotocol/inspector-cli is the deprecated 1.x line, and its
// 1.0.3 does not run when installed on its own: it imports a package.json two
// directories up, which exists only in the Inspector's source tree.

// nodeToolsEnv names the directory .ci/node-tools prints.
const nodeToolsEnv = "BLACKBOARD_NODE_TOOLS"

// nodeTimeout bounds one run of a Node client: a hung client or server fails
// its test instead of the whole run.
const nodeTimeout = 2 * time.Minute

// conformanceApplies are the conformance suite's server scenarios that test
// what blackboard-mcp offers. Each runs against `serve --http` on a fresh
// workspace, and a failed check of any of them fails the test.
var conformanceApplies = []string{
	"server-initialize",           // initialize, then the initialized notification
	"ping",                        // ping answers {}
	"tools-list",                  // every tool has a name, a description and an input schema
	"server-sse-multiple-streams", // three concurrent POSTs in one session are all served
	"dns-rebinding-protection",    // a foreign Host and Origin get a 4xx, loopback ones a 2xx
	"resources-list",              // resources/list answers with well-formed resources (the notes)
	"completion-complete",         // completion/complete of a prompt argument answers, with no values (no prompts here)
	"logging-set-level",           // logging/setLevel answers {}
}

// conformanceNotApplicable are the suite's other server scenarios, each with
// why it does not apply. Most call the tools, prompts and test:// resources
// of the suite's reference server, which only it has; blackboard-mcp has its
// five tools, its notes as resources, and no prompts. Where the reason is a
// capability blackboard-mcp does not declare, capability names it, and the
// test fails once the server declares it: the scenario then belongs above.
var conformanceNotApplicable = []struct{ name, capability, why string }{
	{"tools-call-simple-text", "", "calls test_simple_text, a reference-server tool"},
	{"tools-call-image", "", "calls test_image_content, a reference-server tool; no tool of ours returns images"},
	{"tools-call-audio", "", "calls test_audio_content, a reference-server tool; no tool of ours returns audio"},
	{"tools-call-embedded-resource", "", "calls test_embedded_resource, a reference-server tool; no tool of ours embeds resources"},
	{"tools-call-mixed-content", "", "calls test_multiple_content_types, a reference-server tool"},
	{"tools-call-with-logging", "", "sets a log level, then calls test_tool_with_logging, a reference-server tool (our log lines are checked by TestLogNotifications)"},
	{"tools-call-error", "", "calls test_error_handling, a reference-server tool (our isError results are checked by TestNodeInspector)"},
	{"tools-call-with-progress", "", "calls test_tool_with_progress, a reference-server tool; no tool of ours reports progress"},
	{"tools-call-sampling", "", "calls test_sampling, a reference-server tool; blackboard-mcp never asks the client to sample"},
	{"tools-call-elicitation", "", "calls test_elicitation, a reference-server tool; blackboard-mcp never elicits"},
	{"json-schema-2020-12", "", "looks for json_schema_2020_12_tool, a reference-server tool"},
	{"elicitation-sep1034-defaults", "", "calls test_elicitation_sep1034_defaults, a reference-server tool; blackboard-mcp never elicits"},
	{"server-sse-polling", "", "calls test_reconnection, a reference-server tool that closes its SSE stream mid-call (pending in the suite)"},
	{"elicitation-sep1330-enums", "", "calls test_elicitation_sep1330_enums, a reference-server tool; blackboard-mcp never elicits"},
	{"resources-read-text", "", "reads test://static-text, a reference-server resource"},
	{"resources-read-binary", "", "reads test://static-binary, a reference-server resource"},
	{"resources-templates-read", "", "reads test://template/123/data from a reference-server resource template"},
	{"resources-subscribe", "", "subscribes to test://watched-resource, a reference-server resource"},
	{"resources-unsubscribe", "", "unsubscribes from test://watched-resource, a reference-server resource"},
	{"prompts-list", "prompts", "prompts/list: blackboard-mcp has no prompts"},
	{"prompts-get-simple", "", "gets test_simple_prompt, a reference-server prompt"},
	{"prompts-get-with-args", "", "gets test_prompt_with_arguments, a reference-server prompt"},
	{"prompts-get-embedded-resource", "", "gets test_prompt_with_embedded_resource, a reference-server prompt"},
	{"prompts-get-with-image", "", "gets test_prompt_with_image, a reference-server prompt"},
}

// TestNodeConformance runs the official MCP conformance suite's server
// scenarios that apply against `serve --http` on a fresh workspace; every
// scenario of the suite must be classified above, so that a new version's
// scenarios are not skipped unseen.
func TestNodeConformance(t *testing.T) {
	nt := needNodeTools(t)

	listed := nt.mustRun(t, "conformance", "list", "--server")
	var suite []string
	for line := range strings.Lines(listed) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			suite = append(suite, strings.Fields(rest)[0])
		}
	}
	classified := map[string]bool{}
	for _, name := range conformanceApplies {
		classified[name] = true
	}
	for _, na := range conformanceNotApplicable {
		classified[na.name] = true
	}
	for _, name := range suite {
		if !classified[name] {
			t.Errorf("the conformance suite has the server scenario %q, classified neither as applying nor as not applicable: run it and add it to one list", name)
		}
		delete(classified, name)
	}
	for name := range classified {
		t.Errorf("scenario %q is classified here but the suite no longer lists it:\n%s", name, listed)
	}

	url, _ := nodeServeHTTP(t, "conformance")
	caps := nodeCapabilities(t, url)
	for _, na := range conformanceNotApplicable {
		if _, ok := caps[na.capability]; ok && na.capability != "" {
			t.Errorf("the server now declares the %s capability, so the scenario %s (%s) may apply: run it and reclassify it", na.capability, na.name, na.why)
		}
	}
	for _, name := range conformanceApplies {
		t.Run(name, func(t *testing.T) {
			nodeConformanceScenario(t, nt, url, name)
		})
	}
}

// conformanceCheck is one check of a scenario, as the suite writes it to
// checks.json.
type conformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING or INFO
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// nodeConformanceScenario runs one scenario against url and fails on each of
// its failed checks, with what the suite sent and got.
func nodeConformanceScenario(t *testing.T, nt nodeTools, url, name string) {
	t.Helper()
	out := t.TempDir()
	stdout, stderr, code := nt.run(t, "conformance", "server", "--url", url, "--scenario", name, "-o", out)
	checks := conformanceChecks(t, name, out, code, stdout, stderr)
	passed := 0
	for _, c := range checks {
		switch c.Status {
		case "SUCCESS":
			passed++
		case "FAILURE":
			// details hold what the suite sent and what it got.
			t.Errorf("conformance %s: check %s failed: %s\ndetails: %s", name, c.ID, c.ErrorMessage, orNone(c.Details))
		case "WARNING":
			t.Logf("conformance %s: check %s warns: %s", name, c.ID, c.ErrorMessage)
		}
	}
	if passed == 0 && !t.Failed() {
		t.Errorf("conformance %s: none of its %d checks passed, so it tested nothing", name, len(checks))
	}
	if code != 0 && !t.Failed() {
		t.Errorf("conformance %s: exit %d without a failed check\n%s%s", name, code, stdout, stderr)
	}
}

// conformanceChecks reads the checks a run of the suite wrote to out.
func conformanceChecks(t *testing.T, name, out string, code int, stdout, stderr string) []conformanceCheck {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(out, "*", "checks.json"))
	if len(files) != 1 {
		t.Fatalf("conformance %s: exit %d and %d checks.json files in %s, want one\n%s%s", name, code, len(files), out, stdout, stderr)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var checks []conformanceCheck
	if err := json.Unmarshal(raw, &checks); err != nil {
		t.Fatalf("conformance %s: %s: %v", name, files[0], err)
	}
	return checks
}

// The conformance suite's scenarios of MCP 2026-07-28 (from its 0.2
// previews, conformance-stateless in the Node tools) that apply to the
// board, run against `serve --http` as a client of that revision would
// speak to it: no initialize, no session.
var conformanceStatelessApplies = []string{
	"server-stateless", "completion-complete", "tools-list", "server-sse-multiple-streams", "resources-list",
	"sep-2164-resource-not-found", "dns-rebinding-protection", "caching", "http-header-validation",
	"input-required-result-unsupported-methods",
}

// conformanceStatelessNotApplicable are the other 2026-07-28 scenarios,
// by the prefix of their names, and why.
var conformanceStatelessNotApplicable = []struct{ prefix, why string }{
	{"tools-call-", "calls a reference-server tool"},
	{"json-schema-2020-12", "looks for a reference-server tool"},
	{"resources-read-", "reads a reference-server resource"},
	{"resources-templates-read", "reads from a reference-server resource template"},
	{"prompts-", "blackboard-mcp has no prompts"},
	{"http-custom-header-server-validation", "no tool of ours maps a parameter to a header (x-mcp-header)"},
	{"input-required-result-", "calls reference-server tools or prompts that ask the client for input; blackboard-mcp never does"},
}

// A check the suite cannot run here (it calls a reference server's
// diagnostic tool, or prompts/list) says so; it is not the server's fault.
func conformanceUntestable(c conformanceCheck) bool {
	return strings.HasPrefix(c.ErrorMessage, "Not testable") || strings.Contains(c.ErrorMessage, "prompts not supported")
}

// TestNodeConformanceStateless runs the conformance suite's 2026-07-28
// scenarios that apply; every one it lists is classified, so that a new
// preview's scenarios are not skipped unseen.
func TestNodeConformanceStateless(t *testing.T) {
	nt := needNodeTools(t)
	suite := filepath.Join(nt.dir, "node_modules", "conformance-stateless", "dist", "index.js")
	stdout, stderr, code := nt.runScript(t, suite, "list", "--server", "--spec-version", mcp.ProtocolVersion20260728)
	if code != 0 {
		t.Fatalf("conformance list: exit %d\n%s%s", code, stdout, stderr)
	}
	listed := 0
	for line := range strings.Lines(stdout) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
		if !ok {
			continue
		}
		listed++
		name := strings.Fields(rest)[0]
		applies := slices.Contains(conformanceStatelessApplies, name)
		other := slices.ContainsFunc(conformanceStatelessNotApplicable, func(na struct{ prefix, why string }) bool {
			return strings.HasPrefix(name, na.prefix)
		})
		if !applies && !other {
			t.Errorf("the suite has the 2026-07-28 scenario %q, classified neither as applying nor as not applicable", name)
		}
	}
	if listed < len(conformanceStatelessApplies) {
		t.Fatalf("the suite lists %d scenarios of 2026-07-28:\n%s", listed, stdout)
	}
	url, _ := nodeServeHTTP(t, "conformance")
	for _, name := range conformanceStatelessApplies {
		t.Run(name, func(t *testing.T) {
			out := t.TempDir()
			stdout, stderr, code := nt.runScript(t, suite, "server", "--url", url, "--scenario", name,
				"--spec-version", mcp.ProtocolVersion20260728, "-o", out)
			passed, untestable := 0, 0
			for _, c := range conformanceChecks(t, name, out, code, stdout, stderr) {
				switch {
				case c.Status == "SUCCESS":
					passed++
				case c.Status == "FAILURE" && conformanceUntestable(c):
					untestable++
					t.Logf("check %s is not testable here: %s", c.ID, c.ErrorMessage)
				case c.Status == "FAILURE":
					t.Errorf("check %s failed: %s\ndetails: %s", c.ID, c.ErrorMessage, orNone(c.Details))
				}
			}
			if passed == 0 {
				t.Errorf("none of its checks passed (%d not testable), so it tested nothing", untestable)
			}
			t.Logf("%d checks passed, %d not testable here", passed, untestable)
		})
	}
}

// orNone is raw JSON, or "none" when there is none.
func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "none"
	}
	return string(raw)
}

// nodeCapabilities returns the capabilities the server at url declares at
// initialize, by their keys.
func nodeCapabilities(t *testing.T, url string) map[string]json.RawMessage {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion +
		`","capabilities":{},"clientInfo":{"name":"nodeclients_test","version":"1"}}}`
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	defer resp.Body.Close()
	var msg []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The answer is the first event's data.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.TrimSpace(data) != "" {
				msg = []byte(data)
				break
			}
		}
	} else {
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		msg = buf.Bytes()
	}
	var res struct {
		Result struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &res); err != nil || res.Result.Capabilities == nil {
		t.Fatalf("initialize: status %d, answer %q: no capabilities (%v)", resp.StatusCode, msg, err)
	}
	return res.Result.Capabilities
}

// TestNodeInspector drives the server with the MCP Inspector's CLI, over
// stdio (the Inspector starts the server) and over HTTP: it lists the tools,
// writes a note, reads it back, and sees a stale write refused as a tool
// error.
func TestNodeInspector(t *testing.T) {
	nt := needNodeTools(t)
	t.Run("stdio", func(t *testing.T) {
		dir := newWorkspaceDir(t)
		// The Inspector gives a server it starts only a few variables of its
		// own environment (PATH, HOME, ...): the rest is passed with -e.
		target := []string{"-e", "BLACKBOARD_AGENT=inspector",
			"-e", "GIT_CONFIG_GLOBAL=/dev/null", "-e", "GIT_CONFIG_NOSYSTEM=1",
			"--", testBinary}
		target = append(target, serveArgs(dir)...)
		nodeInspectorRoundTrip(t, nt, dir, target)
	})
	t.Run("http", func(t *testing.T) {
		url, dir := nodeServeHTTP(t, "inspector")
		nodeInspectorRoundTrip(t, nt, dir, []string{"--transport", "http", "--server-url", url})
	})
}

// inspectorOutput is what `mcp-inspector --cli --format json` prints on
// stdout: the method's result.
type inspectorOutput struct {
	Result struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError   bool `json:"isError"`
		Resources []struct {
			URI         string `json:"uri"`
			Description string `json:"description"`
		} `json:"resources"`
		ResourceTemplates []struct {
			URITemplate string `json:"uriTemplate"`
		} `json:"resourceTemplates"`
		Contents []struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType"`
			Text     string `json:"text"`
		} `json:"contents"`
	} `json:"result"`
}

// text is a tool result's one text block.
func (o inspectorOutput) text(t *testing.T) string {
	t.Helper()
	if len(o.Result.Content) != 1 || o.Result.Content[0].Type != "text" {
		t.Fatalf("tool result content %+v, want one text block", o.Result.Content)
	}
	return o.Result.Content[0].Text
}

// nodeInspectorRoundTrip runs the Inspector against the server that target
// names (the Inspector's options for it, last), whose workspace is dir.
func nodeInspectorRoundTrip(t *testing.T, nt nodeTools, dir string, target []string) {
	t.Helper()
	inspect := func(wantOK bool, args ...string) inspectorOutput {
		t.Helper()
		args = append(append([]string{"--cli", "--format", "json", "--quiet"}, args...), target...)
		stdout, stderr, code := nt.run(t, "mcp-inspector", args...)
		if (code == 0) != wantOK {
			t.Fatalf("mcp-inspector %s: exit %d, want success %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, wantOK, stdout, stderr)
		}
		var out inspectorOutput
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("mcp-inspector %s: stdout is not its JSON result: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout, stderr)
		}
		return out
	}

	// --strict fails (exit 6) on a tool schema that some clients cannot use.
	list := inspect(true, "--method", "tools/list", "--strict")
	var names []string
	for _, tool := range list.Result.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, toolNames) {
		t.Errorf("tools/list: %q, want %q", names, toolNames)
	}

	const digest, body = "Written by the MCP Inspector", "A note from a client no one here wrote."
	write := jsonString(map[string]any{"uri": "t/x", "digest": digest, "body": body, "expect_version": 0})
	out := inspect(true, "--method", "tools/call", "--tool-name", "update_state", "--tool-args-json", write)
	if out.Result.IsError {
		t.Fatalf("update_state: %s", out.text(t))
	}
	if w := decodeWrite(t, out.text(t)); w.Version != 1 || w.Digest != digest {
		t.Errorf("update_state: %+v, want version 1 with the digest written", w)
	}

	out = inspect(true, "--method", "tools/call", "--tool-name", "get_state", "--tool-args-json", `{"uris":["t/x"],"mode":"full"}`)
	if out.Result.IsError {
		t.Fatalf("get_state: %s", out.text(t))
	}
	env := parseEnvelope(t, out.text(t), 2000)
	if len(env.Items) != 1 {
		t.Fatalf("get_state: %d items, want 1: %s", len(env.Items), out.text(t))
	}
	if it := env.Items[0]; it.URI != uri("t/x") || it.Version != 1 || it.Digest != digest || it.Body != body {
		t.Errorf("get_state: %+v, want %s v1 with the digest and body written", it, uri("t/x"))
	}

	// A second create is stale: a tool error the Inspector reports as one.
	out = inspect(false, "--method", "tools/call", "--tool-name", "update_state", "--tool-args-json", write)
	if msg := out.text(t); !out.Result.IsError || !strings.HasPrefix(msg, "conflict: ") {
		t.Errorf("update_state again with expect_version 0: isError %v, %q; want a conflict", out.Result.IsError, msg)
	}

	// The note is a resource: listed, read as Markdown, and under the
	// template.
	out = inspect(true, "--method", "resources/list")
	if r := out.Result.Resources; len(r) == 0 || r[0].URI != uri("t/x") || r[0].Description != digest {
		t.Errorf("resources/list: %+v, want %s first with its digest", r, uri("t/x"))
	}
	out = inspect(true, "--method", "resources/read", "--uri", uri("t/x"))
	if c := out.Result.Contents; len(c) != 1 || c[0].MIMEType != "text/markdown" ||
		!strings.HasPrefix(c[0].Text, "---\ndigest: "+digest+"\n") || !strings.HasSuffix(c[0].Text, body) {
		t.Errorf("resources/read %s: %+v", uri("t/x"), c)
	}
	out = inspect(true, "--method", "resources/templates/list")
	var templates []string
	for _, tpl := range out.Result.ResourceTemplates {
		templates = append(templates, tpl.URITemplate)
	}
	slices.Sort(templates)
	if want := []string{"bb://acme/{topic}/{+key}", "bb://acme/{topic}/{+key}@{version}"}; !slices.Equal(templates, want) {
		t.Errorf("resources/templates/list: %q, want %q", templates, want)
	}

	fm, onDisk := readNote(t, dir, "t/x")
	if fm["digest"] != digest || strings.TrimSpace(onDisk) != body {
		t.Errorf("t/x.md on disk: digest %v, body %q", fm["digest"], onDisk)
	}
	if log := gitLog(t, dir, "t/x.md"); len(log) != 1 || !strings.HasPrefix(log[0], "inspector\t") {
		t.Errorf("git log t/x.md: %q, want one commit by the agent inspector", log)
	}
	checkWorkspace(t, dir)
}

// nodeTools is the directory .ci/node-tools installs: node_modules with the
// clients' packages and, among their .bin links, node, the Node 22 binary of
// the npm package node-linux-<arch>.
type nodeTools struct{ dir string }

// needNodeTools returns the Node tools, or skips the test when
// BLACKBOARD_NODE_TOOLS is unset; set but broken fails.
func needNodeTools(t *testing.T) nodeTools {
	t.Helper()
	dir := os.Getenv(nodeToolsEnv)
	if dir == "" {
		t.Skipf("%s is unset: this test drives MCP clients written in Node (the conformance suite, the MCP Inspector); "+
			"install them with `export %s=$(.ci/node-tools)`, as .ci/run does", nodeToolsEnv, nodeToolsEnv)
	}
	nt := nodeTools{dir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	v, err := exec.CommandContext(ctx, nt.bin("node"), "--version").Output()
	if err != nil {
		t.Fatalf("%s=%s: its Node does not run (%v); run .ci/node-tools again", nodeToolsEnv, dir, err)
	}
	major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(v)), "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 22 {
		t.Fatalf("%s=%s: its Node is %s; the clients need 22 or newer", nodeToolsEnv, dir, v)
	}
	return nt
}

// bin is a program of the installed packages.
func (nt nodeTools) bin(name string) string {
	return filepath.Join(nt.dir, "node_modules", ".bin", name)
}

// run runs the package program name with Node 22, in a scratch directory
// with a scratch HOME (the Inspector keeps state under ~/.mcp-inspector), and
// returns what it printed and its exit code.
func (nt nodeTools) run(t *testing.T, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return nt.runScript(t, nt.bin(name), args...)
}

// runScript is run for the script at path, a package's program that has
// no name in node_modules/.bin.
func (nt nodeTools) runScript(t *testing.T, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	name := filepath.Base(path)
	ctx, cancel := context.WithTimeout(context.Background(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, nt.bin("node"), append([]string{path}, args...)...)
	scratch := t.TempDir()
	cmd.Dir = scratch
	// Node 22 comes first on PATH for anything the program starts by name.
	cmd.Env = append(mcpEnv(""), "HOME="+scratch, "NO_COLOR=1",
		"PATH="+filepath.Dir(nt.bin("node"))+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: no end after %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), nodeTimeout, out.String(), errOut.String())
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errOut.String(), code
}

// mustRun is run of a command that must succeed; it returns its stdout.
func (nt nodeTools) mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	stdout, stderr, code := nt.run(t, name, args...)
	if code != 0 {
		t.Fatalf("%s %s: exit %d\n%s%s", name, strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// nodeServeHTTP starts `serve --http` on a fresh workspace at a free
// loopback port, with agent as its agent, and returns its MCP endpoint and
// the workspace. The server is interrupted when the test ends, and its log
// shown if the test failed.
func nodeServeHTTP(t *testing.T, agent string) (url, dir string) {
	t.Helper()
	dir = newWorkspaceDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(testBinary, serveArgs(dir, "--http", addr)...)
	cmd.Env = mcpEnv(agent)
	var log lockedBuffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("serve --http, interrupted: %v; want a clean exit", err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			err := <-exited
			t.Errorf("serve --http did not stop within 10s of an interrupt (killed: %v)", err)
		}
		if t.Failed() && log.String() != "" {
			t.Logf("serve --http log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(callTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp", dir
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("serve --http %s exited before listening: %v\n%s", addr, err, log.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --http %s: not listening after %v\n%s", addr, callTimeout, log.String())
		}
	}
}
