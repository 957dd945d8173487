package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// notifySoon bounds how long a test waits for a notification: far past
// the target of a second (the tests log the time each took), so that a
// loaded machine or a disk whose every fsync takes milliseconds (a
// person's save is committed before it is announced) fails no test.
const notifySoon = 10 * time.Second

// resourceClient is the official Go SDK's client on one server, with the
// notifications it received.
type resourceClient struct {
	t  *testing.T
	cs *sdk.ClientSession

	mu      sync.Mutex
	updated []string // resources/updated uris, in order
	listed  int      // resources/list_changed count
	changed chan struct{}
}

func newResourceClient(t *testing.T) (*resourceClient, *sdk.Client) {
	rc := &resourceClient{t: t, changed: make(chan struct{}, 64)}
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e-resources", Version: "1.0.0"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			rc.mu.Lock()
			rc.updated = append(rc.updated, req.Params.URI)
			rc.mu.Unlock()
			rc.changed <- struct{}{}
		},
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
			rc.mu.Lock()
			rc.listed++
			rc.mu.Unlock()
			rc.changed <- struct{}{}
		},
	})
	return rc, c
}

// resourcesOverStdio starts `serve` as o says and connects the Go SDK; the
// session ends with the test.
func resourcesOverStdio(t *testing.T, o serverOpts) *resourceClient {
	t.Helper()
	rc, c := newResourceClient(t)
	rc.cs, _ = connectGoSDK(t, o, c, &lockedBuffer{})
	t.Cleanup(func() { _ = rc.cs.Close() })
	return rc
}

// resourcesOverHTTP connects the Go SDK to a `serve --http`, with a bearer
// token when token is not "".
func resourcesOverHTTP(t *testing.T, s *httpServe, token string) *resourceClient {
	t.Helper()
	rc, c := newResourceClient(t)
	hc := s.client
	if token != "" {
		hc = &http.Client{Transport: headerTransport{header: []string{"Authorization", "Bearer " + token}}}
	}
	ctx, cancel := contextWithTimeout()
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc},
		&sdk.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("HTTP connect: %v\n%s", err, s.stderr.String())
	}
	t.Cleanup(func() { _ = cs.Close() })
	rc.cs = cs
	return rc
}

func (rc *resourceClient) list(cursor string) *sdk.ListResourcesResult {
	rc.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	res, err := rc.cs.ListResources(ctx, &sdk.ListResourcesParams{Cursor: cursor})
	if err != nil {
		rc.t.Fatalf("resources/list: %v", err)
	}
	return res
}

func (rc *resourceClient) read(uri string) (*sdk.ReadResourceResult, error) {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	return rc.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
}

func (rc *resourceClient) subscribe(uri string) {
	rc.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if err := rc.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		rc.t.Fatalf("subscribe %s: %v", uri, err)
	}
}

func (rc *resourceClient) unsubscribe(uri string) {
	rc.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if err := rc.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		rc.t.Fatalf("unsubscribe %s: %v", uri, err)
	}
}

func (rc *resourceClient) complete(arg, value string, context map[string]string) []string {
	rc.t.Helper()
	ctx, cancel := contextWithTimeout()
	defer cancel()
	params := &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "bb://acme/{topic}/{+key}"},
		Argument: sdk.CompleteParamsArgument{Name: arg, Value: value}}
	if context != nil {
		params.Context = &sdk.CompleteContext{Arguments: context}
	}
	res, err := rc.cs.Complete(ctx, params)
	if err != nil {
		rc.t.Fatalf("completion/complete %s=%q: %v", arg, value, err)
	}
	return res.Completion.Values
}

// notFound reports whether err is the protocol's "resource not found" of
// the pinned version: -32002 (from 2026-07-28 it is -32602).
func notFound(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == -32002
}

// waitUpdated waits for a resources/updated of uri and returns how long it
// took; it fails the test past notifySoon.
func (rc *resourceClient) waitUpdated(uri string, since time.Time) time.Duration {
	rc.t.Helper()
	deadline := time.After(notifySoon)
	for {
		rc.mu.Lock()
		i := slices.Index(rc.updated, uri)
		if i >= 0 {
			rc.updated = slices.Delete(rc.updated, i, i+1)
		}
		rc.mu.Unlock()
		if i >= 0 {
			return time.Since(since)
		}
		select {
		case <-rc.changed:
		case <-deadline:
			rc.t.Fatalf("no notifications/resources/updated for %s within %s", uri, notifySoon)
		}
	}
}

