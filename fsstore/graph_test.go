package fsstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// graphKeys are the notes of the random histories.
var graphKeys = []string{"t/a", "t/b", "t/c", "u/d"}

// randomGraph is a random commit graph made with gitver: commits on any earlier
// commit, merges of any two, contents drawn from a few values so that a
// note often gets a content it had before.
type randomGraph struct {
	t       *testing.T
	w       *Workspace
	rng     *rand.Rand
	commits []gitver.Hash
	when    time.Time
	blobs   map[string]gitver.Hash // commit and key -> the note's blob
}

// newHistory is a random history on a new workspace, drawn from seed,
// holding the workspace's first commit.
func newHistory(t *testing.T, seed uint64) *randomGraph {
	t.Helper()
	w := newWorkspace(t, false)
	init, err := w.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	return &randomGraph{t: t, w: w, rng: rand.New(rand.NewPCG(seed, 7)), commits: []gitver.Hash{init}, when: time.Unix(1_700_000_000, 0),
		blobs: map[string]gitver.Hash{}}
}

func (h *randomGraph) content() gitver.Hash {
	if h.rng.IntN(6) == 0 {
		return gitver.ZeroHash // the note is deleted, or stays absent
	}
	blob, err := h.w.repo.WriteBlob(fmt.Appendf(nil, "---\ndigest: value %d\n---\n", h.rng.IntN(4)))
	if err != nil {
		h.t.Fatal(err)
	}
	return blob
}

// commit makes a commit on parents[0] with some notes changed, and the
// other parents as further parents.
func (h *randomGraph) commit(parents ...gitver.Hash) gitver.Hash {
	h.t.Helper()
	changes := map[string]gitver.Hash{}
	for range 1 + h.rng.IntN(2) {
		key := graphKeys[h.rng.IntN(len(graphKeys))]
		if h.rng.IntN(4) == 0 {
			changes[key+".blob.md"] = h.content() // the note's blob file alone
		} else {
			changes[key+".md"] = h.content()
		}
	}
	if len(parents) > 1 && h.rng.IntN(3) == 0 {
		changes = nil // a clean merge: the first parent's tree
	}
	h.when = h.when.Add(time.Second)
	who := gitver.Signature{Name: "graph", Email: "graph@example.com", When: h.when}
	base, err := h.w.repo.Commit(gitver.CommitRequest{Parent: parents[0], Changes: changes, Author: who,
		Message: fmt.Sprintf("commit %d", len(h.commits))})
	if err != nil {
		h.t.Fatal(err)
	}
	if len(parents) == 1 {
		h.commits = append(h.commits, base)
		return base
	}
	info, err := h.w.repo.ReadCommit(base)
	if err != nil {
		h.t.Fatal(err)
	}
	merge, err := h.w.repo.WriteCommit(gitver.CommitObject{Tree: info.Tree, Parents: parents, Author: who, Committer: who,
		Message: fmt.Sprintf("merge %d", len(h.commits))})
	if err != nil {
		h.t.Fatal(err)
	}
	h.commits = append(h.commits, merge)
	return merge
}

func (h *randomGraph) pick() gitver.Hash { return h.commits[h.rng.IntN(len(h.commits))] }

