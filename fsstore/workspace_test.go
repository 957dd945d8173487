package fsstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

func TestInitIsIdempotent(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "Team Board!")
	for i := 0; i < 2; i++ {
		if err := Init(dir, ""); err != nil {
			t.Fatalf("init #%d: %v", i+1, err)
		}
	}
	if n := fixtures.Git(t, dir, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("commits after two inits = %s, want 1", n)
	}
	w := openWorkspace(t, dir, false)
	if w.Name() != "team-board" {
		t.Errorf("workspace name = %q, want team-board", w.Name())
	}
	n := get(t, w, "bb://team-board/run/state/current")
	if n.Version != 1 || n.Kind != "state" || n.Digest == "" {
		t.Errorf("state note = %+v", n)
	}
	assertClean(t, w)
	if ignored := fixtures.Git(t, dir, "check-ignore", ".blackboard/index.db", ".blackboard/write.lock", ".blackboard/journal"); strings.Count(ignored, "\n") != 2 {
		t.Errorf("derived files are not all git-ignored: %q", ignored)
	}
}

func TestCompareAndSwap(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	const uri = "research/cache/latency"
	if res := put(t, w, uri, 0, "first", "one"); res.Version != 1 || res.URI != "bb://acme/research/cache/latency" {
		t.Fatalf("create = %+v", res)
	}
	_, err := agentView(w).Update(UpdateRequest{URI: uri, Digest: "again", Body: ptr("x"), ExpectVersion: ptr(0)})
	assertKind(t, err, ErrConflict)
	put(t, w, uri, 1, "second", "two")
	_, err = agentView(w).Update(UpdateRequest{URI: uri, Digest: "stale", Body: ptr("x"), ExpectVersion: ptr(1)})
	assertKind(t, err, ErrConflict)
	var e *Error
	if !errors.As(err, &e) || e.Conflict == nil || e.Conflict.Version != 2 || e.Conflict.Author != "tester" || e.Conflict.Digest != "second" {
		t.Fatalf("conflict does not describe the current note: %+v", e)
	}
	if !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "second") {
		t.Errorf("conflict message %q does not name version and digest", err)
	}
	_, err = agentView(w).Update(UpdateRequest{URI: "research/none", Digest: "d", Body: ptr("x"), ExpectVersion: ptr(3)})
	assertKind(t, err, ErrConflict)

	res, err := agentView(w).Update(UpdateRequest{URI: uri, Digest: "blind", Body: ptr("three")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 3 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "expect_version 3") {
		t.Errorf("unconditional write = %+v, want v3 and a warning naming expect_version 3", res)
	}
	n := get(t, w, uri)
	if n.Version != 3 || n.Content != "three" || n.Digest != "blind" || n.Author != "tester" {
		t.Errorf("get = %+v", n)
	}
	if got := fixtures.Git(t, w.Dir(), "rev-list", "--count", "HEAD", "--", "research/cache/latency.md"); got != "3" {
		t.Errorf("git counts %s commits of the note, want 3", got)
	}
	msg := fixtures.Git(t, w.Dir(), "log", "-1", "--format=%an|%B")
	for _, want := range []string{"tester|update research/cache/latency v3: blind", "Blackboard-Uri: bb://acme/research/cache/latency",
		"Blackboard-Version: 3", "Blackboard-Agent: tester"} {
		if !strings.Contains(msg, want) {
			t.Errorf("commit %q lacks %q", msg, want)
		}
	}
	assertClean(t, w)
}

