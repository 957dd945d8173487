package fsstore_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Writes go on while the derived index is being built (a board cloned
// without one): each is checked against git for its own note, its version
// counted there as the index will count it. Here the build is held back by
// its lock, as another process's build would hold it, for the whole test;
// the versions are counted by git's own log as well. A note a person has
// changed on disk waits for the build (unavailable), and their change is
// committed as theirs once it is done. At the end, every acknowledged
// version is the one git holds, and the index, reindex and a fresh clone
// agree.
func TestWritesWhileTheIndexIsBuilt(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fixtures.Generate(dir, fixtures.Options{Workspace: "acme", Notes: 300, Commits: 700, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	// gitVersion is a note's version as git's log counts it: on a linear
	// history, the commits that changed its files.
	gitVersion := func(key string) int {
		t.Helper()
		out := fixtures.Git(t, dir, append([]string{"log", "--format=%H", "--"}, note.Files(key)...)...)
		return len(strings.Fields(out))
	}
	// The notes by how often they changed, most first.
	var keys []string
	changed := map[string]int{}
	for _, p := range strings.Fields(fixtures.Git(t, dir, "log", "--format=", "--name-only")) {
		if key, ok := note.KeyOf(p); ok && note.IsNoteFile(p) && !strings.HasPrefix(p, ".") {
			if changed[key] == 0 {
				keys = append(keys, key)
			}
			changed[key]++
		}
	}
	slices.SortStableFunc(keys, func(a, b string) int { return changed[b] - changed[a] })
	hot, other, edited := keys[0], keys[1], keys[2]
	if gitVersion(hot) < 3 {
		t.Fatalf("the generated board has no note changed thrice (%s: %d)", hot, gitVersion(hot))
	}

	build, err := os.OpenFile(filepath.Join(dir, note.IndexFile+"-build"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer build.Close()
	if err := unix.Flock(int(build.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "tester", IndexInBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	v := w.As(fsstore.OpenCaller("tester"))
	var acks fsstoretest.Acks
	write := func(req fsstore.UpdateRequest) (*fsstore.UpdateResult, error) {
		t.Helper()
		res, err := v.Update(req)
		if err == nil {
			acks.Add(res.URI, res.Version, res.Digest)
		}
		return res, err
	}
	body := func(s string) *string { return &s }
	if _, err := w.Cursor(); !errors.Is(err, fsstore.ErrUnavailable) {
		t.Fatalf("the index is not being built: %v", err)
	}

	// The hot note at its version in git: written.
	at := gitVersion(hot)
	res, err := write(fsstore.UpdateRequest{URI: hot, Digest: "written during the build", Body: body("one"), ExpectVersion: ptr(at)})
	if err != nil {
		t.Fatalf("a write at the note's version during the build: %v", err)
	}
	if res.Version != at+1 || gitVersion(hot) != at+1 {
		t.Fatalf("acknowledged at version %d, git counts %d; want %d", res.Version, gitVersion(hot), at+1)
	}
	// At the version before: a conflict that names the version and its author.
	_, err = write(fsstore.UpdateRequest{URI: hot, Digest: "stale", Body: body("two"), ExpectVersion: ptr(at)})
	assertConflict(t, err, at+1, "tester")
	// An append needs no version.
	if res, err = write(fsstore.UpdateRequest{URI: hot, Digest: "appended during the build", AppendText: body("a line")}); err != nil || res.Version != at+2 {
		t.Fatalf("an append during the build: %+v, %v; want version %d", res, err, at+2)
	}
	// A create of a note git holds conflicts; of a new one, it is version 1.
	_, err = write(fsstore.UpdateRequest{URI: other, Digest: "create", Body: body("x"), ExpectVersion: ptr(0)})
	assertConflict(t, err, gitVersion(other), "")
	if res, err = write(fsstore.UpdateRequest{URI: "ops/during-build", Digest: "new", Body: body("x"), ExpectVersion: ptr(0),
		Sources: []string{other, "ops/nowhere"}}); err != nil || res.Version != 1 {
		t.Fatalf("a new note during the build: %+v, %v", res, err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "ops/nowhere") {
		t.Fatalf("the sources are looked for in git during the build: warnings %q", res.Warnings)
	}
	// A read names each note's version as git counts it; a batch too.
	for _, key := range []string{hot, other, "ops/during-build", keys[len(keys)-1]} {
		nv, err := v.Get(key, false)
		if err != nil || nv.Version != gitVersion(key) {
			t.Fatalf("get %s during the build: %+v, %v; git counts %d", key, nv, err, gitVersion(key))
		}
	}
	sums, _, err := v.Summaries([]string{hot, other, "ops/nowhere"})
	if err != nil || sums[0].Summary == nil || sums[0].Summary.Version != gitVersion(hot) || sums[1].Summary == nil || sums[1].Summary.Version != gitVersion(other) || !errors.Is(sums[2].Err, fsstore.ErrNotFound) {
		t.Fatalf("a batch read during the build: %+v, %v", sums, err)
	}
	if v.Indexing() == "" {
		t.Fatal("the reads do not say that the index is being built")
	}
	// A note a person changed on disk waits for the build; the change stays.
	editedVersion := gitVersion(edited)
	file := filepath.Join(dir, filepath.FromSlash(edited+".md"))
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	theirs := string(raw) + "\na person's line\n"
	if err := os.WriteFile(file, []byte(theirs), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = write(fsstore.UpdateRequest{URI: edited, Digest: "over a person's edit", Body: body("y"), ExpectVersion: ptr(editedVersion)})
	if !errors.Is(err, fsstore.ErrUnavailable) || !strings.Contains(err.Error(), "index is being built") {
		t.Fatalf("a write over a person's change during the build: %v, want unavailable", err)
	}
	if now, _ := os.ReadFile(file); string(now) != theirs {
		t.Fatalf("the person's change was lost: %q", now)
	}
	if _, err := w.Cursor(); !errors.Is(err, fsstore.ErrUnavailable) {
		t.Fatalf("the build ended before the test let it: %v", err)
	}

	// The build goes on once its lock is free; then the person's change is
	// theirs, a version of its own, and the index counts every write as
	// it was acknowledged.
	if err := unix.Flock(int(build.Fd()), unix.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for _, err := w.Cursor(); err != nil; _, err = w.Cursor() {
		if !errors.Is(err, fsstore.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("the build: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = write(fsstore.UpdateRequest{URI: edited, Digest: "over a person's edit", Body: body("y"), ExpectVersion: ptr(editedVersion)})
	assertConflict(t, err, editedVersion+1, "")
	if got := gitVersion(edited); got != editedVersion+1 {
		t.Fatalf("the person's change is version %d in git, want %d", got, editedVersion+1)
	}
	if st := fixtures.Git(t, dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status after the build:\n%s", st)
	}
	w.Close()
	fsstoretest.CheckVersionsAgree(t, dir, acks.List())
}

// assertConflict fails unless err is a conflict naming the note's version
// (and its last author, when given).
func assertConflict(t *testing.T, err error, version int, author string) {
	t.Helper()
	var e *fsstore.Error
	if !errors.As(err, &e) || !errors.Is(err, fsstore.ErrConflict) || e.Conflict == nil {
		t.Fatalf("want a conflict, got %v", err)
	}
	if e.Conflict.Version != version || author != "" && e.Conflict.Author != author {
		t.Fatalf("the conflict names version %d by %q, want %d by %q: %v", e.Conflict.Version, e.Conflict.Author, version, author, err)
	}
}
