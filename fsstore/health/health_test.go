package health

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// healthBoard makes a workspace with a small note, a note whose body is out
// of line (research/big.blob.md) and a table, closes it, and returns its
// directory: health opens the workspace itself.
func healthBoard(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	small, big := "LRU holds 2,000 entries.\n", strings.Repeat("a line of a long report\n", 600)
	for _, req := range []fsstore.UpdateRequest{
		{URI: "research/a", Digest: "a small finding", Body: &small},
		{URI: "research/a", Digest: "a small finding, revised", Body: &small},
		{URI: "research/big", Digest: "a long report", Body: &big},
		{URI: "ops/table", Digest: "a table", Columns: []string{"k", "v"}, Rows: [][]string{{"x", "1"}}},
	} {
		if _, err := w.As(fsstore.OpenCaller("tester")).Update(req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "research", "big.blob.md")); err != nil {
		t.Fatalf("the long report was not stored out of line: %v", err)
	}
	return dir
}

// catchUpIndex opens the workspace and reads, as any process would after a
// person's git commit, so the derived index reflects the branch again.
func catchUpIndex(t *testing.T, dir string) {
	t.Helper()
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Cursor(); err != nil {
		t.Fatal(err)
	}
}

func putFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commitByHand writes files and commits them with the C git CLI, then lets
// the index catch up, so only the problem the files carry remains.
func commitByHand(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		putFile(t, dir, rel, content)
	}
	fixtures.Git(t, dir, "add", "-A")
	fixtures.Git(t, dir, "commit", "-qm", "by hand")
	catchUpIndex(t, dir)
}

func checkHealth(t *testing.T, dir string) *Report {
	t.Helper()
	return Check(dir, healthOptions())
}

func healthOptions() Options {
	return Options{Open: fsstore.Options{NoSync: true}, FsckTimeout: 20 * time.Second}
}

func describe(r *Report) string {
	var b strings.Builder
	for _, f := range r.Findings {
		b.WriteString("\n  " + f.Severity + " " + f.Check + " " + f.Path + ": " + f.Message + " | fix: " + f.Fix)
	}
	for _, i := range r.Info {
		b.WriteString("\n  info: " + i)
	}
	return b.String()
}

const validHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestHealthCleanWorkspace(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel()
	// A fresh workspace, and one with notes, an out-of-line body, a table,
	// a person's commit and a valid access file: all sound.
	fresh := filepath.Join(t.TempDir(), "fresh")
	if err := fsstore.Init(fresh, ""); err != nil {
		t.Fatal(err)
	}
	if r := checkHealth(t, fresh); !r.OK() {
		t.Fatalf("a fresh workspace has findings:%s", describe(r))
	}
	dir := healthBoard(t)
	commitByHand(t, dir, map[string]string{
		"research/by-hand.md": "---\ndigest: written by a person\n---\nhello\n",
		".blackboard/access.yaml": "agents:\n  - name: researcher\n    token_sha256: " + validHash +
			"\n    read: [\"*\"]\n    write: [research, ops/runs]\n",
	})
	r := checkHealth(t, dir)
	if !r.OK() {
		t.Fatalf("a sound workspace has findings:%s", describe(r))
	}
	for _, want := range []string{"git fsck --connectivity-only: clean", "versions of 5 notes recounted over the whole history", "lists 1 agents"} {
		if !strings.Contains(describe(r), want) {
			t.Errorf("info does not say %q:%s", want, describe(r))
		}
	}
	// A short version walk compares commit by commit instead of totals.
	r = Check(dir, Options{Open: fsstore.Options{NoSync: true}, VersionCommits: 2, FsckTimeout: -1})
	if !r.OK() || !strings.Contains(describe(r), "over the last 2 commits") {
		t.Fatalf("a short version walk:%s", describe(r))
	}
	// An open workspace checks itself the same way.
	w := openWorkspace(t, dir)
	if r := CheckOpen(w, Options{FsckTimeout: -1}); !r.OK() {
		t.Fatalf("Workspace.Health has findings:%s", describe(r))
	}
}

