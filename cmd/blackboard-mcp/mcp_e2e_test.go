package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// The tools through mcp-go's stdio client against the real binary. Each test
// has a workspace and a server of its own; the files and git history are
// checked after the session.

// ledger is the history a test expects `git log --format=%an%x09%s` to
// show, one line per acknowledged write.
type ledger []string

func (l *ledger) add(agent, op, key string, version int, what string) {
	*l = append(*l, fmt.Sprintf("%s\t%s %s v%d: %s", agent, op, key, version, what))
}

// newestFirst is the ledger as git log prints it, after the init commit.
func (l ledger) newestFirst() []string {
	out := slices.Clone(l)
	slices.Reverse(out)
	return append(out, "blackboard-mcp\tinit workspace acme")
}

func TestMCPUpdateState(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "writer-a")
	var log ledger
	const key = "research/cache/latency"

	w := s.write(map[string]any{"uri": key, "digest": "Cache hit rate fell to 71%", "body": "first\n", "expect_version": 0})
	if w.Version != 1 || w.Digest != "Cache hit rate fell to 71%" || len(w.Warnings) != 0 {
		t.Errorf("create with expect_version 0 = %+v; want version 1, the digest, no warnings", w)
	}
	log.add("writer-a", "update", key, 1, "Cache hit rate fell to 71%")
	w = s.write(map[string]any{"uri": "bb://acme/Research/Cache/Latency", "digest": "The LRU  is\nundersized", "body": "second\n", "expect_version": 1})
	if w.Version != 2 || w.Digest != "The LRU is undersized" || len(w.Warnings) != 0 {
		t.Errorf("update with expect_version 1 (upper-case full address, a two-line digest) = %+v; want version 2, the digest folded to one line", w)
	}
	log.add("writer-a", "update", key, 2, "The LRU is undersized")

	t.Run("conflict", func(t *testing.T) {
		s := s.on(t)
		for _, ev := range []int{0, 1, 3} {
			msg := s.fail("update_state", map[string]any{"uri": key, "digest": "stale", "body": "x", "expect_version": ev}, "conflict")
			for _, want := range []string{"version 2", "writer-a", `"The LRU is undersized"`, "expect_version 2", "bb://acme/" + key} {
				if !strings.Contains(msg, want) {
					t.Errorf("expect_version %d: conflict %q does not name %s", ev, msg, want)
				}
			}
		}
		msg := s.fail("update_state", map[string]any{"uri": "research/never", "digest": "d", "body": "x", "expect_version": 4}, "conflict")
		if !strings.Contains(msg, "expect_version 0") {
			t.Errorf("expect_version 4 on a note that never existed: %q; want it to say how to create it", msg)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		s := s.on(t)
		before := len(gitLog(t, dir))
		base := func(extra map[string]any) map[string]any {
			args := map[string]any{"uri": key, "digest": "d", "body": "b", "expect_version": 2}
			for k, v := range extra {
				if v == nil {
					delete(args, k)
				} else {
					args[k] = v
				}
			}
			return args
		}
		const grammar = "bb://<workspace>/<topic>/<key...>"
		for _, tc := range []struct {
			name    string
			args    map[string]any
			code    string
			mention string
		}{
			{"missing digest", base(map[string]any{"digest": nil}), "invalid", "digest is required"},
			{"empty digest", base(map[string]any{"digest": " \n\t "}), "invalid", "digest is required"},
			{"body and append", base(map[string]any{"append": "more"}), "invalid", "exactly one content form"},
			{"body and source_path", base(map[string]any{"source_path": "/x"}), "invalid", "exactly one content form"},
			{"body and columns", base(map[string]any{"columns": []string{"a"}, "rows": [][]string{{"1"}}}), "invalid", "exactly one content form"},
			{"no content", base(map[string]any{"body": nil}), "invalid", "exactly one content form"},
			{"parent segment", base(map[string]any{"uri": "../x"}), "invalid", grammar},
			{"parent inside", base(map[string]any{"uri": "research/../../etc/passwd"}), "invalid", grammar},
			{"absolute path", base(map[string]any{"uri": "/etc/passwd"}), "invalid", grammar},
			{"dot git", base(map[string]any{"uri": ".git/config"}), "invalid", grammar},
			{"blackboard dir", base(map[string]any{"uri": ".blackboard/index"}), "invalid", grammar},
			{"name ending in .md", base(map[string]any{"uri": "research/notes.md"}), "invalid", grammar},
			{"name ending in .lock", base(map[string]any{"uri": "research/index.lock"}), "invalid", grammar},
			{"device name", base(map[string]any{"uri": "research/con"}), "invalid", grammar},
			{"backslash", base(map[string]any{"uri": `research\..\x`}), "invalid", grammar},
			{"NUL", base(map[string]any{"uri": "research/a\x00b"}), "invalid", grammar},
			{"topic only", base(map[string]any{"uri": "research"}), "invalid", grammar},
			{"nine segments", base(map[string]any{"uri": "a/b/c/d/e/f/g/h/i"}), "invalid", grammar},
			{"other workspace", base(map[string]any{"uri": "bb://other/research/x"}), "invalid", ""},
			{"unknown argument", base(map[string]any{"color": "red"}), "invalid", `unknown argument "color"`},
			{"expect_version as a string", base(map[string]any{"expect_version": "2"}), "invalid", "expect_version has the wrong type"},
			{"expect_version fractional", base(map[string]any{"expect_version": 1.5}), "invalid", "expect_version has the wrong type"},
			{"body as a number", base(map[string]any{"body": 42}), "invalid", "body has the wrong type"},
			{"sources as a string", base(map[string]any{"sources": "research/x"}), "invalid", "sources has the wrong type"},
			{"rows as strings", base(map[string]any{"body": nil, "columns": []string{"a"}, "rows": []string{"1"}}), "invalid", "wrong type"},
			{"negative expect_version", base(map[string]any{"expect_version": -1}), "invalid", "expect_version"},
			{"confidence over 1", base(map[string]any{"confidence": 1.5}), "invalid", "confidence"},
			{"kind with spaces", base(map[string]any{"kind": "a finding"}), "invalid", "kind"},
			{"source outside the grammar", base(map[string]any{"sources": []string{"../x"}}), "invalid", "source"},
			{"ragged table", base(map[string]any{"body": nil, "expect_version": 0, "uri": "data/ragged", "columns": []string{"a", "b"}, "rows": [][]string{{"1"}}}), "invalid", "row 1 has 1 cells for 2 columns"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := s.on(t)
				msg := s.fail("update_state", tc.args, tc.code)
				if !strings.Contains(msg, tc.mention) {
					t.Errorf("error %q does not mention %q", msg, tc.mention)
				}
			})
		}
		if after := len(gitLog(t, dir)); after != before {
			t.Errorf("failed writes made %d commits; want none", after-before)
		}
		if e := s.get([]string{key}, "ref", 0); len(e.Items) != 1 || e.Items[0].Version != 2 {
			t.Errorf("after the failed writes: %+v; want version 2", e.Items)
		}
	})

	t.Run("no expect_version warns", func(t *testing.T) {
		s := s.on(t)
		for v := 1; v <= 2; v++ {
			w := s.write(map[string]any{"uri": "research/loose", "digest": "Loose " + strconv.Itoa(v), "body": "x"})
			want := fmt.Sprintf("no expect_version: pass expect_version %d on your next write of this note", v)
			if w.Version != v || !slices.Contains(w.Warnings, want) {
				t.Errorf("write %d without expect_version = %+v; want version %d and the warning %q", v, w, v, want)
			}
			log.add("writer-a", "update", "research/loose", v, "Loose "+strconv.Itoa(v))
		}
	})

	t.Run("out of line", func(t *testing.T) {
		s := s.on(t)
		body := strings.Repeat("The cache warms slowly after each deploy. ", 250)[:10241]
		w := s.write(map[string]any{"uri": "research/big", "digest": "A long measurement log", "body": body, "expect_version": 0})
		log.add("writer-a", "update", "research/big", 1, "A long measurement log")
		if w.Version != 1 || len(w.Warnings) != 1 || !strings.Contains(w.Warnings[0], "out of line") || !strings.Contains(w.Warnings[0], "big.blob.md") {
			t.Errorf("a 10,241-byte body = %+v; want version 1 and a warning that it is stored out of line in big.blob.md", w)
		}
		blob, err := os.ReadFile(filepath.Join(dir, "research", "big.blob.md"))
		if err != nil || string(blob) != body {
			t.Errorf("research/big.blob.md: %d bytes (%v); want the body, 10241 bytes", len(blob), err)
		}
		fm, noteBody := readNote(t, dir, "research/big")
		if fm["blob"] != "big.blob.md" || fm["bytes"] != 10241 || noteBody != "" {
			t.Errorf("research/big.md: blob %v, bytes %v, body %q; want big.blob.md, 10241, empty", fm["blob"], fm["bytes"], noteBody)
		}
		e := s.get([]string{"research/big"}, "full", 20000)
		if len(e.Items) != 1 || e.Items[0].Body != body || e.Truncated {
			t.Errorf("get_state full of an out-of-line note: body of %d bytes, truncated %v; want the 10,241 bytes inline", len(e.Items[0].Body), e.Truncated)
		}

		// 10,240 bytes is the threshold: still inline. Rewriting the note
		// small removes its blob in the same commit.
		w = s.write(map[string]any{"uri": "research/big", "digest": "Exactly at the threshold", "body": body[:10240], "expect_version": 1})
		log.add("writer-a", "update", "research/big", 2, "Exactly at the threshold")
		if len(w.Warnings) != 0 {
			t.Errorf("a 10,240-byte body warns %q; want it inline without a warning", w.Warnings)
		}
		if _, err := os.Stat(filepath.Join(dir, "research", "big.blob.md")); !os.IsNotExist(err) {
			t.Errorf("the blob is still on disk after the note went back inline (%v)", err)
		}
		if _, noteBody := readNote(t, dir, "research/big"); noteBody != body[:10240] {
			t.Errorf("research/big.md holds %d bytes of body; want 10240 inline", len(noteBody))
		}
	})

	t.Run("table", func(t *testing.T) {
		s := s.on(t)
		w := s.write(map[string]any{"uri": "data/latency", "digest": "Latency by service", "expect_version": 0,
			"columns": []string{"service", "p50_ms"}, "rows": [][]string{{"search", "12"}, {"auth", "7"}}})
		log.add("writer-a", "update", "data/latency", 1, "Latency by service")
		if w.Version != 1 {
			t.Errorf("create a table = %+v", w)
		}
		w = s.write(map[string]any{"uri": "data/latency", "digest": "Latency by service, with billing", "rows": [][]string{{"billing", "30"}}})
		log.add("writer-a", "append", "data/latency", 2, "Latency by service, with billing")
		if w.Version != 2 || len(w.Warnings) != 0 {
			t.Errorf("rows alone (appended, no expect_version) = %+v; want version 2 and no warning", w)
		}
		e := s.get([]string{"data/latency"}, "full", 0)
		if want := "service\tp50_ms\nsearch\t12\nauth\t7\nbilling\t30\n"; e.Items[0].Body != want {
			t.Errorf("full read of the table = %q; want %q", e.Items[0].Body, want)
		}
		e = s.get([]string{"data/latency"}, "fields", 0, "columns")
		if !slices.Equal(e.Items[0].Columns, []string{"service", "p50_ms"}) {
			t.Errorf("fields columns = %q", e.Items[0].Columns)
		}
		fm, _ := readNote(t, dir, "data/latency")
		if fmt.Sprint(fm["columns"]) != "[service p50_ms]" {
			t.Errorf("data/latency.md columns: %v", fm["columns"])
		}
		s.fail("update_state", map[string]any{"uri": "data/latency", "digest": "d", "append": "text"}, "invalid")
		s.fail("update_state", map[string]any{"uri": "data/latency", "digest": "d", "rows": [][]string{{"one"}}}, "invalid")
		s.fail("update_state", map[string]any{"uri": key, "digest": "d", "rows": [][]string{{"one"}}}, "invalid")
	})

	t.Run("append text", func(t *testing.T) {
		s := s.on(t)
		s.write(map[string]any{"uri": "log/run", "digest": "Run log", "body": "line1", "expect_version": 0})
		log.add("writer-a", "update", "log/run", 1, "Run log")
		w := s.write(map[string]any{"uri": "log/run", "digest": "Run log, two lines", "append": "line2\n"})
		log.add("writer-a", "append", "log/run", 2, "Run log, two lines")
		if w.Version != 2 || len(w.Warnings) != 0 {
			t.Errorf("append = %+v; want version 2 and no warning (appends need no expect_version)", w)
		}
		if e := s.get([]string{"log/run"}, "full", 0); e.Items[0].Body != "line1\nline2\n" {
			t.Errorf("body after append = %q; want %q", e.Items[0].Body, "line1\nline2\n")
		}
	})

	t.Run("source_path", func(t *testing.T) {
		s := s.on(t)
		parent := filepath.Dir(dir)
		md := "# Design\n\nWhy the cache.\n\n## Eviction\n\nLRU, for now.\n"
		mdPath := filepath.Join(parent, "docs", "design.md")
		csvPath := filepath.Join(parent, "metrics.csv")
		outside := filepath.Join(t.TempDir(), "secret.txt")
		for p, content := range map[string]string{mdPath: md, csvPath: "host,cpu\na,10\nb,20\nc,30\n", outside: "not for agents\n"} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w := s.write(map[string]any{"uri": "docs/design", "digest": "The design doc", "source_path": mdPath, "expect_version": 0})
		log.add("writer-a", "update", "docs/design", 1, "The design doc")
		if want := fmt.Sprintf("markdown, %d bytes, 7 lines; headings: # Design | ## Eviction", len(md)); w.Summary != want {
			t.Errorf("source_path summary = %q; want %q", w.Summary, want)
		}
		if e := s.get([]string{"docs/design"}, "full", 0); e.Items[0].Body != md {
			t.Errorf("stored source = %q; want the file's content", e.Items[0].Body)
		}
		w = s.write(map[string]any{"uri": "data/hosts", "digest": "Host CPU", "source_path": csvPath, "expect_version": 0})
		log.add("writer-a", "update", "data/hosts", 1, "Host CPU")
		if !strings.Contains(w.Summary, "columns: host, cpu; 3 rows") {
			t.Errorf("CSV summary = %q; want its columns and row count", w.Summary)
		}

		link := filepath.Join(parent, "innocent.txt")
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		linkDir := filepath.Join(parent, "shared")
		if err := os.Symlink(filepath.Dir(outside), linkDir); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ name, path, code string }{
			{"outside the roots", outside, "forbidden"},
			{"symlink to a file outside", link, "forbidden"},
			{"through a symlinked directory", filepath.Join(linkDir, "secret.txt"), "forbidden"},
			{"dot-dot out of the root", parent + "/" + mustRel(t, parent, outside), "forbidden"},
			{"missing", filepath.Join(parent, "nope.md"), "not_found"},
			{"a directory", filepath.Join(parent, "docs"), "invalid"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := s.on(t)
				msg := s.fail("update_state", map[string]any{"uri": "docs/leak", "digest": "d", "source_path": tc.path, "expect_version": 0}, tc.code)
				if strings.Contains(msg, "not for agents") {
					t.Errorf("the refusal leaks the file's content: %q", msg)
				}
			})
		}
		if e := s.get([]string{"docs/leak"}, "ref", 0); e.Items[0].Error != "not_found" {
			t.Errorf("a refused source_path wrote a note: %+v", e.Items[0])
		}
	})

	t.Run("sources confidence kind", func(t *testing.T) {
		s := s.on(t)
		w := s.write(map[string]any{"uri": "research/cause", "digest": "The LRU is undersized", "body": "why", "expect_version": 0,
			"sources": []string{key, "bb://acme/research/nope"}, "confidence": 0.8, "kind": "finding"})
		log.add("writer-a", "update", "research/cause", 1, "The LRU is undersized")
		if !slices.Equal(w.Warnings, []string{"source bb://acme/research/nope does not exist"}) {
			t.Errorf("warnings %q; want one naming the missing source", w.Warnings)
		}
		it := s.get([]string{"research/cause"}, "fields", 0).Items[0]
		wantKeys := []string{"uri", "version", "kind", "author", "updated", "confidence", "sources"}
		if !slices.Equal(it.keys, wantKeys) {
			t.Errorf("fields item keys %q; want %q", it.keys, wantKeys)
		}
		if it.Kind != "finding" || it.Author != "writer-a" || it.Confidence == nil || *it.Confidence != 0.8 ||
			!slices.Equal(it.Sources, []string{uri(key), uri("research/nope")}) {
			t.Errorf("fields = %+v; want kind finding, author writer-a, confidence 0.8, canonical sources", it)
		}
		if ts, err := time.Parse(time.RFC3339, it.Updated); err != nil || time.Since(ts) > time.Hour {
			t.Errorf("updated %q is not a recent RFC 3339 time (%v)", it.Updated, err)
		}
		// Without kind, a new note is a "note".
		s.write(map[string]any{"uri": "research/plain", "digest": "Plain", "body": "x", "expect_version": 0})
		log.add("writer-a", "update", "research/plain", 1, "Plain")
		if it := s.get([]string{"research/plain"}, "fields", 0, "kind").Items[0]; it.Kind != "note" {
			t.Errorf("default kind %q; want note", it.Kind)
		}
	})

	s.closeClean()
	if got, want := gitLog(t, dir), log.newestFirst(); !slices.Equal(got, want) {
		t.Errorf("git log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkWorkspace(t, dir)
}

func TestMCPConcurrentAppends(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	a := startMCPGo(t, dir, "agent-a")
	const key = "run/journal"
	a.write(map[string]any{"uri": key, "digest": "Shared journal", "body": "# Journal\n", "expect_version": 0})
	b := startServer(t, serverOpts{dir: dir, agent: "agent-b", client: goSDK})

	const fromA, fromB = 20, 8
	type ack struct {
		line    string
		version int
		err     string
	}
	acks := make(chan ack, fromA+fromB)
	appendLine := func(s *session, line string) {
		// t.Fatal must not run off the test goroutine: errors are sent back.
		ctx, cancel := contextWithTimeout()
		defer cancel()
		res, err := s.callTool(ctx, "update_state", map[string]any{"uri": key, "digest": "Journal: " + line, "append": line + "\n"})
		switch {
		case err != nil:
			acks <- ack{line: line, err: err.Error()}
		case res.isError:
			acks <- ack{line: line, err: res.text}
		default:
			var w writeResult
			if err := json.Unmarshal([]byte(res.text), &w); err != nil {
				acks <- ack{line: line, err: fmt.Sprintf("result %q: %v", res.text, err)}
				return
			}
			if len(w.Warnings) != 0 {
				acks <- ack{line: line, err: fmt.Sprintf("append warned %q", w.Warnings)}
				return
			}
			acks <- ack{line: line, version: w.Version}
		}
	}
	start := make(chan struct{})
	var lines []string
	for i := range fromA {
		line := fmt.Sprintf("a-%02d", i)
		lines = append(lines, line)
		go func() { <-start; appendLine(a, line) }()
	}
	for i := range fromB {
		line := fmt.Sprintf("b-%02d", i)
		lines = append(lines, line)
		go func() { <-start; appendLine(b, line) }()
	}
	close(start)
	versions := map[int]string{}
	for range fromA + fromB {
		r := <-acks
		if r.err != "" {
			t.Errorf("append %s: %s", r.line, r.err)
			continue
		}
		if prev, dup := versions[r.version]; dup {
			t.Errorf("appends %s and %s both got version %d", prev, r.line, r.version)
		}
		versions[r.version] = r.line
	}
	for v := 2; v <= 1+fromA+fromB; v++ {
		if _, ok := versions[v]; !ok {
			t.Errorf("no append was acknowledged with version %d; versions: %v", v, versions)
		}
	}

	body := a.get([]string{key}, "full", 20000).Items[0].Body
	got := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if got[0] != "# Journal" || len(got) != 1+fromA+fromB {
		t.Errorf("body has %d lines; want the header and %d appended lines:\n%s", len(got), fromA+fromB, body)
	}
	for _, l := range lines {
		if !slices.Contains(got, l) {
			t.Errorf("line %s is missing from the body", l)
		}
	}
	// The order in the body is the order of the versions: each append saw
	// all the earlier ones.
	for i, l := range got[1:] {
		if versions[i+2] != l {
			t.Errorf("line %d of the body is %s, but version %d appended %s", i+1, l, i+2, versions[i+2])
		}
	}

	a.closeClean()
	b.closeClean()
	hist := gitLog(t, dir, key+".md")
	if len(hist) != 1+fromA+fromB {
		t.Errorf("git log of %s has %d commits; want 1 create and %d appends:\n%s", key, len(hist), fromA+fromB, strings.Join(hist, "\n"))
	}
	re := regexp.MustCompile(`^(agent-a|agent-b)\tappend run/journal v(\d+): Journal: ([ab]-\d\d)$`)
	for _, h := range hist[:len(hist)-1] {
		m := re.FindStringSubmatch(h)
		if m == nil {
			t.Errorf("commit %q is not an append by agent-a or agent-b", h)
			continue
		}
		v, _ := strconv.Atoi(m[2])
		if versions[v] != m[3] || m[1] != "agent-"+m[3][:1] {
			t.Errorf("commit %q: version %d was acknowledged for %s", h, v, versions[v])
		}
	}
	checkWorkspace(t, dir)
}

// seedNotes writes n notes topic/n-00... with distinct digests and bodies,
// each created with expect_version 0.
func seedNotes(s *session, topic string, n int) []string {
	s.t.Helper()
	var uris []string
	for i := range n {
		u := fmt.Sprintf("%s/n-%02d", topic, i)
		s.write(map[string]any{"uri": u, "expect_version": 0,
			"digest": fmt.Sprintf("Note %d of %s: the p99 latency of shard %d held at %d ms through the week", i, topic, i, 100+i),
			"body":   fmt.Sprintf("# Note %d\n\nMeasured on shard %d.\n", i, i)})
		uris = append(uris, uri(u))
	}
	return uris
}

func TestMCPGetState(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "reader")
	uris := seedNotes(s, "bulk", 30)
	s.write(map[string]any{"uri": "bulk/n-01", "digest": "Note 1, revised", "body": "# Note 1\n\nRevised.\n", "expect_version": 1,
		"kind": "finding", "confidence": 0.5, "sources": []string{"bulk/n-00"}})

	t.Run("modes", func(t *testing.T) {
		s := s.on(t)
		three := uris[:3]
		for _, tc := range []struct {
			mode   string
			fields []string
			keys   [][]string // per item
		}{
			{"ref", nil, [][]string{{"uri", "version"}}},
			{"", nil, [][]string{{"uri", "version", "digest", "est_tokens"}}},
			{"digest", nil, [][]string{{"uri", "version", "digest", "est_tokens"}}},
			{"fields", nil, [][]string{{"uri", "version", "kind", "author", "updated"},
				{"uri", "version", "kind", "author", "updated", "confidence", "sources"}, {"uri", "version", "kind", "author", "updated"}}},
			{"fields", []string{"kind", "confidence"}, [][]string{{"uri", "version", "kind"}, {"uri", "version", "kind", "confidence"}, {"uri", "version", "kind"}}},
			{"full", nil, [][]string{{"uri", "version", "digest", "body"}}},
		} {
			e := s.get(three, tc.mode, 0, tc.fields...)
			if !slices.Equal(e.uris(), three) || e.Truncated || e.Omitted != 0 || len(e.OmittedURIs) != 0 {
				t.Errorf("mode %q fields %q: items %q truncated %v omitted %d %q; want the three in order, nothing omitted",
					tc.mode, tc.fields, e.uris(), e.Truncated, e.Omitted, e.OmittedURIs)
				continue
			}
			for i, it := range e.Items {
				want := tc.keys[min(i, len(tc.keys)-1)]
				if !slices.Equal(it.keys, want) {
					t.Errorf("mode %q fields %q: item %s has keys %q; want %q", tc.mode, tc.fields, it.URI, it.keys, want)
				}
			}
			switch tc.mode {
			case "full":
				if e.Items[2].Body != "# Note 2\n\nMeasured on shard 2.\n" || e.Items[1].Digest != "Note 1, revised" {
					t.Errorf("full: %+v", e.Items)
				}
			case "ref":
				if e.Items[0].Version != 1 || e.Items[1].Version != 2 {
					t.Errorf("ref versions %d, %d; want 1, 2", e.Items[0].Version, e.Items[1].Version)
				}
			case "digest", "":
				if e.Items[0].EstTokens <= 0 || !strings.HasPrefix(e.Items[0].Digest, "Note 0 of bulk") {
					t.Errorf("digest item %+v", e.Items[0])
				}
			}
		}

		text := s.ok("get_state", map[string]any{"uris": three, "mode": "table", "fields": []string{"kind", "author"}})
		// The address start the three rows share is said once, in the header.
		if want := "uri (after " + uri("bulk/") + ")\tversion\t"; !strings.HasPrefix(text, want) || strings.Count(text, uri("bulk/")) != 1 {
			t.Errorf("table %q; want it to start %q and name %q once", text, want, uri("bulk/"))
		}
		header, rows, e := parseTable(t, text, 2000)
		if want := []string{"uri", "version", "digest", "kind", "author"}; !slices.Equal(header, want) {
			t.Errorf("table header %q; want %q", header, want)
		}
		want := [][]string{
			{uris[0], "1", "Note 0 of bulk: the p99 latency of shard 0 held at 100 ms through the week", "note", "reader"},
			{uris[1], "2", "Note 1, revised", "finding", "reader"},
			{uris[2], "1", "Note 2 of bulk: the p99 latency of shard 2 held at 102 ms through the week", "note", "reader"},
		}
		if !slices.EqualFunc(rows, want, slices.Equal) {
			t.Errorf("table rows %q; want %q", rows, want)
		}
		if e.Truncated || e.Omitted != 0 {
			t.Errorf("table envelope %+v", e)
		}
	})

	t.Run("batch with missing and invalid", func(t *testing.T) {
		s := s.on(t)
		e := s.get([]string{"bulk/n-00", "bulk/missing", "../x", "BULK/N-02", "bb://other/bulk/n-00", "bulk/n-00"}, "digest", 0)
		want := []struct{ uri, err string }{
			{uris[0], ""}, {uri("bulk/missing"), "not_found"}, {"../x", "invalid"}, {uris[2], ""}, {"bb://other/bulk/n-00", "invalid"}, {uris[0], ""},
		}
		if len(e.Items) != len(want) {
			t.Fatalf("items %q; want %d", e.uris(), len(want))
		}
		for i, w := range want {
			it := e.Items[i]
			if it.URI != w.uri || it.Error != w.err {
				t.Errorf("item %d = uri %q error %q; want %q %q", i, it.URI, it.Error, w.uri, w.err)
			}
			if w.err != "" && !slices.Equal(it.keys, []string{"uri", "error"}) {
				t.Errorf("error item %d has keys %q; want uri, error", i, it.keys)
			}
		}
		header, rows, _ := parseTable(t, s.ok("get_state", map[string]any{"uris": []string{"bulk/n-00", "bulk/missing", "../x"}, "mode": "table"}), 2000)
		if len(header) != 3 || len(rows) != 3 || rows[1][2] != "(not_found)" || rows[2][2] != "(invalid)" {
			t.Errorf("table with errors: %q %q", header, rows)
		}
	})

	t.Run("invalid calls", func(t *testing.T) {
		s := s.on(t)
		var many []string
		for i := range 101 {
			many = append(many, fmt.Sprintf("bulk/x-%d", i))
		}
		for _, tc := range []struct {
			name    string
			args    map[string]any
			mention string
		}{
			{"101 uris", map[string]any{"uris": many}, "1 to 100"},
			{"no uris", map[string]any{"uris": []string{}}, "1 to 100"},
			{"uris missing", map[string]any{}, "1 to 100"},
			{"uris as a string", map[string]any{"uris": "bulk/n-00"}, "wrong type"},
			{"budget over 20000", map[string]any{"uris": uris[:1], "budget_tokens": 20001}, "20000"},
			{"negative budget", map[string]any{"uris": uris[:1], "budget_tokens": -5}, "20000"},
			{"unknown mode", map[string]any{"uris": uris[:1], "mode": "everything"}, "mode"},
			{"unknown field", map[string]any{"uris": uris[:1], "mode": "fields", "fields": []string{"password"}}, `"password"`},
			{"unknown argument", map[string]any{"uris": uris[:1], "verbose": true}, "unknown argument"},
			{"budget too small to name the addresses", map[string]any{"uris": uris, "budget_tokens": 20}, "too small"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := s.on(t)
				if msg := s.fail("get_state", tc.args, "invalid"); !strings.Contains(msg, tc.mention) {
					t.Errorf("error %q does not mention %q", msg, tc.mention)
				}
			})
		}
		s.get(many[:100], "ref", 20000) // the limit itself is fine
	})

	t.Run("budget", func(t *testing.T) {
		s := s.on(t)
		// The least budget that can name every address is what the refusal
		// says; from there up, every budget gives an honest envelope.
		msg := s.fail("get_state", map[string]any{"uris": uris, "budget_tokens": 10}, "invalid")
		m := regexp.MustCompile(`give at least (\d+)`).FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("refusal %q does not say which budget would do", msg)
		}
		floor, _ := strconv.Atoi(m[1])
		s.fail("get_state", map[string]any{"uris": uris, "budget_tokens": floor - 1}, "invalid")
		full := s.get(uris, "digest", 20000)
		if full.Truncated || len(full.Items) != len(uris) {
			t.Fatalf("30 digests do not fit in 20000 tokens: %+v", full)
		}
		if floor >= full.Spent {
			t.Fatalf("floor %d is not below the full answer's %d tokens", floor, full.Spent)
		}
		budgets := []int{floor, floor + 1, floor + 7}
		for b := floor + 20; b < full.Spent+40; b += max(1, (full.Spent-floor)/23) {
			budgets = append(budgets, b)
		}
		for _, budget := range append(budgets, full.Spent-1) {
			e := s.get(uris, "digest", budget)
			checkBudgetedBatch(t, budget, uris, e)
			if budget < full.Spent && !e.Truncated {
				t.Errorf("budget %d under the full answer's %d tokens: not truncated", budget, full.Spent)
			}
		}
		// Same in table mode: the rows kept plus the uris omitted are the request.
		header, rows, e := parseTable(t, s.ok("get_state", map[string]any{"uris": uris, "mode": "table", "budget_tokens": 500}), 500)
		if len(header) != 3 || !e.Truncated || len(rows) == 0 || len(rows)+len(e.OmittedURIs) != len(uris) || e.Omitted != len(e.OmittedURIs) {
			t.Errorf("table in 500 tokens: %d rows, envelope %+v", len(rows), e)
		}
	})

	t.Run("long body is cut", func(t *testing.T) {
		s := s.on(t)
		var b strings.Builder
		for i := range 400 {
			fmt.Fprintf(&b, "Line %d: the indexer's heap grew by %d MB during compaction.\n", i, i%17+3)
		}
		body := b.String()
		s.write(map[string]any{"uri": "bulk/long", "digest": "Heap growth log", "body": body, "expect_version": 0})
		for _, budget := range []int{120, 500, 2000} {
			e := s.get([]string{"bulk/long"}, "full", budget)
			if len(e.Items) != 1 {
				t.Errorf("budget %d: %d items, omitted %q; want the body cut, not omitted", budget, len(e.Items), e.OmittedURIs)
				continue
			}
			it := e.Items[0]
			total := len([]rune(body))
			if !e.Truncated || it.TotalChars != total || it.KeptChars >= total || it.KeptChars != len([]rune(it.Body)) ||
				!strings.HasPrefix(body, it.Body) {
				t.Errorf("budget %d: truncated %v, kept %d of %d (body %d chars, a prefix: %v); want a prefix cut, kept < total",
					budget, e.Truncated, it.KeptChars, it.TotalChars, len([]rune(it.Body)), strings.HasPrefix(body, it.Body))
			}
			if !slices.Equal(it.keys, []string{"uri", "version", "digest", "body", "kept_chars", "total_chars"}) {
				t.Errorf("cut item keys %q", it.keys)
			}
		}
		// A cut body leaves room for the next item's name.
		e := s.get([]string{"bulk/long", "bulk/n-03"}, "full", 400)
		if len(e.Items)+len(e.OmittedURIs) != 2 || e.Omitted != len(e.OmittedURIs) {
			t.Errorf("long body then a note in 400 tokens: items %q omitted %q (%d)", e.uris(), e.OmittedURIs, e.Omitted)
		}
	})

	s.closeClean()
	checkWorkspace(t, dir)
}