// reach lists every commit c reaches, c included.
func (h *randomGraph) reach(c gitver.Hash) []*gitver.CommitInfo {
	seen := map[gitver.Hash]bool{c: true}
	var out []*gitver.CommitInfo
	for queue := []gitver.Hash{c}; len(queue) > 0; queue = queue[1:] {
		info, err := h.w.repo.ReadCommit(queue[0])
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, info)
		for _, p := range info.Parents {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return out
}

func (h *randomGraph) blob(c gitver.Hash, key string) gitver.Hash {
	if b, ok := h.blobs[c.String()+key]; ok {
		return b
	}
	b, err := h.w.repo.PathBlob(c, key+".md")
	if err != nil {
		h.t.Fatal(err)
	}
	h.blobs[c.String()+key] = b
	return b
}

// files is what commit c holds at the note: its file's blob and its blob
// file's.
func (h *randomGraph) files(c gitver.Hash, key string) [2]gitver.Hash {
	blobFile, err := h.w.repo.PathBlob(c, key+".blob.md")
	if err != nil {
		h.t.Fatal(err)
	}
	return [2]gitver.Hash{h.blob(c, key), blobFile}
}

// version is the definition, computed the slow way: the commits c reaches
// whose content at the note's files differs from a parent's (from nothing,
// for a root commit).
func (h *randomGraph) version(c gitver.Hash, key string) int {
	n := 0
	for _, info := range h.reach(c) {
		mine := h.files(info.Hash, key)
		differs := len(info.Parents) == 0 && mine != [2]gitver.Hash{}
		for _, p := range info.Parents {
			differs = differs || h.files(p, key) != mine
		}
		if differs {
			n++
		}
	}
	return n
}

// firstParentVersion counts the first-parent commits that changed the note:
// the definition of a linear history.
func (h *randomGraph) firstParentVersion(c gitver.Hash, key string) int {
	n := 0
	for !c.IsZero() {
		info, err := h.w.repo.ReadCommit(c)
		if err != nil {
			h.t.Fatal(err)
		}
		var before [2]gitver.Hash
		if p := info.FirstParent(); !p.IsZero() {
			before = h.files(p, key)
		}
		if h.files(c, key) != before {
			n++
		}
		c = info.FirstParent()
	}
	return n
}

// moveBranch points the board's branch at c, as a person's git would.
func (h *randomGraph) moveBranch(c gitver.Hash) {
	h.t.Helper()
	old, err := h.w.repo.Head()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.w.repo.UpdateBranch(old, c, gitver.Signature{Name: "graph", Email: "graph@example.com", When: h.when},
		"graph: move"); err != nil {
		h.t.Fatal(err)
	}
}

// checkIndex brings the index to the branch, at head, and compares it with
// the definition there.
func (h *randomGraph) checkIndex(head gitver.Hash, what string) {
	h.t.Helper()
	if _, err := h.w.Cursor(); err != nil {
		h.t.Fatal(err)
	}
	if at := h.checkIndexAsFar(what); at != head {
		h.t.Fatalf("%s: the index is at %s, want the branch's %s", what, at.Short(), head.Short())
	}
}

// A note's version is defined on the commit graph, so that it is the same
// number on every clone whatever merges do: the commits the branch reaches
// whose content at the note differs from a parent's. Over random histories
// (commits on any commit, merges of any two in either order, contents that
// come back, deletions), the branch moved anywhere (forward, back, across)
// and the index following it incrementally:
//
//   - the index's version of every note and its cursor equal the
//     definition, computed the slow way, after every move and after a
//     rebuild;
//   - on a linear history the version is the first-parent count (boards
//     made before merges counted need no migration);
//   - along any path of history a version never goes down, and two commits
//     one reaches the other with the same version have the same content:
//     a version number never stands for two contents.
func TestVersionsOnTheCommitGraph(t *testing.T) {
	fixtures.RequireGit(t)
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			h := newHistory(t, seed)
			w := h.w
			linear := seed%4 == 0
			for range 30 {
				switch {
				case linear:
					h.commit(h.commits[len(h.commits)-1])
				case h.rng.IntN(4) == 0 && len(h.commits) > 2:
					a, b := h.pick(), h.pick()
					if a != b {
						h.commit(a, b)
					}
				default:
					h.commit(h.pick())
				}
				if h.rng.IntN(3) == 0 || linear {
					head := h.commits[len(h.commits)-1]
					if !linear && h.rng.IntN(2) == 0 {
						head = h.pick()
					}
					h.moveBranch(head)
					h.checkIndex(head, fmt.Sprintf("after a move to %s", head.Short()))
				}
			}
			head := h.commits[len(h.commits)-1]
			h.moveBranch(head)
			if _, err := w.Reindex(nil); err != nil {
				t.Fatal(err)
			}
			h.checkIndex(head, "after a rebuild")
			h.checkLog()
			for _, c := range h.commits {
				for _, key := range graphKeys {
					v := h.version(c, key)
					if linear {
						if fp := h.firstParentVersion(c, key); v != fp {
							t.Fatalf("%s at %s: version %d on a linear history, first-parent count %d", key, c.Short(), v, fp)
						}
					}
					for _, info := range h.reach(c) {
						a := info.Hash
						va := h.version(a, key)
						if va > v {
							t.Fatalf("%s: version %d at %s, which reaches %s at version %d", key, v, c.Short(), a.Short(), va)
						}
						if va == v && h.blob(a, key) != h.blob(c, key) {
							t.Fatalf("%s: version %d stands for two contents, at %s and at %s", key, v, a.Short(), c.Short())
						}
					}
				}
			}
		})
	}
}