func TestHealthFindings(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel()
	for _, tt := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		check  string
		path   string
		want   string // in the message
		also   string // other checks that may report the same breakage
	}{
		{"uncommitted edit", func(t *testing.T, dir string) {
			putFile(t, dir, "research/a.md", "---\ndigest: edited by hand\n---\nnot committed\n")
		}, "uncommitted", "research/a.md", "differs from the last commit", ""},
		{"edit of the same size, judged by git's index", func(t *testing.T, dir string) {
			// Without the program's own record of the file, git's index
			// decides which files need reading; an edit changes the stat.
			execIndex(t, dir, "DELETE FROM disk")
			p := filepath.Join(dir, "research", "a.md")
			old, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			edited := bytes.Replace(old, []byte("a small finding"), []byte("A SMALL FINDING"), 1)
			if bytes.Equal(edited, old) {
				t.Fatalf("the note does not hold its digest:\n%s", old)
			}
			putFile(t, dir, "research/a.md", string(edited))
			// Older than git's index file, so that only the stat can tell.
			past := time.Now().Add(-time.Hour)
			if err := os.Chtimes(p, past, past); err != nil {
				t.Fatal(err)
			}
		}, "uncommitted", "research/a.md", "differs from the last commit", ""},
		{"staged, not committed", func(t *testing.T, dir string) {
			putFile(t, dir, "research/a.md", "---\ndigest: staged by hand\n---\n")
			fixtures.Git(t, dir, "add", "research/a.md")
			putFile(t, dir, "research/a.md", "---\ndigest: edited again\n---\n")
		}, "uncommitted", "research/a.md", "staged in git's index", ""},
		{"new file not committed", func(t *testing.T, dir string) {
			putFile(t, dir, "research/new.md", "---\ndigest: new\n---\n")
		}, "uncommitted", "research/new.md", "new on disk", ""},
		{"note deleted on disk", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "research", "a.md")); err != nil {
				t.Fatal(err)
			}
		}, "uncommitted", "research/a.md", "deleted on disk", ""},
		{"YAML bomb", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/bomb.md": "---\ndigest: boom\na: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\n---\n"})
		}, "front_matter", "research/bomb.md", "anchors or aliases", ""},
		{"broken YAML", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/broken.md": "---\ndigest: [unclosed\n---\nbody\n"})
		}, "front_matter", "research/broken.md", "not valid YAML", ""},
		{"no closing line", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/open.md": "---\ndigest: never closed\n"})
		}, "front_matter", "research/open.md", "no closing --- line", ""},
		{"unreadable front matter on disk only", func(t *testing.T, dir string) {
			putFile(t, dir, "research/a.md", "no front matter at all\n")
		}, "front_matter", "research/a.md", "not committed", "uncommitted"},
		{"no digest", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/nodigest.md": "---\nkind: finding\n---\nbody\n"})
		}, "digest", "research/nodigest.md", "no digest", ""},
		{"orphan blob", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/lonely.blob.md": "content without a note\n"})
		}, "blob", "research/lonely.blob.md", "a blob file with no note", ""},
		{"blob the note does not name", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/a.blob.tsv": "k\tv\n"})
		}, "blob", "research/a.blob.tsv", "no note uses", ""},
		{"missing blob", func(t *testing.T, dir string) {
			fixtures.Git(t, dir, "rm", "-q", "research/big.blob.md")
			fixtures.Git(t, dir, "commit", "-qm", "lose the blob")
			catchUpIndex(t, dir)
		}, "blob", "research/big.md", "research/big.blob.md, which is missing", ""},
		{"blob outside the note's own names", func(t *testing.T, dir string) {
			commitByHand(t, dir, map[string]string{"research/odd.md": "---\ndigest: odd\nblob: ../../secret\n---\n"})
		}, "blob", "research/odd.md", "not this note's own blob file", ""},
		{"claim held by an agent that does not write", func(t *testing.T, dir string) {
			until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
			commitByHand(t, dir, map[string]string{"research/task.md": "---\ndigest: a task\nclaimed_by: ghost\nclaim_until: " + until + "\n---\n"})
		}, "claims", "research/task.md", "ghost holds the claim until", ""},
		{"stale index.lock", func(t *testing.T, dir string) {
			ageFile(t, filepath.Join(dir, ".git", "index.lock"), time.Minute)
		}, "locks", ".git/index.lock", "1m0s old", ""},
		{"stale branch lock", func(t *testing.T, dir string) {
			ageFile(t, filepath.Join(dir, ".git", "refs", "heads", "main.lock"), time.Hour)
		}, "locks", ".git/refs/heads/main.lock", "writes of the board and of git fail", ""},
		{"interrupted write", func(t *testing.T, dir string) {
			head := fixtures.Git(t, dir, "rev-parse", "HEAD")
			// The journal of a writer killed before its commit point: the
			// branch never reached the commit it names.
			j := `{"old":"` + head + `","new":"1111111111111111111111111111111111111111","time":"2026-01-01T00:00:00Z",` +
				`"files":[{"path":"research/a.md","old":"","new":"2222222222222222222222222222222222222222"}]}`
			putFile(t, dir, note.JournalFile, j)
		}, "journal", note.JournalFile, "commit 1111111 of research/a.md", ""},
		{"stale derived index", func(t *testing.T, dir string) {
			putFile(t, dir, "research/a.md", "---\ndigest: a person's commit\n---\nbody\n")
			fixtures.Git(t, dir, "commit", "-qam", "by hand, while no server runs")
		}, "index", note.IndexFile, "the derived index is stale", ""},
		{"index disagrees with git", func(t *testing.T, dir string) {
			db, err := sql.Open("sqlite", filepath.Join(dir, note.IndexFile))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("UPDATE notes SET version = version + 5 WHERE key = 'research/a'"); err != nil {
				t.Fatal(err)
			}
		}, "index", "research/a.md", "says version 7; 2 commits changed", ""},
		{"index misses a note", func(t *testing.T, dir string) {
			execIndex(t, dir, "UPDATE notes SET present = 0 WHERE key = 'research/a'")
		}, "index", "research/a.md", "the derived index does not list it", ""},
		{"index holds another version of a note", func(t *testing.T, dir string) {
			execIndex(t, dir, "UPDATE notes SET note_blob = '1111111111111111111111111111111111111111' WHERE key = 'research/a'")
		}, "index", "research/a.md", "holds blob 1111111 of the note", ""},
		{"index holds another version of a blob file", func(t *testing.T, dir string) {
			execIndex(t, dir, "UPDATE notes SET content_blob = '2222222222222222222222222222222222222222' WHERE key = 'research/big'")
		}, "index", "research/big.blob.md", "another version of the note's blob file", ""},
		{"index read a note's front matter otherwise", func(t *testing.T, dir string) {
			execIndex(t, dir, "UPDATE notes SET digest = 'not what the file says' WHERE key = 'research/a'")
		}, "index", "research/a.md", "read the note's front matter otherwise", ""},
		{"corrupt loose blob", func(t *testing.T, dir string) {
			corruptObject(t, dir, fixtures.Git(t, dir, "rev-parse", "HEAD:research/a.md"))
		}, "objects", "research/a.md", "cannot be read", ""},
		{"corrupt blob of a note with its content out of line", func(t *testing.T, dir string) {
			corruptObject(t, dir, fixtures.Git(t, dir, "rev-parse", "HEAD:research/big.md"))
		}, "objects", "research/big.md", "cannot be read", ""},
		{"corrupt tree", func(t *testing.T, dir string) {
			corruptObject(t, dir, fixtures.Git(t, dir, "rev-parse", "HEAD:research"))
		}, "repository", "", "the tree of the last commit", "objects"},
		{"corrupt old commit", func(t *testing.T, dir string) {
			corruptObject(t, dir, fixtures.Git(t, dir, "rev-parse", "HEAD~2"))
		}, "objects", "", "2 commits back on the branch, cannot be read", ""},
		{"symbolic link as a note", func(t *testing.T, dir string) {
			if err := os.Symlink("a.md", filepath.Join(dir, "research", "link.md")); err != nil {
				t.Fatal(err)
			}
		}, "files", "research/link.md", "symbolic link", ""},
		{"detached HEAD", func(t *testing.T, dir string) {
			fixtures.Git(t, dir, "checkout", "-q", "--detach")
		}, "repository", "", "HEAD is detached (not on main): agents write to main", ""},
		{"another branch checked out", func(t *testing.T, dir string) {
			fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
		}, "repository", "", "side is checked out, not main: agents write to main", ""},
		{"the board's branch deleted", func(t *testing.T, dir string) {
			fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
			fixtures.Git(t, dir, "branch", "-q", "-D", "main")
		}, "repository", "", "the board's branch main does not exist", ""},
		{"access file not YAML", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "agents: [\n")
		}, "access", ".blackboard/access.yaml", "not valid YAML", ""},
		{"access file without agents", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "people:\n  - name: x\n")
		}, "access", ".blackboard/access.yaml", "no top-level `agents:` list", ""},
		{"access token not a hash", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "agents:\n  - name: a\n    token_sha256: bb_secret\n    read: [\"*\"]\n    write: []\n")
		}, "access", ".blackboard/access.yaml", "line 3: agent \"a\": token_sha256 must be 64", ""},
		{"access names twice", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "agents:\n"+
				"  - {name: a, token_sha256: "+validHash+", read: [research], write: []}\n"+
				"  - {name: a, token_sha256: "+strings.Repeat("f", 64)+", read: [ops], write: []}\n")
		}, "access", ".blackboard/access.yaml", "appears twice", ""},
		{"access without write list", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "agents:\n  - {name: a, token_sha256: "+validHash+", read: [research]}\n")
		}, "access", ".blackboard/access.yaml", "has no `write:` list", ""},
		{"access bad topic", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "agents:\n  - {name: a, token_sha256: "+validHash+", read: [../etc], write: []}\n")
		}, "access", ".blackboard/access.yaml", "is not a topic prefix", ""},
		{"access file with anchors", func(t *testing.T, dir string) {
			putFile(t, dir, ".blackboard/access.yaml", "t: &t [research]\nagents:\n  - {name: a, token_sha256: "+validHash+", read: *t, write: []}\n")
		}, "access", ".blackboard/access.yaml", "anchors or aliases", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := healthBoard(t)
			tt.break_(t, dir)
			opts := healthOptions()
			if tt.check == "index" && strings.Contains(tt.want, "front matter") {
				opts.ReparseOneIn = 1 // what the index read is checked one note in 50 at random
			}
			r := Check(dir, opts)
			if r.OK() {
				t.Fatalf("no findings; want %s%s", tt.check, describe(r))
			}
			found := false
			for _, f := range r.Findings {
				if f.Fix == "" || f.Severity == "" || f.Message == "" {
					t.Errorf("finding without message, fix or severity: %+v", f)
				}
				if f.Check == tt.check && f.Path == tt.path && strings.Contains(f.Message, tt.want) {
					found = true
				}
				if f.Check != tt.check && !strings.Contains(" "+tt.also+" ", " "+f.Check+" ") {
					t.Errorf("a %s finding where only %s %s was expected", f.Check, tt.check, tt.also)
				}
			}
			if !found || t.Failed() {
				t.Fatalf("want a %s finding on %q saying %q; got:%s", tt.check, tt.path, tt.want, describe(r))
			}
		})
	}
}