// checkBudgetedBatch checks a get_state answer for a batch under a budget:
// the items are a subsequence of the request, in order, and omitted_uris
// names exactly the rest.
func checkBudgetedBatch(t *testing.T, budget int, request []string, e envelope) {
	t.Helper()
	got := e.uris()
	j := 0
	for _, u := range got {
		for j < len(request) && request[j] != u {
			j++
		}
		if j == len(request) {
			t.Errorf("budget %d: items %q are not the request's addresses in order", budget, got)
			return
		}
		j++
	}
	var rest []string
	for _, u := range request {
		if !slices.Contains(got, u) {
			rest = append(rest, u)
		}
	}
	omitted := slices.Clone(e.OmittedURIs)
	slices.Sort(omitted)
	slices.Sort(rest)
	if !slices.Equal(omitted, rest) {
		t.Errorf("budget %d: omitted_uris %q; want exactly the addresses not in items %q", budget, e.OmittedURIs, rest)
	}
	if e.Omitted != len(e.OmittedURIs) {
		t.Errorf("budget %d: omitted %d, but omitted_uris names %d", budget, e.Omitted, len(e.OmittedURIs))
	}
	if len(e.OmittedURIs) > 0 && !e.Truncated {
		t.Errorf("budget %d: addresses omitted but truncated is false", budget)
	}
}