// quiet fails the test if any resources/updated or list_changed arrives
// within d.
func (rc *resourceClient) quiet(d time.Duration, why string) {
	rc.t.Helper()
	time.Sleep(d)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.updated) > 0 || rc.listed > 0 {
		rc.t.Errorf("%s: got resources/updated %q and %d list_changed; want none", why, rc.updated, rc.listed)
	}
	rc.updated, rc.listed = nil, 0
}

func (rc *resourceClient) waitListChanged() {
	rc.t.Helper()
	deadline := time.After(notifySoon)
	for {
		rc.mu.Lock()
		n := rc.listed
		rc.listed = 0
		rc.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-rc.changed:
		case <-deadline:
			rc.t.Fatalf("no notifications/resources/list_changed within %s", notifySoon)
		}
	}
}

// TestResourcesListReadComplete: a generated board's notes are resources,
// newest change first in pages, read as Markdown with front matter (a table
// as TSV), reachable through the template, whose topic and key complete.
func TestResourcesListReadComplete(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "acme")
	opts := fixtures.Options{Workspace: "acme", Notes: 150, Seed: 3}
	if err := fixtures.Generate(dir, opts); err != nil {
		t.Fatal(err)
	}
	runCLI(t, dir, "put", "data/latency-table", "--digest", "Latency by service", "--body", "x")
	rc := resourcesOverStdio(t, serverOpts{dir: dir, agent: "reader"})

	var all []*sdk.Resource
	cursor, pages := "", 0
	for {
		res := rc.list(cursor)
		all = append(all, res.Resources...)
		pages++
		if res.NextCursor == "" {
			break
		}
		cursor = res.NextCursor
	}
	manifest, err := fixtures.Manifest(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if pages < 2 || len(all) < len(manifest)+1 || len(all) > len(manifest)+2 { // and run/state/current
		t.Fatalf("resources/list gave %d notes in %d pages; want the %d generated and the one put, in pages of 100",
			len(all), pages, len(manifest))
	}
	if all[0].URI != "bb://acme/data/latency-table" || all[0].Description != "Latency by service" ||
		all[0].Name != "data/latency-table" || all[0].MIMEType != "text/markdown" {
		t.Errorf("newest resource = %+v; want the note just put, with its digest", all[0])
	}
	seen := map[string]bool{}
	for _, r := range all {
		if seen[r.URI] {
			t.Errorf("%s listed twice across pages", r.URI)
		}
		seen[r.URI] = true
	}

	res, err := rc.read("bb://acme/data/latency-table")
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("resources/read: %v %+v", err, res)
	}
	c := res.Contents[0]
	if c.MIMEType != "text/markdown" || !strings.HasPrefix(c.Text, "---\ndigest: Latency by service\n") ||
		!strings.Contains(c.Text, "\nversion: 1\n") || !strings.HasSuffix(c.Text, "\n---\nx") {
		t.Errorf("resources/read = %s %q; want Markdown with front matter", c.MIMEType, c.Text)
	}
	ctx, cancel := contextWithTimeout()
	defer cancel()
	if _, err := rc.cs.CallTool(ctx, &sdk.CallToolParams{Name: "update_state", Arguments: map[string]any{
		"uri": "data/p50", "digest": "p50 by service", "columns": []string{"service", "p50_ms"},
		"rows": [][]string{{"search", "12"}}, "expect_version": 0}}); err != nil {
		t.Fatal(err)
	}
	if res, err := rc.read("bb://acme/data/p50"); err != nil || res.Contents[0].MIMEType != "text/tab-separated-values" ||
		res.Contents[0].Text != "service\tp50_ms\nsearch\t12\n" {
		t.Errorf("resources/read of a table = %+v, %v; want its TSV", res, err)
	}
	// A missing note is the protocol's "resource not found", not a failure
	// of the server.
	if _, err := rc.read("bb://acme/data/no-such-note"); !notFound(err) {
		t.Errorf("resources/read of a missing note: %v; want resource not found (-32002)", err)
	}

	tpl, err := rc.cs.ListResourceTemplates(ctx, &sdk.ListResourceTemplatesParams{})
	var templates []string
	if err == nil {
		for _, t := range tpl.ResourceTemplates {
			templates = append(templates, t.URITemplate)
		}
		slices.Sort(templates)
	}
	if want := []string{"bb://acme/{topic}/{+key}", "bb://acme/{topic}/{+key}@{version}"}; err != nil || !slices.Equal(templates, want) {
		t.Fatalf("resources/templates/list = %q, %v; want %q", templates, err, want)
	}
	if got := rc.complete("topic", "da", nil); !slices.Equal(got, []string{"data"}) {
		t.Errorf("complete topic da = %q; want [data]", got)
	}
	if got := rc.complete("key", "latency-t", map[string]string{"topic": "data"}); !slices.Equal(got, []string{"latency-table"}) {
		t.Errorf("complete key latency-t in data = %q; want [latency-table]", got)
	}
	if got := rc.complete("key", "", map[string]string{"topic": "nosuch"}); len(got) != 0 {
		t.Errorf("complete key in a topic with no notes = %q", got)
	}
}