func TestInvalidWritesWriteNothing(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	before := fixtures.Git(t, w.Dir(), "rev-parse", "HEAD")
	tests := []struct {
		name string
		req  UpdateRequest
		kind error
	}{
		{"no digest", UpdateRequest{URI: "t/k", Body: ptr("x")}, ErrInvalid},
		{"blank digest", UpdateRequest{URI: "t/k", Digest: " \n\t", Body: ptr("x")}, ErrInvalid},
		{"no content", UpdateRequest{URI: "t/k", Digest: "d"}, ErrInvalid},
		{"two forms", UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("x"), AppendText: ptr("y")}, ErrInvalid},
		{"traversal", UpdateRequest{URI: "../etc/passwd", Digest: "d", Body: ptr("x")}, ErrInvalid},
		{"git dir", UpdateRequest{URI: ".git/hooks/pre-commit", Digest: "d", Body: ptr("x")}, ErrInvalid},
		{"absolute", UpdateRequest{URI: "/etc/passwd", Digest: "d", Body: ptr("x")}, ErrInvalid},
		{"nul", UpdateRequest{URI: "t/k\x00", Digest: "d", Body: ptr("x")}, ErrInvalid},
		{"other workspace", UpdateRequest{URI: "bb://other/t/k", Digest: "d", Body: ptr("x")}, ErrInvalid},
		{"reserved", UpdateRequest{URI: "t/nul", Digest: "d", Body: ptr("x")}, ErrInvalid},
		{"bad confidence", UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("x"), Confidence: ptr(1.5)}, ErrInvalid},
		{"bad source", UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("x"), Sources: []string{"../x"}}, ErrInvalid},
		{"negative expect", UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("x"), ExpectVersion: ptr(-1)}, ErrInvalid},
		{"kind with spaces", UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("x"), Kind: "two words"}, ErrInvalid},
		{"ragged table", UpdateRequest{URI: "t/k", Digest: "d", Columns: []string{"a", "b"}, Rows: [][]string{{"1"}}}, ErrInvalid},
		{"append rows to nothing", UpdateRequest{URI: "t/k", Digest: "d", AppendRows: [][]string{{"1"}}}, ErrInvalid},
		{"huge body", UpdateRequest{URI: "t/k", Digest: "d", Body: ptr(strings.Repeat("x", note.MaxContentBytes+1))}, ErrTooLarge},
		{"huge digest", UpdateRequest{URI: "t/k", Digest: strings.Repeat("d", note.MaxDigestBytes+1), Body: ptr("x")}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agentView(w).Update(tt.req)
			assertKind(t, err, tt.kind)
			if len(err.Error()) > 600 {
				t.Errorf("error message is %d bytes long", len(err.Error()))
			}
		})
	}
	if after := fixtures.Git(t, w.Dir(), "rev-parse", "HEAD"); after != before {
		t.Errorf("refused writes moved the branch")
	}
	assertClean(t, w)
}

// Content over 10,240 bytes goes to a sibling blob file committed with the
// note; reads return it inline. The boundary is in bytes, not characters.
func TestBlobBoundaries(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	tests := []struct {
		name    string
		body    string
		outside bool
	}{
		{"exactly the threshold", strings.Repeat("a", note.BlobThreshold), false},
		{"one byte over", strings.Repeat("a", note.BlobThreshold+1), true},
		{"multi-byte rune across the line", strings.Repeat("a", note.BlobThreshold-1) + "é", true},
		{"multi-byte rune ending on the line", strings.Repeat("a", note.BlobThreshold-2) + "é", false},
		{"large", strings.Repeat("line of text ✓\n", 5000), true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uri := "t/blob" + strconv.Itoa(i)
			res := put(t, w, uri, 0, "d", tt.body)
			note := readFile(t, w, "t/blob"+strconv.Itoa(i)+".md")
			_, err := os.Stat(filepath.Join(w.Dir(), "t", "blob"+strconv.Itoa(i)+".blob.md"))
			if tt.outside {
				if err != nil || !strings.Contains(note, "blob: blob"+strconv.Itoa(i)+".blob.md\n") ||
					!strings.Contains(note, "bytes: "+strconv.Itoa(len(tt.body))+"\n") {
					t.Errorf("content not out of line: stat %v, note:\n%s", err, note)
				}
				if len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, " "), "out of line") {
					t.Errorf("no out-of-line warning: %v", res.Warnings)
				}
			} else if err == nil || strings.Contains(note, "blob:") {
				t.Errorf("content of %d bytes was stored out of line", len(tt.body))
			}
			n := get(t, w, uri)
			if n.Content != tt.body || n.Bytes != len(tt.body) {
				t.Errorf("read back %d bytes (reported %d), want %d", len(n.Content), n.Bytes, len(tt.body))
			}
		})
	}
	// Shrinking below the threshold removes the blob file in the same commit.
	put(t, w, "t/blob1", 1, "small now", "tiny")
	if _, err := os.Stat(filepath.Join(w.Dir(), "t", "blob1.blob.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unused blob file is still there: %v", err)
	}
	if files := fixtures.Git(t, w.Dir(), "show", "--name-status", "--format=", "HEAD"); !strings.Contains(files, "D\tt/blob1.blob.md") || !strings.Contains(files, "M\tt/blob1.md") {
		t.Errorf("last commit should delete the blob and modify the note:\n%s", files)
	}
	if n := get(t, w, "t/blob1"); n.Content != "tiny" || n.Version != 2 {
		t.Errorf("after shrinking: %+v", n)
	}
	assertClean(t, w)
}