// checkLog compares every version the log gives with the version on the
// graph at its commit: what a write that made that commit was
// acknowledged at, whatever merges came after.
func (h *randomGraph) checkLog() {
	h.t.Helper()
	for _, key := range graphKeys {
		entries, err := agentView(h.w).Log("bb://acme/"+key, 1000)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			h.t.Fatal(err)
		}
		for _, e := range entries {
			c, err := gitver.ParseHash(e.Commit)
			if err != nil {
				h.t.Fatal(err)
			}
			if want := h.version(c, key); e.Version != want {
				h.t.Fatalf("%s: the log gives %s version %d, the graph %d", key, c.Short(), e.Version, want)
			}
			if want := h.w.reader.digestOf(h.blob(c, key)); e.Digest != want {
				h.t.Fatalf("%s: the log gives %s the digest %q; its note file holds %q", key, c.Short(), e.Digest, want)
			}
		}
	}
}

// The log's versions are the graph's, also for the commits of a merge's
// second side, which the index orders after commits they do not reach (a
// person's `git pull` puts the remote's side second): random histories of
// commits and merges, indexed from nothing at their last commit.
func TestLogVersionsAreTheGraphs(t *testing.T) {
	fixtures.RequireGit(t)
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			h := newHistory(t, seed)
			w := h.w
			for range 30 {
				if a, b := h.pick(), h.pick(); h.rng.IntN(4) == 0 && len(h.commits) > 2 && a != b {
					h.commit(a, b)
				} else {
					h.commit(h.pick())
				}
			}
			h.moveBranch(h.commits[len(h.commits)-1])
			if _, err := w.Reindex(nil); err != nil {
				t.Fatal(err)
			}
			h.checkLog()
		})
	}
}

// checkIndexAsFar compares the index, at whatever commit it holds now, with
// the definition there (every note's version and blob, the cursor), and
// returns that commit: a build in steps leaves it whole after each step.
func (h *randomGraph) checkIndexAsFar(what string) gitver.Hash {
	h.t.Helper()
	var at gitver.Hash
	err := h.w.ReadIndex(func(s *index.Snapshot) error {
		var cursor int
		var err error
		if at, cursor, err = s.Head(); err != nil || at.IsZero() {
			return err
		}
		if want := len(h.reach(at)); cursor != want {
			h.t.Fatalf("%s: at %s, cursor %d, want %d (the commits it reaches)", what, at.Short(), cursor, want)
		}
		for _, key := range graphKeys {
			n, ok, err := s.Note(key)
			if err != nil {
				return err
			}
			if want := h.version(at, key); !ok && want != 0 || ok && n.Version != want {
				h.t.Fatalf("%s: at %s, %s is at version %d (indexed %v), want %d", what, at.Short(), key, n.Version, ok, want)
			}
			if blob := h.blob(at, key); ok && n.Present != !blob.IsZero() || ok && n.NoteBlob != blob {
				h.t.Fatalf("%s: at %s, %s holds %s (present %v), want %s", what, at.Short(), key, n.NoteBlob.Short(), n.Present, blob.Short())
			}
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return at
}

// The background build of the index (a server's, on a board far behind its
// branch) applies the commits in steps. Over random histories, with the
// bound set so low that every catch-up is a build and every step one
// commit where the index is whole, and the branch moved (forward, back,
// across) while a build runs: after every step the index holds the
// definition's versions at its commit, and once the build is done, at the
// branch's.
func TestBuildInStepsHoldsTheDefinition(t *testing.T) {
	fixtures.RequireGit(t)
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			h := newHistory(t, 100+seed)
			w := h.w
			w.catch.Close()
			w.catch = catchup.New(w.repo, w.idx, catchup.Options{Workspace: w.name,
				BuildPath: filepath.Join(w.dir, note.IndexFile+"-build"), Gone: w.branchGone,
				InBackground: true, InlineCommits: 1, Step: time.Nanosecond})
			defer w.catch.Close()
			var fromGit map[string]index.Note // the notes from git at the last look during the build
			for round := range 4 {
				for range 15 {
					switch a, b := h.pick(), h.pick(); {
					case h.rng.IntN(4) == 0 && a != b:
						h.commit(a, b)
					case h.rng.IntN(4) == 0:
						h.commit(a)
					default:
						h.commit(h.commits[len(h.commits)-1])
					}
				}
				head := h.commits[len(h.commits)-1-h.rng.IntN(3)]
				h.moveBranch(head)
				steps := 0
				for {
					_, _, err := w.catch.CatchUp(nil, nil)
					if err == nil {
						break
					}
					if !errors.Is(err, ErrUnavailable) {
						t.Fatal(err)
					}
					steps++
					if steps%2 == 0 {
						// A write during the build: a commit on the branch.
						head = h.commit(head)
						h.moveBranch(head)
					}
					at := h.checkIndexAsFar(fmt.Sprintf("round %d, during the build", round))
					fromGit = h.checkNotesFromGit(head, at, fmt.Sprintf("round %d, during the build", round))
					if round == 2 && steps == 3 {
						// Moved while the build runs: it plans again.
						head = h.pick()
						h.moveBranch(head)
						fromGit = nil
					}
					time.Sleep(time.Millisecond)
				}
				h.checkIndex(head, fmt.Sprintf("round %d, after the build (%d looks while it ran)", round, steps))
				h.checkSameAsIndexed(fromGit, fmt.Sprintf("round %d, the last look during the build", round))
				fromGit = nil
			}
		})
	}
}