// TestResourcesSubscribe: a subscriber hears of a change to its note within
// a second, whoever made it: another process's write, a person's save; it
// hears list_changed when notes come; after unsubscribing it hears nothing.
// Over stdio and over HTTP's event stream.
func TestResourcesSubscribe(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	runCLI(t, dir, "put", "run/state/current", "--digest", "Day 1", "--body", "start")
	check := func(t *testing.T, rc *resourceClient, newNote string) {
		const uri = "bb://acme/run/state/current"
		rc.list("") // a lister hears list_changed
		rc.subscribe(uri)

		start := time.Now()
		runCLI(t, dir, "put", "run/state/current", "--digest", "Day 2: handed to the reviewer", "--body", "hand-off")
		t.Logf("another process's write: notified in %s", rc.waitUpdated(uri, start))

		start = time.Now()
		if err := os.WriteFile(filepath.Join(dir, "run", "state", "current.md"),
			// Text of this round's own: a save that brings back an earlier
			// version's text seconds after the branch moved past it is kept
			// as a sibling note (fsstore's stale.go), and one that keeps
			// most of an earlier version's lines is merged as made from it
			// (saves.go), not the note's new text.
			[]byte("---\ndigest: Day 2, as a person fixed it for "+newNote+"\n---\nhand-off, checked for "+newNote+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("a person's save: notified in %s", rc.waitUpdated(uri, start))

		start = time.Now()
		runCLI(t, dir, "put", newNote, "--digest", "Another note", "--body", "x")
		rc.waitListChanged()
		t.Logf("a new note: list_changed in %s", time.Since(start))

		rc.unsubscribe(uri)
		runCLI(t, dir, "put", "run/state/current", "--digest", "Day 3", "--body", "later")
		rc.quiet(600*time.Millisecond, "after unsubscribing")
	}
	t.Run("stdio", func(t *testing.T) {
		check(t, resourcesOverStdio(t, serverOpts{dir: dir, agent: "orchestrator"}), "run/new-1")
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTP(t, serverOpts{dir: dir})
		check(t, resourcesOverHTTP(t, s, ""), "run/new-2")
	})
}

// TestResourcesScopedByToken: a token without a topic sees none of its
// notes as resources, cannot read them, and hears nothing of their changes,
// over stdio and HTTP.
func TestResourcesScopedByToken(t *testing.T) {
	t.Parallel()
	dir, alice, _ := accessBoard(t)
	op := tokenAdd(t, dir, "op", "--write", "secret", "--write", "ops", "--write", "research")
	opEnv := append(mcpEnv(""), "BLACKBOARD_TOKEN="+op)
	// Each round writes content of its own: a write equal to what a note
	// holds changes nothing, and is heard of by nobody.
	check := func(t *testing.T, rc *resourceClient, round string) {
		var uris []string
		for _, r := range rc.list("").Resources {
			uris = append(uris, r.URI)
		}
		slices.Sort(uris)
		if want := []string{"bb://acme/ops/deploy", "bb://acme/research/cache"}; !slices.Equal(uris, want) {
			t.Errorf("alice lists %q; want %q", uris, want)
		}
		if _, err := rc.read("bb://acme/secret/plan"); !notFound(err) {
			t.Errorf("alice's read of secret/plan: %v; want resource not found (-32002), as for a missing note", err)
		}
		res, err := rc.read("bb://acme/research/cache")
		if err != nil || strings.Contains(res.Contents[0].Text, "secret") {
			t.Errorf("alice's read of research/cache names a hidden note or failed: %v %+v", err, res)
		}
		if got := rc.complete("topic", "", nil); !slices.Equal(got, []string{"ops", "research"}) {
			t.Errorf("alice completes topics %q", got)
		}
		rc.subscribe("bb://acme/secret/plan")
		rc.subscribe("bb://acme/ops/deploy")
		cmd := cliCommand(dir, "put", "secret/plan", "--digest", "Zanzibar, signed", "--body", "signed "+round)
		cmd.Env = opEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("put secret/plan: %v\n%s", err, out)
		}
		cmd = cliCommand(dir, "put", "secret/new", "--digest", "A new secret", "--body", "s "+round)
		cmd.Env = opEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("put secret/new: %v\n%s", err, out)
		}
		rc.quiet(800*time.Millisecond, "changes to hidden notes")
		start := time.Now()
		cmd = cliCommand(dir, "put", "ops/deploy", "--digest", "Deploy runbook v2", "--body", "steps 2 "+round)
		cmd.Env = opEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("put ops/deploy: %v\n%s", err, out)
		}
		rc.waitUpdated("bb://acme/ops/deploy", start)
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if len(rc.updated) > 0 {
			t.Errorf("alice heard of %q too", rc.updated)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		check(t, resourcesOverStdio(t, serverOpts{dir: dir, token: alice}), "stdio")
	})
	t.Run("http", func(t *testing.T) {
		s := startHTTP(t, serverOpts{dir: dir})
		check(t, resourcesOverHTTP(t, s, alice), "http")
	})
}