func TestMCPListKeys(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "lister")
	kinds := []string{"finding", "plan", "finding", "decision", "finding"}
	var alpha []string // in write order
	for i, name := range []string{"delta", "alpha", "echo", "bravo", "charlie"} {
		s.write(map[string]any{"uri": "alpha/" + name, "digest": "Alpha " + name, "body": "x", "expect_version": 0, "kind": kinds[i]})
		alpha = append(alpha, uri("alpha/"+name))
	}
	s.write(map[string]any{"uri": "beta/one", "digest": "Beta one", "body": "x", "expect_version": 0, "kind": "finding"})
	s.write(map[string]any{"uri": "alphabet/soup", "digest": "Not under alpha", "body": "x", "expect_version": 0})
	s.write(map[string]any{"uri": "alpha/deep/er", "digest": "Deeper", "body": "x", "expect_version": 0})
	alpha = append(alpha, uri("alpha/deep/er"))

	list := func(args map[string]any) envelope {
		t.Helper()
		return parseEnvelope(t, s.ok("list_keys", args), 2000)
	}
	newest := slices.Clone(alpha)
	slices.Reverse(newest)
	if e := list(map[string]any{"topic": "alpha"}); !slices.Equal(e.uris(), newest) || e.Omitted != 0 {
		t.Errorf("list alpha = %q (omitted %d); want newest first %q", e.uris(), e.Omitted, newest)
	}
	if e := list(map[string]any{"topic": "alpha/deep"}); !slices.Equal(e.uris(), []string{uri("alpha/deep/er")}) {
		t.Errorf("list alpha/deep = %q", e.uris())
	}
	byName := slices.Sorted(slices.Values(alpha))
	e := list(map[string]any{"topic": "alpha", "order": "name"})
	if !slices.Equal(e.uris(), byName) {
		t.Errorf("list alpha by name = %q; want %q", e.uris(), byName)
	}
	for _, it := range e.Items {
		if !slices.Equal(it.keys, []string{"uri", "version", "digest", "est_tokens"}) {
			t.Errorf("list item keys %q", it.keys)
		}
	}
	if e := list(map[string]any{"topic": "alpha", "kind": "finding", "order": "name"}); !slices.Equal(e.uris(), []string{uri("alpha/charlie"), uri("alpha/delta"), uri("alpha/echo")}) {
		t.Errorf("list alpha findings = %q", e.uris())
	}
	if e := list(map[string]any{"kind": "finding", "order": "name"}); !slices.Equal(e.uris(), []string{uri("alpha/charlie"), uri("alpha/delta"), uri("alpha/echo"), uri("beta/one")}) {
		t.Errorf("list findings across topics = %q", e.uris())
	}
	e = list(map[string]any{"topic": "alpha", "limit": 2})
	if !slices.Equal(e.uris(), newest[:2]) || e.Omitted != len(alpha)-2 || len(e.OmittedURIs) != 0 {
		t.Errorf("list alpha limit 2 = %q omitted %d %q; want %q and %d omitted", e.uris(), e.Omitted, e.OmittedURIs, newest[:2], len(alpha)-2)
	}
	all := list(map[string]any{"limit": 100})
	if len(all.Items) != len(alpha)+3 { // and beta/one, alphabet/soup, run/state/current
		t.Errorf("list everything = %q", all.uris())
	}

	// since: only what changed after a cursor another read returned.
	cursor := e.Cursor
	s.write(map[string]any{"uri": "alpha/bravo", "digest": "Alpha bravo, revised", "body": "y", "expect_version": 1})
	s.write(map[string]any{"uri": "gamma/new", "digest": "Gamma new", "body": "y", "expect_version": 0})
	e = list(map[string]any{"since": cursor})
	if !slices.Equal(e.uris(), []string{uri("gamma/new"), uri("alpha/bravo")}) || e.Cursor != cursor+2 {
		t.Errorf("list since %d = %q cursor %d; want gamma/new, alpha/bravo and cursor %d", cursor, e.uris(), e.Cursor, cursor+2)
	}
	if e := list(map[string]any{"since": e.Cursor}); len(e.Items) != 0 || e.Omitted != 0 {
		t.Errorf("list since the latest cursor = %q; want nothing", e.uris())
	}

	header, rows, te := parseTable(t, s.ok("list_keys", map[string]any{"topic": "beta", "mode": "table", "fields": []string{"kind", "author"}}), 2000)
	if !slices.Equal(header, []string{"uri", "version", "digest", "kind", "author"}) ||
		!slices.EqualFunc(rows, [][]string{{uri("beta/one"), "1", "Beta one", "finding", "lister"}}, slices.Equal) || te.Truncated {
		t.Errorf("list beta as a table: %q %q %+v", header, rows, te)
	}
	if e := list(map[string]any{"topic": "alpha", "mode": "ref", "limit": 1}); len(e.Items) != 1 || !slices.Equal(e.Items[0].keys, []string{"uri", "version"}) {
		t.Errorf("list ref = %+v", e.Items)
	}
	if e := list(map[string]any{"topic": "nothing-here"}); len(e.Items) != 0 || e.Omitted != 0 || e.Truncated {
		t.Errorf("list of an empty topic = %+v", e)
	}
	for _, args := range []map[string]any{
		{"topic": "../x"}, {"order": "newest"}, {"open": "yes"}, {"limit": -1}, {"mode": "full"}, {"budget_tokens": 20001}, {"fields": []string{"secret"}}, {"topic": 7},
	} {
		s.fail("list_keys", args, "invalid")
	}
	s.closeClean()
	checkWorkspace(t, dir)
}

