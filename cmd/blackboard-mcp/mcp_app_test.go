package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

const uiExtension = "io.modelcontextprotocol/ui"

// appClient is an mcp-go client of `serve` that declares the MCP Apps
// extension, as a host that renders apps does.
type appClient struct {
	t *testing.T
	c *client.Client
	// init is the server's initialize answer.
	init *mcp.InitializeResult
}

func startAppClient(t *testing.T, o serverOpts) *appClient {
	t.Helper()
	args, env := o.launch(t)
	stderr := &lockedBuffer{}
	tr := transport.NewStdioWithOptions(testBinary, nil, args,
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Stderr = env, stderr
			return cmd, nil
		}))
	c := client.NewClient(tr, client.WithProtocolVersion(protocolVersion))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := contextWithTimeout()
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocolVersion
	req.Params.ClientInfo = mcp.Implementation{Name: "e2e-app-host", Version: "1.0.0"}
	req.Params.Capabilities.Extensions = map[string]any{uiExtension: map[string]any{"mimeTypes": []string{tools.ViewMIME}}}
	res, err := c.Initialize(ctx, req)
	if err != nil {
		t.Fatalf("initialize: %v\n%s", err, stderr.String())
	}
	return &appClient{t: t, c: c, init: res}
}

// call calls a tool and returns its structured content, failing the test
// on a protocol error or an error result.
func (a *appClient) call(name string, args map[string]any) map[string]any {
	a.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = name, args
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		a.t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		a.t.Fatalf("%s: %+v", name, res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		a.t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		a.t.Fatal(err)
	}
	return out
}

func (a *appClient) toolNames() (names []string, metas map[string]map[string]any) {
	a.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	res, err := a.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		a.t.Fatal(err)
	}
	metas = map[string]map[string]any{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Meta != nil {
			metas[tool.Name] = tool.Meta.AdditionalFields
		}
	}
	slices.Sort(names)
	return names, metas
}

