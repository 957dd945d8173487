package fsstoretest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Ack is a write the board acknowledged: the note, the version it was
// acknowledged at, and the digest it wrote (a link's or an unchanged
// write's: the note's digest then).
type Ack struct {
	URI     string
	Version int
	Digest  string
}

// Acks collects acknowledged writes from many goroutines.
type Acks struct {
	mu   sync.Mutex
	list []Ack
}

// Add records an acknowledged write.
func (a *Acks) Add(uri string, version int, digest string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, Ack{URI: uri, Version: version, Digest: digest})
}

// List returns the writes recorded so far.
func (a *Acks) List() []Ack {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Ack(nil), a.list...)
}

// CheckVersionsAgree checks the one version rule on the board at dir, once
// every writer is done:
//
//   - the live derived index, caught up by a new process as any reader
//     would, holds for every note (deleted ones too) the version, and the
//     board the cursor, that an index rebuilt from git (`reindex`) holds;
//   - a fresh clone of the board's branch, indexed from nothing, holds the
//     same;
//   - every acknowledged write's version is, in that rebuilt history, a
//     version of its note whose digest is the one written.
//
// Differences are reported all at once, note by note.
func CheckVersionsAgree(t testing.TB, dir string, acks []Ack) {
	t.Helper()
	fixtures.RequireGit(t)
	live, head, cursor := indexedVersions(t, dir, false)

	clone := filepath.Join(t.TempDir(), "clone")
	branch, err := boardBranch(dir)
	if err != nil {
		t.Fatalf("check versions: %v", err)
	}
	if out, err := fixtures.GitCmd(filepath.Dir(clone), "clone", "-q", "--no-local", "--single-branch", "-b", branch, dir, clone).CombinedOutput(); err != nil {
		t.Fatalf("check versions: clone the board: %v\n%s", err, out)
	}
	cloned, cloneHead, cloneCursor := indexedVersions(t, clone, false)
	rebuilt, _, rebuiltCursor := indexedVersions(t, clone, true)

	var problems []string
	if cloneHead != head {
		problems = append(problems, fmt.Sprintf("the branch moved while the check ran (%s, then %s): stop every writer first", head, cloneHead))
	}
	if cursor != cloneCursor || cursor != rebuiltCursor {
		problems = append(problems, fmt.Sprintf("cursor: live %d, fresh clone %d, reindex %d", cursor, cloneCursor, rebuiltCursor))
	}
	keys := map[string]bool{}
	for _, m := range []map[string]index.NoteVersion{live, cloned, rebuilt} {
		for k := range m {
			keys[k] = true
		}
	}
	for _, k := range sortedKeys(keys) {
		l, c, r := live[k], cloned[k], rebuilt[k]
		if l != c || l != r {
			problems = append(problems, fmt.Sprintf("%s: live v%d (present %t), fresh clone v%d (present %t), reindex v%d (present %t)",
				k, l.Version, l.Present, c.Version, c.Present, r.Version, r.Present))
		}
	}
	problems = append(problems, checkAcks(t, clone, acks)...)
	if len(problems) > 0 {
		t.Errorf("the board's versions disagree (%d problems):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
}

// checkAcks compares each acknowledged write with its note's history as
// the board at dir gives it.
func checkAcks(t testing.TB, dir string, acks []Ack) []string {
	t.Helper()
	if len(acks) == 0 {
		return nil
	}
	w := open(t, dir)
	defer w.Close()
	view := w.As(fsstore.OpenCaller("check"))
	// A version is a commit's on the commit graph: the commits of two sides
	// of a merge may each have the same number, with their own content.
	histories := map[string]map[int][]fsstore.LogEntry{}
	var problems []string
	for _, a := range acks {
		h, ok := histories[a.URI]
		if !ok {
			entries, err := view.Log(a.URI, 1<<30)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: acknowledged at v%d, but its history cannot be read: %v", a.URI, a.Version, err))
				histories[a.URI] = nil
				continue
			}
			h = make(map[int][]fsstore.LogEntry, len(entries))
			for _, e := range entries {
				h[e.Version] = append(h[e.Version], e)
			}
			histories[a.URI] = h
		}
		if h == nil {
			continue
		}
		at := h[a.Version]
		switch {
		case len(at) == 0:
			problems = append(problems, fmt.Sprintf("%s: acknowledged at v%d (%q), a version git does not hold (%d versions)", a.URI, a.Version, a.Digest, len(h)))
		case !slices.ContainsFunc(at, func(e fsstore.LogEntry) bool { return e.Digest == a.Digest }):
			problems = append(problems, fmt.Sprintf("%s: acknowledged at v%d with %q, but git's v%d (%s, %s) holds %q",
				a.URI, a.Version, a.Digest, a.Version, at[0].Commit[:12], at[0].Subject, at[0].Digest))
		}
	}
	return problems
}

// indexedVersions opens the board at dir in this process, brings its
// derived index to the branch (rebuilt from nothing when rebuild), and
// returns every note's version, the head and the cursor.
func indexedVersions(t testing.TB, dir string, rebuild bool) (map[string]index.NoteVersion, string, int) {
	t.Helper()
	w := open(t, dir)
	defer w.Close()
	var err error
	if rebuild {
		_, err = w.Reindex(nil)
	} else {
		_, err = w.Cursor()
	}
	if err != nil {
		t.Fatalf("check versions: index %s: %v", dir, err)
	}
	head, cursor, err := w.IndexHead()
	if err != nil {
		t.Fatalf("check versions: %v", err)
	}
	var versions map[string]index.NoteVersion
	err = w.ReadIndex(func(s *index.Snapshot) error {
		versions, err = s.Versions()
		return err
	})
	if err != nil {
		t.Fatalf("check versions: read the index of %s: %v", dir, err)
	}
	return versions, head.String(), cursor
}

func open(t testing.TB, dir string) *fsstore.Workspace {
	t.Helper()
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "check"})
	if err != nil {
		t.Fatalf("check versions: open %s: %v", dir, err)
	}
	return w
}

// boardBranch is the branch the board at dir keeps its notes on.
func boardBranch(dir string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, note.ConfigFile))
	if err != nil {
		return "", err
	}
	cfg, err := note.ParseConfig(raw)
	if err != nil {
		return "", err
	}
	if cfg.Branch == "" {
		return note.DefaultBranch, nil
	}
	return cfg.Branch, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