func TestMCPSearchKeys(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "searcher")
	notes := []struct{ key, digest, body string }{
		{"ops/deploy-notes", "Deploy notes for the week", "We deploy v2.4.7 on Monday; a hotfix may follow. Deploy deploy deploy."},
		{"ops/hotfix-policy", "Hotfix policy", "Every hotfix is a deploy: v2 rules apply, 4 reviewers, 7 days."},
		{"incidents/cache-regression", "Cache hit rate fell after a hotfix", "Rolled back deploy-v2.4.7-hotfix at 14:02; ERR_CONN_RESET seen."},
		{"ops/v247", "Release v2.4.7", "The deploy of v2.4.7 went fine. Hotfix pending."},
	}
	for _, n := range notes {
		s.write(map[string]any{"uri": n.key, "digest": n.digest, "body": n.body, "expect_version": 0})
	}
	search := func(args map[string]any) envelope {
		t.Helper()
		return parseEnvelope(t, s.ok("search_keys", args), 2000)
	}
	for _, q := range []string{"deploy-v2.4.7-hotfix", "ERR_CONN_RESET", "DEPLOY-V2.4.7-HOTFIX"} {
		e := search(map[string]any{"q": q})
		if len(e.Items) == 0 || e.Items[0].URI != uri("incidents/cache-regression") {
			t.Errorf("search %q = %q; want incidents/cache-regression first", q, e.uris())
			continue
		}
		if !slices.Equal(e.Items[0].keys, []string{"uri", "digest", "score"}) || e.Items[0].Digest != "Cache hit rate fell after a hotfix" {
			t.Errorf("search hit %+v; want uri, digest, score", e.Items[0])
		}
	}
	if e := search(map[string]any{"q": "deploy", "topic": "incidents"}); !slices.Equal(e.uris(), []string{uri("incidents/cache-regression")}) {
		t.Errorf("search deploy in incidents = %q", e.uris())
	}
	if e := search(map[string]any{"q": "deploy", "limit": 2}); len(e.Items) != 2 {
		t.Errorf("search deploy limit 2 = %q", e.uris())
	}
	e := search(map[string]any{"q": "zebra-unicorn-quasar"})
	if len(e.Items) != 0 || e.Truncated || e.Omitted != 0 || len(e.OmittedURIs) != 0 {
		t.Errorf("a search that finds nothing = %+v; want an empty, valid envelope", e)
	}
	for _, q := range []string{`"`, `""`, `"unbalanced`, "AND", "OR", "NOT", "deploy AND", "-", "--", "-deploy", "*", "**", "deploy*", "NEAR(", "NEAR(deploy hotfix)",
		"(", ")", "{", "ids:deploy", "digest:", "^", "'", `\`, "+", ":", "\x01", "tab\tsep", "\u00e9\u00e8", "ﬁx", strings.Repeat("deploy ", 100), "   "} {
		res := s.call("search_keys", map[string]any{"q": q})
		if res.isError {
			t.Errorf("search %q is an error: %s", q, res.text)
			continue
		}
		parseEnvelope(t, res.text, 2000)
	}
	for _, args := range []map[string]any{{"q": "x", "limit": -1}, {"q": "x", "limit": 101}, {"q": "x", "topic": "../etc"}, {"q": 5}, {"q": "x", "fuzzy": true}} {
		s.fail("search_keys", args, "invalid")
	}
	s.closeClean()
}

func TestMCPLinkState(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "linker")
	var log ledger
	for _, n := range []string{"old", "new", "rival"} {
		s.write(map[string]any{"uri": "research/" + n, "digest": "Cache sizing, " + n, "body": "The cache sizing analysis.", "expect_version": 0})
		log.add("linker", "update", "research/"+n, 1, "Cache sizing, "+n)
	}
	w := s.link("research/new", "supersedes", "research/old")
	if w.Version != 2 || len(w.Warnings) != 0 {
		t.Errorf("link = %+v; want version 2, no warnings", w)
	}
	log.add("linker", "link", "research/new", 2, "supersedes bb://acme/research/old")
	if again := s.link("bb://acme/research/new", "supersedes", "RESEARCH/OLD"); again.Version != 2 {
		t.Errorf("the same link again = %+v; want version 2 (deduplicated, nothing written)", again)
	}
	w = s.link("research/rival", "contradicts", "research/old", "research/ghost")
	if w.Version != 2 || !slices.Equal(w.Warnings, []string{"link target bb://acme/research/ghost does not exist yet"}) {
		t.Errorf("link to a missing note = %+v; want version 2 and a warning naming it", w)
	}
	log.add("linker", "link", "research/rival", 2, "contradicts bb://acme/research/old bb://acme/research/ghost")

	for _, tc := range []struct {
		name, src, rel string
		dst            any
		code           string
	}{
		{"unknown rel", "research/new", "replaces", []string{"research/old"}, "invalid"},
		{"empty rel", "research/new", "", []string{"research/old"}, "invalid"},
		{"missing src", "research/nobody", "cites", []string{"research/old"}, "not_found"},
		{"hostile src", "../x", "cites", []string{"research/old"}, "invalid"},
		{"hostile dst", "research/new", "cites", []string{"../../etc"}, "invalid"},
		{"no dst", "research/new", "cites", []string{}, "invalid"},
		{"dst as a string", "research/new", "cites", "research/old", "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s.on(t)
			s.fail("link_state", map[string]any{"src": tc.src, "rel": tc.rel, "dst": tc.dst}, tc.code)
		})
	}

	fm, _ := readNote(t, dir, "research/new")
	if got := fmt.Sprint(fm["links"]); got != "map[supersedes:[bb://acme/research/old]]" {
		t.Errorf("research/new.md links: %s", got)
	}
	d := s.get([]string{"research/old"}, "digest", 0).Items[0]
	if !slices.Equal(d.SupersededBy, []string{uri("research/new")}) || !slices.Equal(d.ContradictedBy, []string{uri("research/rival")}) {
		t.Errorf("digest of the superseded note: %+v; want superseded_by research/new, contradicted_by research/rival", d)
	}
	if f := s.get([]string{"research/old"}, "full", 0).Items[0]; !slices.Equal(f.SupersededBy, []string{uri("research/new")}) {
		t.Errorf("full read of the superseded note: %+v", f)
	}
	if f := s.get([]string{"research/old"}, "fields", 0).Items[0]; !slices.Equal(f.SupersededBy, []string{uri("research/new")}) {
		t.Errorf("fields read of the superseded note: %+v", f)
	}
	if r := s.get([]string{"research/old"}, "ref", 0).Items[0]; !slices.Equal(r.keys, []string{"uri", "version"}) {
		t.Errorf("ref read of the superseded note has keys %q", r.keys)
	}
	if f := s.get([]string{"research/new"}, "fields", 0, "links").Items[0]; !slices.Equal(f.Links["supersedes"], []string{uri("research/old")}) {
		t.Errorf("links of research/new: %v", f.Links)
	}
	e := parseEnvelope(t, s.ok("search_keys", map[string]any{"q": "cache sizing"}), 2000)
	if i, j := slices.Index(e.uris(), uri("research/new")), slices.Index(e.uris(), uri("research/old")); i < 0 || j < 0 || i > j {
		t.Errorf("search cache sizing = %q; want the successor research/new above research/old", e.uris())
	}
	// The right version after links: a write names the link's version.
	s.write(map[string]any{"uri": "research/new", "digest": "Cache sizing, final", "body": "Final.", "expect_version": 2})
	log.add("linker", "update", "research/new", 3, "Cache sizing, final")

	s.closeClean()
	if got, want := gitLog(t, dir), log.newestFirst(); !slices.Equal(got, want) {
		t.Errorf("git log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	checkWorkspace(t, dir)
}

func TestMCPFilesAndGit(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	a := startMCPGo(t, dir, "alice")
	b := startMCPGo(t, dir, "bob")
	var log ledger
	steps := []struct {
		s     *session
		agent string
		args  map[string]any
		op    string
	}{
		{a, "alice", map[string]any{"uri": "plan/q3", "digest": "Q3 plan: ship search", "body": "- ship search\n", "expect_version": 0, "kind": "plan"}, "update"},
		{b, "bob", map[string]any{"uri": "plan/q3", "digest": "Q3 plan: ship search, then billing", "append": "- then billing\n"}, "append"},
		{a, "alice", map[string]any{"uri": "plan/q3", "digest": "Q3 plan: search, billing, docs", "body": "- search\n- billing\n- docs\n", "expect_version": 2}, "update"},
		{b, "bob", map[string]any{"uri": "data/cpu", "digest": "CPU by host", "columns": []string{"host", "cpu"}, "rows": [][]string{{"a", "10"}}, "expect_version": 0}, "update"},
		{a, "alice", map[string]any{"uri": "data/cpu", "digest": "CPU by host, two hosts", "rows": [][]string{{"b", "20"}}}, "append"},
		{b, "bob", map[string]any{"uri": "notes/x", "digest": "Digest with: colon, 'quotes' and \"double\" # hash", "body": "---\nnot front matter\n---\n", "expect_version": 0}, "update"},
	}
	versions := map[string]int{}
	for _, st := range steps {
		key := st.args["uri"].(string)
		w := st.s.write(st.args)
		versions[key]++
		if w.Version != versions[key] {
			t.Errorf("%s wrote %s as version %d; want %d", st.agent, key, w.Version, versions[key])
		}
		log.add(st.agent, st.op, key, w.Version, st.args["digest"].(string))
	}
	// Each process reads the other's writes.
	if it := a.get([]string{"notes/x"}, "full", 0).Items[0]; it.Body != "---\nnot front matter\n---\n" || it.Version != 1 {
		t.Errorf("alice reads bob's note: %+v", it)
	}
	a.closeClean()
	b.closeClean()

	if got, want := gitLog(t, dir), log.newestFirst(); !slices.Equal(got, want) {
		t.Errorf("git log --format=%%an%%x09%%s:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The trailers say what the subject says.
	msg := fixtures.GitOutput(t, dir, "log", "-1", "--format=%B", "--", "notes/x.md")
	for _, want := range []string{"Blackboard-Uri: bb://acme/notes/x", "Blackboard-Version: 1", "Blackboard-Agent: bob"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit message lacks %q:\n%s", want, msg)
		}
	}
	fm, body := readNote(t, dir, "notes/x")
	if fm["digest"] != "Digest with: colon, 'quotes' and \"double\" # hash" || fm["author"] != "bob" || fm["kind"] != "note" || body != "---\nnot front matter\n---\n" {
		t.Errorf("notes/x.md: %v body %q", fm, body)
	}
	if fm, body := readNote(t, dir, "data/cpu"); fm["author"] != "alice" || body != "host\tcpu\na\t10\nb\t20\n" {
		t.Errorf("data/cpu.md: %v body %q", fm, body)
	}
	checkWorkspace(t, dir)
	if out := fixtures.GitOutput(t, dir, "fsck", "--no-progress", "--strict"); out != "" {
		t.Errorf("git fsck: %s", out)
	}
}

// TestMCPClientClosesMidSession: mcp-go's client closes the session while
// appends are in flight, as a host does when its user quits. The server
// exits with status 0, and every acknowledged append is in the note and in
// git, with nothing half-written.
func TestMCPClientClosesMidSession(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "leaver")
	const key = "run/log"
	s.write(map[string]any{"uri": key, "digest": "Log", "body": "# Log\n", "expect_version": 0})
	type result struct {
		line string
		ok   bool
	}
	results := make(chan result, 12)
	for i := range 12 {
		line := fmt.Sprintf("y-%02d", i)
		go func() {
			ctx, cancel := contextWithTimeout()
			defer cancel()
			res, err := s.callTool(ctx, "update_state", map[string]any{"uri": key, "digest": "Log: " + line, "append": line + "\n"})
			results <- result{line, err == nil && !res.isError}
		}()
	}
	first := <-results
	s.closeClean()
	acked := []string{}
	if first.ok {
		acked = append(acked, first.line)
	}
	for range 11 {
		if r := <-results; r.ok {
			acked = append(acked, r.line)
		}
	}
	t.Logf("%d of 12 appends acknowledged before the session closed", len(acked))
	checkWorkspace(t, dir)
	checkAppendLog(t, dir, key, acked)
}

// TestMCPPeopleEdits: a person's edits meet the tools (SPEC sections 3, 4).
// An edit saved but not committed is committed as the person's version
// before a tool write to that note, which then conflicts instead of
// overwriting it; a person's own git commit advances the version; keys a
// person added to the front matter survive a tool's rewrite unchanged.
func TestMCPPeopleEdits(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	const key = "plan/q4"
	s.write(map[string]any{"uri": key, "digest": "Q4 plan", "body": "- ship\n", "expect_version": 0})
	file := filepath.Join(dir, "plan", "q4.md")

	// Saved in an editor, not committed.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(raw), "- ship\n", "- ship\n- and tell support\n", 1)
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	msg := s.fail("update_state", map[string]any{"uri": key, "digest": "Q4 plan, agent's", "body": "- ship fast\n", "expect_version": 1}, "conflict")
	if !strings.Contains(msg, "version 2") {
		t.Errorf("a write over a person's uncommitted edit: %q; want a conflict naming version 2", msg)
	}
	if it := s.get([]string{key}, "full", 0).Items[0]; it.Version != 2 || it.Body != "- ship\n- and tell support\n" {
		t.Errorf("after the conflict: %+v; want the person's edit as version 2", it)
	}
	if got, _ := os.ReadFile(file); string(got) != edited {
		t.Errorf("the person's file changed:\n%s", got)
	}

	// A person's commit, with keys of their own in the front matter.
	cursor := s.get([]string{key}, "ref", 0).Cursor
	withKeys := strings.Replace(edited, "kind: note\n", "kind: note\nticket: 08\nowner: ada # who to ask\n", 1)
	if err := os.WriteFile(file, []byte(withKeys), 0o644); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "commit", "-q", "-am", "plan: add the owner")
	l := parseEnvelope(t, s.ok("list_keys", map[string]any{"since": cursor}), 2000)
	if !slices.Equal(l.uris(), []string{uri(key)}) || l.Items[0].Version != 3 {
		t.Errorf("list_keys since %d after a person's commit = %+v; want %s at version 3", cursor, l.Items, key)
	}
	w := s.write(map[string]any{"uri": key, "digest": "Q4 plan, agreed", "append": "- agreed\n"})
	if w.Version != 4 {
		t.Errorf("append after the person's commit = %+v; want version 4", w)
	}
	got, _ := os.ReadFile(file)
	for _, want := range []string{"\nticket: 08\n", "\nowner: ada # who to ask\n", "digest: Q4 plan, agreed\n", "- and tell support\n- agreed\n"} {
		if !strings.Contains(string(got), want) {
			t.Errorf("after the tool's rewrite, %s lacks %q:\n%s", key, want, got)
		}
	}
	s.closeClean()
	hist := gitLog(t, dir, key+".md")
	want := []string{"agent\tappend plan/q4 v4: Q4 plan, agreed", "Ada Person\tplan: add the owner", "edit plan/q4 v2 by hand: Q4 plan", "agent\tupdate plan/q4 v1: Q4 plan"}
	if len(hist) != 4 || hist[0] != want[0] || hist[1] != want[1] || !strings.HasSuffix(hist[2], "\t"+want[2]) || hist[3] != want[3] {
		t.Errorf("history of %s:\n%s\nwant:\n%s", key, strings.Join(hist, "\n"), strings.Join(want, "\n"))
	}
	checkWorkspace(t, dir)
}