// TestLogNotifications: a session that sets a log level gets the server's
// own log lines as notifications/message (here: the server committing a
// person's edit), when its token reads every topic; a session whose token
// reads only some gets none of the lines about the board at large.
func TestLogNotifications(t *testing.T) {
	t.Parallel()
	dir, alice, _ := accessBoard(t)
	op := tokenAdd(t, dir, "op", "--write", "*")
	type logged struct {
		mu    sync.Mutex
		lines []string
	}
	var stderrs []*lockedBuffer
	connect := func(t *testing.T, token string) (*sdk.ClientSession, *logged) {
		got := &logged{}
		stderr := &lockedBuffer{}
		stderrs = append(stderrs, stderr)
		c := sdk.NewClient(&sdk.Implementation{Name: "e2e-logs", Version: "1.0.0"}, &sdk.ClientOptions{
			// Deprecated from protocol 2026-07-28; hosts on the protocol the
			// server pins still use it.
			LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) { //nolint:staticcheck // see above
				got.mu.Lock()
				got.lines = append(got.lines, string(req.Params.Level)+" "+fmt.Sprint(req.Params.Data))
				got.mu.Unlock()
			},
		})
		cs, _ := connectGoSDK(t, serverOpts{dir: dir, token: token}, c, stderr)
		t.Cleanup(func() { _ = cs.Close() })
		ctx, cancel := contextWithTimeout()
		defer cancel()
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil { //nolint:staticcheck // as above
			t.Fatalf("logging/setLevel: %v", err)
		}
		return cs, got
	}
	// Each server commits the edits it sees; one at a time, so that the
	// server of the session under test is the one that commits.
	edit := func(text string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond) // the server watches the tree
		if err := os.WriteFile(filepath.Join(dir, "secret", "plan.md"),
			[]byte("---\ndigest: Zanzibar, as a person wrote it\n---\n"+text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(what func() bool, failure func() string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !what() {
			if time.Now().After(deadline) {
				t.Fatal(failure())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	opSession, opLog := connect(t, op)
	edit("terms, v2")
	waitFor(func() bool {
		opLog.mu.Lock()
		defer opLog.mu.Unlock()
		lines := strings.Join(opLog.lines, "\n")
		return strings.Contains(lines, "info committed a person's edit") && strings.Contains(lines, "secret/plan")
	}, func() string {
		return fmt.Sprintf("the session that may read everything got no log line of the person's edit: %q\nserver log:\n%s",
			opLog.lines, stderrs[0])
	})
	_ = opSession.Close()

	_, aliceLog := connect(t, alice)
	edit("terms, v3")
	waitFor(func() bool { return strings.Contains(stderrs[1].String(), "committed a person's edit") },
		func() string { return "alice's server did not commit the edit:\n" + stderrs[1].String() })
	aliceLog.mu.Lock()
	defer aliceLog.mu.Unlock()
	for _, l := range aliceLog.lines {
		if strings.Contains(l, "secret") {
			t.Errorf("alice, without the secret topic, got the log line %q", l)
		}
	}
}

// TestProgressWhileTheWorkspaceIsBusy: a write that asks for progress and
// waits for a workspace another process holds hears notifications/progress,
// rising, until it is answered; one that asks for none hears none.
func TestProgressWhileTheWorkspaceIsBusy(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	var mu sync.Mutex
	var progress []float64
	var messages []string
	c := sdk.NewClient(&sdk.Implementation{Name: "e2e-progress", Version: "1.0.0"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			messages = append(messages, req.Params.Message)
			mu.Unlock()
		},
	})
	cs, _ := connectGoSDK(t, serverOpts{dir: dir, agent: "writer"}, c, &lockedBuffer{})
	t.Cleanup(func() { _ = cs.Close() })
	ctx, cancel := contextWithTimeout()
	defer cancel()

	// Another writer holds the workspace for 1.5 s.
	lock, err := os.OpenFile(filepath.Join(dir, ".blackboard", "write.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(1500*time.Millisecond, func() { _ = unix.Flock(int(lock.Fd()), unix.LOCK_UN) })

	params := &sdk.CallToolParams{Name: "update_state", Arguments: map[string]any{
		"uri": "run/busy", "digest": "Written once the workspace was free", "body": "x", "expect_version": 0}}
	params.SetProgressToken("write-1")
	start := time.Now()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("update_state: %v %+v", err, res)
	}
	took := time.Since(start)
	mu.Lock()
	got, msgs := slices.Clone(progress), slices.Clone(messages)
	mu.Unlock()
	if took < time.Second || len(got) < 2 || !slices.IsSorted(got) || got[0] == got[len(got)-1] {
		t.Errorf("a write that waited %s heard progress %v; want at least two, rising", took, got)
	}
	if len(msgs) > 0 && !strings.Contains(msgs[0], "update_state: still working") {
		t.Errorf("progress message %q", msgs[0])
	}

	mu.Lock()
	progress = nil
	mu.Unlock()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(800*time.Millisecond, func() { _ = unix.Flock(int(lock.Fd()), unix.LOCK_UN) })
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "update_state", Arguments: map[string]any{
		"uri": "run/busy-2", "digest": "No progress asked", "body": "x", "expect_version": 0}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(progress) != 0 {
		t.Errorf("a call without a progressToken heard progress %v", progress)
	}
}

// TestResourcesSubscribeMCPGo: mcp-go's client, under the pinned protocol
// (resources/subscribe) and under 2026-07-28 (subscriptions/listen with a
// filter), hears of another process's write to the note it subscribed to.
func TestResourcesSubscribeMCPGo(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	const note = "bb://acme/run/state/current"
	for _, version := range []string{protocolVersion, mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			tr := transport.NewStdioWithOptions(testBinary, nil, serveArgs(dir),
				transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
					cmd := exec.CommandContext(ctx, command, args...)
					cmd.Env = mcpEnv("orchestrator")
					return cmd, nil
				}))
			c := client.NewClient(tr, client.WithProtocolVersion(version))
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			updated := make(chan string, 16)
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationResourceUpdated) {
					updated <- fmt.Sprint(n.Params.AdditionalFields["uri"])
				}
			})
			ctx, cancel := contextWithTimeout()
			defer cancel()
			init := mcp.InitializeRequest{}
			init.Params.ProtocolVersion = version
			init.Params.ClientInfo = mcp.Implementation{Name: "e2e-mcp-go-resources", Version: "1"}
			if _, err := c.Initialize(ctx, init); err != nil {
				t.Fatalf("initialize %s: %v", version, err)
			}
			if version == protocolVersion {
				sub := mcp.SubscribeRequest{}
				sub.Params.URI = note
				if err := c.Subscribe(ctx, sub); err != nil { //nolint:staticcheck // the pinned protocol subscribes so
					t.Fatal(err)
				}
			} else {
				stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ResourceSubscriptions: []string{note}}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				time.Sleep(200 * time.Millisecond) // the stream is open
			}
			runCLI(t, dir, "put", "run/state/current", "--digest", "Handed over under "+version, "--body", "x")
			select {
			case got := <-updated:
				if got != note {
					t.Errorf("resources/updated for %q, want %q", got, note)
				}
			case <-time.After(notifySoon):
				t.Fatalf("no resources/updated within %s", notifySoon)
			}
		})
	}
}