// checkNotesFromGit compares every note as a write reads it from git while
// the index, at at, is behind the branch at head (catchup.NoteFromGit)
// with the definition at head, and returns them. A branch that no longer
// reaches at gives none.
func (h *randomGraph) checkNotesFromGit(head, at gitver.Hash, what string) map[string]index.Note {
	h.t.Helper()
	out := map[string]index.Note{}
	for _, key := range graphKeys {
		n, err := h.w.catch.NoteFromGit(head, key, 0)
		var building *catchup.Building
		if errors.As(err, &building) {
			if ok, aerr := h.w.repo.IsAncestor(at, head); aerr != nil || ok {
				h.t.Fatalf("%s: %s from git at %s: %v, although the branch reaches the index's %s (%v)", what, key, head.Short(), err, at.Short(), aerr)
			}
			return nil
		}
		if err != nil {
			h.t.Fatal(err)
		}
		if want := h.version(head, key); n.Version != want {
			h.t.Fatalf("%s: %s from git at %s is version %d, the definition %d (the index at %s)", what, key, head.Short(), n.Version, want, at.Short())
		}
		if blob := h.blob(head, key); n.Present != !blob.IsZero() || n.NoteBlob != blob {
			h.t.Fatalf("%s: %s from git at %s holds %s (present %v), want %s", what, key, head.Short(), n.NoteBlob.Short(), n.Present, blob.Short())
		}
		out[key] = n
	}
	return out
}

// checkSameAsIndexed compares notes read from git during a build with the
// index's rows once the build is done, at the same commit: the cursor of
// their last change and who made it too.
func (h *randomGraph) checkSameAsIndexed(fromGit map[string]index.Note, what string) {
	h.t.Helper()
	err := h.w.ReadIndex(func(s *index.Snapshot) error {
		for key, g := range fromGit {
			n, _, err := s.Note(key)
			if err != nil {
				return err
			}
			if g.Version != n.Version || g.LastSeq != n.LastSeq || g.LastAuthor != n.LastAuthor || g.Topic != n.Topic {
				h.t.Fatalf("%s: %s from git: version %d, last changed at %d by %q, topic %q; indexed: %d, %d, %q, %q",
					what, key, g.Version, g.LastSeq, g.LastAuthor, g.Topic, n.Version, n.LastSeq, n.LastAuthor, n.Topic)
			}
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}