func TestTablesAndAppends(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	_, err := agentView(w).Update(UpdateRequest{URI: "ops/deploys", Digest: "deploys", Columns: []string{"version", "status"},
		Rows: [][]string{{"2.4.6", "ok"}}, ExpectVersion: ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agentView(w).Update(UpdateRequest{URI: "ops/deploys", Digest: "deploys", AppendRows: [][]string{{"2.4.7", "rolled\tback"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 || len(res.Warnings) != 0 {
		t.Errorf("append = %+v, want v2 without warnings", res)
	}
	n := get(t, w, "ops/deploys")
	if want := "version\tstatus\n2.4.6\tok\n2.4.7\trolled\\tback\n"; n.Content != want {
		t.Errorf("table content = %q, want %q", n.Content, want)
	}
	if strings.Join(n.Columns, ",") != "version,status" {
		t.Errorf("columns = %v", n.Columns)
	}
	_, err = agentView(w).Update(UpdateRequest{URI: "ops/deploys", Digest: "d", AppendRows: [][]string{{"only one cell"}}})
	assertKind(t, err, ErrInvalid)
	_, err = agentView(w).Update(UpdateRequest{URI: "ops/deploys", Digest: "d", AppendText: ptr("text")})
	assertKind(t, err, ErrInvalid)

	put(t, w, "ops/log", 0, "log", "first line")
	if _, err := agentView(w).Update(UpdateRequest{URI: "ops/log", Digest: "log", AppendText: ptr("second line\n")}); err != nil {
		t.Fatal(err)
	}
	if n := get(t, w, "ops/log"); n.Content != "first line\nsecond line\n" || n.Version != 2 {
		t.Errorf("appended log = %q v%d", n.Content, n.Version)
	}
	// A table grows past the threshold into a .blob.tsv.
	rows := make([][]string, 800)
	for i := range rows {
		rows[i] = []string{"v" + strconv.Itoa(i), "status of a deploy"}
	}
	if _, err := agentView(w).Update(UpdateRequest{URI: "ops/deploys", Digest: "many", AppendRows: rows}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir(), "ops", "deploys.blob.tsv")); err != nil {
		t.Errorf("large table not stored as .blob.tsv: %v", err)
	}
	if n := get(t, w, "ops/deploys"); strings.Count(n.Content, "\n") != 803 {
		t.Errorf("table has %d lines, want 803", strings.Count(n.Content, "\n"))
	}
	assertClean(t, w)
}

// A person's front matter (unknown keys, comments, scalars YAML would
// reinterpret) survives a tool's rewrite of the note.
func TestPersonsFrontMatterSurvivesToolWrite(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	writeFile(t, w, "plans/q4.md", "---\ndigest: plan\n# keep me\nticket: 08\ncode: 01234\nflag: yes\nwhen: 2026-11-29\nratio: 1.10\nowner: {name: Ada, team: infra}\n---\nbody\n")
	fixtures.Git(t, w.Dir(), "add", "plans/q4.md")
	fixtures.Git(t, w.Dir(), "commit", "-qm", "a plan by hand")
	n := get(t, w, "plans/q4")
	if n.Version != 1 || n.Digest != "plan" {
		t.Fatalf("hand-committed note = %+v", n)
	}
	put(t, w, "plans/q4", 1, "plan, revised", "new body")
	got := readFile(t, w, "plans/q4.md")
	for _, want := range []string{"# keep me\n", "ticket: 08\n", "code: 01234\n", "flag: yes\n", "when: 2026-11-29\n",
		"ratio: 1.10\n", "owner: {name: Ada, team: infra}\n", "digest: plan, revised\n", "\n---\nnew body"} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten note lacks %q:\n%s", want, got)
		}
	}
	assertClean(t, w)
}

// A commit a person makes with the C git CLI advances the note's version; the
// agent holding the old version gets a conflict; nobody loses a commit.
func TestHandCommitAdvancesVersion(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "agent's", "agent body")
	writeFile(t, w, "t/k.md", "---\ndigest: person's\n---\nperson body\n")
	fixtures.Git(t, w.Dir(), "commit", "-qam", "fix by hand")
	n := get(t, w, "t/k")
	if n.Version != 2 || n.Digest != "person's" {
		t.Fatalf("after the hand commit: v%d %q", n.Version, n.Digest)
	}
	_, err := agentView(w).Update(UpdateRequest{URI: "t/k", Digest: "late", Body: ptr("x"), ExpectVersion: ptr(1)})
	assertKind(t, err, ErrConflict)
	if !strings.Contains(err.Error(), "Ada Person") {
		t.Errorf("conflict %q does not name the person who wrote it", err)
	}
	put(t, w, "t/k", 2, "agent again", "y")
	if got := fixtures.Git(t, w.Dir(), "log", "--format=%an", "--", "t/k.md"); got != "tester\nAda Person\ntester" {
		t.Errorf("history of the note:\n%s", got)
	}
	assertClean(t, w)
}

// An edit on disk that git does not have yet is committed as the person's
// version before a tool write is considered: the tool write then conflicts
// instead of overwriting it.
func TestUncommittedEditIsCommittedFirst(t *testing.T) {
	fixtures.RequireGit(t)
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null") // a person without a git identity: "human"
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "agent's", "agent body")
	writeFile(t, w, "t/k.md", "---\ndigest: edited in an editor\n---\nperson body\n")
	_, err := agentView(w).Update(UpdateRequest{URI: "t/k", Digest: "agent 2", Body: ptr("x"), ExpectVersion: ptr(1)})
	assertKind(t, err, ErrConflict)
	n := get(t, w, "t/k")
	if n.Version != 2 || n.Content != "person body\n" {
		t.Fatalf("person's edit not committed as v2: %+v", n)
	}
	if got := fixtures.Git(t, w.Dir(), "log", "-1", "--format=%an %s"); got != "human edit t/k v2 by hand: edited in an editor" {
		t.Errorf("last commit = %q", got)
	}
	// An unconditional write still commits the person's text first.
	writeFile(t, w, "t/k.md", "---\ndigest: edited again\n---\nsecond edit\n")
	res, err := agentView(w).Update(UpdateRequest{URI: "t/k", Digest: "agent 3", Body: ptr("z")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 4 {
		t.Errorf("unconditional write after an edit = v%d, want v4", res.Version)
	}
	if got := fixtures.Git(t, w.Dir(), "show", "HEAD~1:t/k.md"); !strings.Contains(got, "second edit") {
		t.Errorf("the person's second edit is not in history:\n%s", got)
	}
	// A deleted file is committed as a deletion; the note can be created again.
	if err := os.Remove(filepath.Join(w.Dir(), "t", "k.md")); err != nil {
		t.Fatal(err)
	}
	_, err = agentView(w).Update(UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("x"), ExpectVersion: ptr(4)})
	assertKind(t, err, ErrConflict)
	if _, err := agentView(w).Get("t/k", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted note: get = %v, want not_found", err)
	}
	if res := put(t, w, "t/k", 0, "reborn", "again"); res.Version != 6 {
		t.Errorf("re-created note = v%d, want v6 (its history counts)", res.Version)
	}
	assertClean(t, w)
}

// The index follows the branch anywhere: a reset to an older commit (which
// the next write keeps as a commit on top of what it dropped), and a
// deleted or corrupted index file, which is rebuilt from git.
func TestIndexFollowsResetAndRebuilds(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "one", "1")
	old := fixtures.Git(t, w.Dir(), "rev-parse", "HEAD")
	put(t, w, "t/k", 1, "two", "2")
	put(t, w, "t/other", 0, "other", "o")
	fixtures.Git(t, w.Dir(), "reset", "-q", "--hard", old)
	if n := get(t, w, "t/k"); n.Version != 1 || n.Digest != "one" {
		t.Errorf("after reset: v%d %q, want v1 one", n.Version, n.Digest)
	}
	if _, err := agentView(w).Get("t/other", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("note created after the reset point still found: %v", err)
	}
	if res := put(t, w, "t/k", 3, "two again", "2"); res.Version != 4 {
		t.Errorf("the write after the rewind made v%d, want v4 (two before, the rewind's commit)", res.Version)
	}
	if _, err := agentView(w).Get("t/other", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("note the rewind removed found again: %v", err)
	}
	cursor, err := w.Cursor()
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := strconv.Atoi(fixtures.Git(t, w.Dir(), "rev-list", "--first-parent", "--count", "HEAD")); cursor != want {
		t.Errorf("cursor = %d, want %d", cursor, want)
	}
	dir := w.Dir()
	w.Close()
	for _, corrupt := range []bool{false, true} {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(filepath.Join(dir, note.IndexFile+suffix))
		}
		if corrupt {
			if err := os.WriteFile(filepath.Join(dir, note.IndexFile), []byte("not a database at all, just garbage bytes"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w2 := openWorkspace(t, dir, false)
		if n := get(t, w2, "t/k"); n.Version != 4 || n.Digest != "two again" {
			t.Errorf("rebuilt index (corrupt=%v): v%d %q", corrupt, n.Version, n.Digest)
		}
		w2.Close()
	}
}

func TestSymlinkedNoteIsRefused(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	outside := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.Dir(), "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(w.Dir(), "t", "k.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(w.Dir(), "linkdir")); err != nil {
		t.Fatal(err)
	}
	_, err := agentView(w).Update(UpdateRequest{URI: "t/k", Digest: "d", Body: ptr("overwrite")})
	assertKind(t, err, ErrInvalid)
	_, err = agentView(w).Update(UpdateRequest{URI: "linkdir/secret", Digest: "d", Body: ptr("overwrite")})
	assertKind(t, err, ErrInvalid)
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Errorf("file outside the workspace changed: %q", b)
	}
}

func TestLinks(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "r/new", 0, "new finding", "x")
	put(t, w, "r/old", 0, "old finding", "y")
	res, err := agentView(w).Link("r/new", "supersedes", []string{"r/old", "bb://acme/r/old", "r/missing"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 2 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "bb://acme/r/missing") {
		t.Errorf("link = %+v", res)
	}
	n := get(t, w, "r/new")
	if got := strings.Join(n.Links["supersedes"], " "); got != "bb://acme/r/old bb://acme/r/missing" {
		t.Errorf("links = %q", got)
	}
	res, err = agentView(w).Link("r/new", "supersedes", []string{"r/old"})
	if err != nil || res.Version != 2 {
		t.Errorf("repeated link = %+v, %v; want no new version", res, err)
	}
	_, err = agentView(w).Link("r/new", "likes", []string{"r/old"})
	assertKind(t, err, ErrInvalid)
	_, err = agentView(w).Link("r/nothing", "cites", []string{"r/old"})
	assertKind(t, err, ErrNotFound)
	assertClean(t, w)
}

// Loose objects pile up (go-git never packs); past git's own threshold a
// background `git gc --auto` packs them while writes go on, and every note,
// old and new, stays readable and writable.
func TestBackgroundMaintenancePacksObjects(t *testing.T) {
	fixtures.RequireGit(t)
	if testing.Short() {
		t.Skip("writes 1,600 notes")
	}
	w := newWorkspace(t, false)
	packs := func() []string {
		m, _ := filepath.Glob(filepath.Join(w.Dir(), ".git", "objects", "pack", "*.pack"))
		return m
	}
	for i := 0; i < 1600 || len(packs()) == 0; i++ {
		if i > 4000 {
			t.Fatal("no pack after 4,000 writes: maintenance never ran")
		}
		uri := "m/n" + strconv.Itoa(i%400)
		if _, err := agentView(w).Update(UpdateRequest{URI: uri, Digest: "d" + strconv.Itoa(i), Body: ptr("body " + strconv.Itoa(i))}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	for maintenanceBusy(w) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	for _, uri := range []string{"m/n0", "m/n399", "run/state/current"} {
		get(t, w, uri)
	}
	put(t, w, "m/after", 0, "after gc", "x")
	fixtures.Git(t, w.Dir(), "fsck", "--strict", "--no-dangling")
	assertClean(t, w)
}

func maintenanceBusy(w *Workspace) bool {
	_, err := os.Stat(filepath.Join(w.Dir(), ".git", "gc.pid"))
	return err == nil
}

// The derived index is shared by every process: between a write's read of
// the branch and its read of the note, another process may bring the
// index to where a person's reset has just moved the branch. The write
// then reads no version from that index (it would check expect_version
// against one commit and build on another): it starts over.
func TestWriteReadsTheNoteOnlyAtItsParent(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "one", "1")
	put(t, w, "t/k", 1, "two", "2")
	head, err := w.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	if n, err := w.pipe.TxAt(head, head).NoteIn("t/k"); err != nil || n.Version != 2 {
		t.Fatalf("at the head: v%d, %v", n.Version, err)
	}
	fixtures.Git(t, w.Dir(), "reset", "-q", "--hard", "HEAD~1")
	other := openWorkspace(t, w.Dir(), false) // another process's reader
	if _, err := other.Cursor(); err != nil {
		t.Fatal(err)
	}
	if n, err := w.pipe.TxAt(head, head).NoteIn("t/k"); !errors.Is(err, errBranchMoved) {
		t.Errorf("the index moved on to the reset's commit, and the note was read anyway: v%d, %v", n.Version, err)
	}
}

// After agent writes, a person's `git add other && git commit` must not put
// the agent's notes back: git's index follows the program's commits.
func TestPersonsCommitKeepsAgentWrites(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	for i := 0; i < 3; i++ {
		put(t, w, "t/a", i, "a"+strconv.Itoa(i), "agent "+strconv.Itoa(i))
		put(t, w, "t/b/c", i, "c"+strconv.Itoa(i), "agent "+strconv.Itoa(i))
	}
	assertClean(t, w)
	writeFile(t, w, "notes-by-hand.txt", "mine\n")
	fixtures.Git(t, w.Dir(), "add", "notes-by-hand.txt")
	fixtures.Git(t, w.Dir(), "commit", "-qm", "person's file")
	for _, p := range []string{"t/a.md", "t/b/c.md"} {
		if got := fixtures.Git(t, w.Dir(), "show", "HEAD:"+p); !strings.Contains(got, "agent 2") {
			t.Errorf("%s reverted by the person's commit:\n%s", p, got)
		}
	}
	assertClean(t, w)
	if n := get(t, w, "t/a"); n.Version != 3 {
		t.Errorf("t/a = v%d, want v3", n.Version)
	}
}

// A server gone quiet lets go of its caches (Workspace.ReleaseMemory):
// git's index as parsed, the pages of the packs read, SQLite's caches.
// Writes and reads after it are what they would have been: each version
// counted once, every note read back, git's index in step with the files.
func TestWritesAndReadsAfterTheCachesAreReleased(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	for i := range 20 {
		put(t, w, fmt.Sprintf("t/n%d", i), 0, "first", "one\n")
	}
	// Packed, so that objects are read from a mapped pack.
	fixtures.Git(t, w.Dir(), "gc", "--quiet")
	for round := range 3 {
		w.ReleaseMemory(round > 0)
		for i := range 20 {
			if n := get(t, w, fmt.Sprintf("t/n%d", i)); n.Version != round+1 {
				t.Fatalf("round %d: t/n%d at v%d, want v%d", round, i, n.Version, round+1)
			}
			put(t, w, fmt.Sprintf("t/n%d", i), round+1, fmt.Sprintf("round %d", round), fmt.Sprintf("%d\n", round))
		}
		assertClean(t, w)
	}
	fixtures.Git(t, w.Dir(), "fsck", "--strict", "--no-dangling")
}