// The board as an MCP App: the server declares the extension; list_keys and
// get_state name the view; the view's HTML is a resource of the extension's
// type; its two tools are listed only to a client that declares the
// extension, marked for the view alone, and read and write the board as
// the caller, a person's writes marked as such; a host without the
// extension sees the five tools as before.
func TestBoardAsAnMCPApp(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	plain := startServer(t, serverOpts{dir: dir, agent: "scout"})
	plain.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell", "body": "The LRU is undersized.\n", "expect_version": 0})
	app := startAppClient(t, serverOpts{dir: dir, agent: "ana"})

	if _, ok := app.init.Capabilities.Extensions[uiExtension]; !ok {
		t.Errorf("initialize does not declare %s: %+v", uiExtension, app.init.Capabilities)
	}
	names, metas := app.toolNames()
	if want := []string{"board_act", "board_view", "get_state", "link_state", "list_keys", "search_keys", "update_state"}; !slices.Equal(names, want) {
		t.Fatalf("an app host's tools: %q, want %q", names, want)
	}
	for _, name := range []string{"board_view", "board_act"} {
		ui, _ := metas[name]["ui"].(map[string]any)
		if vis, _ := ui["visibility"].([]any); len(vis) != 1 || vis[0] != "app" {
			t.Errorf("%s is not the view's alone: %+v", name, metas[name])
		}
	}
	for _, name := range []string{"list_keys", "get_state"} {
		ui, _ := metas[name]["ui"].(map[string]any)
		if ui["resourceUri"] != tools.ViewURI || metas[name]["ui/resourceUri"] != tools.ViewURI {
			t.Errorf("%s does not name the view: %+v", name, metas[name])
		}
	}
	tl, err := plain.listTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tl) != 5 {
		t.Errorf("a host without the extension lists %d tools, want the five", len(tl))
	}

	ctx, cancel := contextWithTimeout()
	defer cancel()
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = tools.ViewURI
	res, err := app.c.ReadResource(ctx, rr)
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %v", tools.ViewURI, err)
	}
	html, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || html.MIMEType != tools.ViewMIME || !strings.Contains(html.Text, `"ui/initialize"`) || strings.Contains(html.Text, "<script src=") {
		t.Errorf("the view's resource: %T %s, self-contained: %v", res.Contents[0], html.MIMEType, !strings.Contains(html.Text, "<script src="))
	}

	board := app.call("board_view", map[string]any{"page": "board"})
	if notes, _ := board["notes"].([]any); len(notes) < 2 || !strings.Contains(jsonString(board), "research/cache") {
		t.Errorf("board_view board: %s", jsonString(board))
	}
	n := app.call("board_view", map[string]any{"page": "note", "uri": "research/cache"})
	if note, _ := n["note"].(map[string]any); note["version"] != float64(1) || note["content"] != "The LRU is undersized.\n" || n["can_write"] != true {
		t.Errorf("board_view note: %s", jsonString(n))
	}
	plain.write(map[string]any{"uri": "research/cache", "digest": "Cache hit rate fell again", "body": "Still undersized.\n", "expect_version": 1})
	if ch := app.call("board_view", map[string]any{"page": "changes"}); ch["cursor"] == board["cursor"] {
		t.Errorf("the cursor did not move after a write: %s", jsonString(ch))
	}
	refused := app.call("board_act", map[string]any{"action": "edit", "uri": "research/cache", "expect": 1, "digest": "mine", "body": "my text\n"})
	moved, _ := refused["moved"].(map[string]any)
	if refused["ok"] != false || refused["error"] != "conflict" || moved["then"] != "The LRU is undersized.\n" || moved["now"] != "Still undersized.\n" || moved["version"] != float64(2) {
		t.Errorf("an edit over a moved note: %s", jsonString(refused))
	}
	saved := app.call("board_act", map[string]any{"action": "edit", "uri": "research/cache", "expect": 2, "digest": "mine", "body": "my text\n"})
	if saved["ok"] != true || saved["version"] != float64(3) {
		t.Fatalf("the edit after the merge: %s", jsonString(saved))
	}
	if c := fixtures.Git(t, dir, "log", "-1", "--format=%an%n%(trailers)"); !strings.HasPrefix(c, "ana\n") || !strings.Contains(c, "Blackboard-By: person") {
		t.Errorf("the view's write is not the person's:\n%s", c)
	}
	if past := app.call("board_view", map[string]any{"page": "note", "uri": "research/cache@1"}); past["can_write"] != false ||
		past["note"].(map[string]any)["content"] != "The LRU is undersized.\n" {
		t.Errorf("a past version in the view: %s", jsonString(past))
	}
}

// The view is scoped by the caller's token as the tools are: a token that
// may only read research sees no other topic and may not write.
func TestBoardViewScopedByToken(t *testing.T) {
	t.Parallel()
	dir, _, _ := accessBoard(t)
	reader := tokenAdd(t, dir, "reader", "--read", "research")
	app := startAppClient(t, serverOpts{dir: dir, token: reader})
	board := jsonString(app.call("board_view", map[string]any{"page": "board"}))
	if strings.Contains(board, "secret") || strings.Contains(board, "ops/") || !strings.Contains(board, "research/cache") {
		t.Errorf("a reader's board: %s", board)
	}
	if n := app.call("board_view", map[string]any{"page": "note", "uri": "research/cache"}); n["can_write"] != false {
		t.Errorf("a reader may write, says the view: %s", jsonString(n))
	}
	if r := app.call("board_act", map[string]any{"action": "edit", "uri": "research/cache", "expect": 1, "digest": "x", "body": "x"}); r["ok"] != false || r["error"] != "forbidden" {
		t.Errorf("a reader's write from the view: %s", jsonString(r))
	}
	ctx, cancel := contextWithTimeout()
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "board_view", map[string]any{"page": "note", "uri": "secret/plan"}
	if res, err := app.c.CallTool(ctx, req); err != nil || !res.IsError {
		t.Errorf("a hidden note through the view: %+v %v", res, err)
	}
}