// TestHealthJournalFinished: health reports the interrupted write it found,
// and opening the workspace finished it, so a second run is clean.
func TestHealthJournalFinished(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel()
	dir := healthBoard(t)
	putFile(t, dir, note.JournalFile, "{torn")
	r := checkHealth(t, dir)
	if len(r.Findings) != 1 || r.Findings[0].Check != "journal" || !strings.Contains(r.Findings[0].Message, "health finished it") {
		t.Fatalf("want one journal finding that says health finished it:%s", describe(r))
	}
	if r := checkHealth(t, dir); !r.OK() {
		t.Fatalf("second run:%s", describe(r))
	}
}

// TestHealthLiveLocks: a lock a git command holds right now, and the journal
// of a write in progress (its writer holds the write lock), are no findings.
func TestHealthLiveLocks(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel()
	dir := healthBoard(t)
	putFile(t, dir, ".git/index.lock", "")
	w := openWorkspace(t, dir)
	putFile(t, dir, note.JournalFile, "{in progress")
	err := withWriteLockNoRecover(dir, func() {
		r := CheckOpen(w, Options{FsckTimeout: -1})
		if !r.OK() {
			t.Errorf("live locks reported:%s", describe(r))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// withWriteLockNoRecover holds the cross-process write lock as a writer in
// the middle of its write does, without finishing any journal first.
func withWriteLockNoRecover(dir string, fn func()) error {
	other, err := os.OpenFile(filepath.Join(dir, note.LockFile), os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer other.Close()
	if err := unix.Flock(int(other.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	fn()
	return nil
}

func ageFile(t *testing.T, p string, age time.Duration) {
	t.Helper()
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-age)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

// corruptObject overwrites a loose object's file with garbage, as a failing
// disk would.
func corruptObject(t *testing.T, dir, hash string) {
	t.Helper()
	p := filepath.Join(dir, ".git", "objects", hash[:2], hash[2:])
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatalf("object %s is not loose: %v", hash, err)
	}
	if err := os.WriteFile(p, []byte("this is not a zlib stream"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func openWorkspace(t testing.TB, dir string) *fsstore.Workspace {
	t.Helper()
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// execIndex changes the derived index behind the program's back.
func execIndex(t *testing.T, dir, stmt string) {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, note.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// TestHealthIndexBeingBuilt: while a server builds the derived index in the
// background (it holds the build's lock and writes its progress beside the
// index), health says how far the build has come instead of calling the
// index stale.
func TestHealthIndexBeingBuilt(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel()
	dir := healthBoard(t)
	putFile(t, dir, "ops/by-hand.md", "---\ndigest: committed with git\n---\nx\n")
	fixtures.Git(t, dir, "add", "-A")
	fixtures.Git(t, dir, "commit", "-qm", "by hand")
	build, err := os.OpenFile(filepath.Join(dir, note.IndexFile+"-build"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer build.Close()
	if err := unix.Flock(int(build.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := build.WriteString(`{"done":4100,"total":10000,"walked":0,"started":"2026-01-02T03:04:05Z"}`); err != nil {
		t.Fatal(err)
	}
	r := CheckOpen(openWorkspace(t, dir), Options{FsckTimeout: -1})
	found := false
	for _, f := range r.Findings {
		if f.Check == "index" {
			found = strings.HasPrefix(f.Message, "the index is being built: 4,100 of 10,000 commits") && f.Severity == SeverityWarning
		}
	}
	if !found {
		t.Fatalf("no finding of the build's progress:%s", describe(r))
	}
}
