package catchup

import (
	"errors"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Notes read from git while the index is behind the branch (a build in the
// background): a named note for a reader, and a note with its version for
// a writer, which checks its expect_version against the branch and cannot
// wait for the build.

// FromGitCommits bounds the history NoteFromGit walks: the commits the
// index does not hold yet. A write's check reads them all, under the write
// lock, along the build's own walk: with ten thousand (a person's pull of a
// busy day's work on a large board), a write took 0.35 s beside the build
// on a 2-core machine, the first one of the build up to 0.9 s. Further
// behind, a write waits for the build (unavailable), which soon brings it
// within bounds.
const FromGitCommits = 15000

// errTooFar stops a walk of history that would read more than its limit.
var errTooFar = errors.New("too far behind")

// NoteAt reads the note at key as commit holds it, from git alone: its
// fields, without the version, which only the index counts. For a read
// while the index is being built. Present is false when there is none.
func (c *Catcher) NoteAt(commit gitver.Hash, key string) (index.Note, error) {
	noteBlob, err := c.repo.PathBlob(commit, key+".md")
	if err != nil || noteBlob.IsZero() {
		return index.Note{Key: key}, err
	}
	var contentBlob gitver.Hash
	var contentPath string
	for _, p := range note.BlobFiles(key) {
		b, err := c.repo.PathBlob(commit, p)
		if err != nil {
			return index.Note{}, err
		}
		if !b.IsZero() {
			contentBlob, contentPath = b, p
		}
	}
	n, _, _, err := c.readNote(key, noteBlob, contentBlob, contentPath)
	return n, err
}

// NoteFromGit is the note at key as the branch at head holds it, version
// and all, while the index is behind: the index's count where it is whole,
// plus each commit head reaches that the index does not hold yet and whose
// content at the note's files differs from a parent's, counted as the
// build will count it (sync.go). Its cursor fields (LastSeq, LastAuthor)
// are those the build will give it too. It reads at most limit commits of
// history; further behind, or when head does not reach the commit the
// index holds (the branch was reset while the build runs), it is a
// *Building error: the write waits for the build.
func (c *Catcher) NoteFromGit(head gitver.Hash, key string, limit int) (index.Note, error) {
	var indexed index.Note
	var order []*gitver.CommitInfo
	seq := 0
	err := c.idx.Read(func(s *index.Snapshot) error {
		at, atSeq, err := s.Head()
		if err != nil {
			return err
		}
		seq = atSeq
		if indexed, _, err = s.Note(key); err != nil {
			return err
		}
		order, err = c.unindexed(s, at, atSeq, head, limit)
		return err
	})
	if errors.Is(err, errTooFar) {
		st, _ := c.Building()
		return index.Note{}, &Building{st}
	}
	if err != nil {
		return index.Note{}, err
	}
	n, err := c.NoteAt(head, key)
	if err != nil {
		return index.Note{}, err
	}
	n.Topic, n.Version, n.LastSeq, n.LastAuthor = indexed.Topic, indexed.Version, indexed.LastSeq, indexed.LastAuthor
	look := &noteLook{c: c, files: noteFiles(key), commits: make(map[gitver.Hash]*gitver.CommitInfo, len(order)),
		seen: make(map[gitver.Hash]filesSeen, len(order))}
	for _, ci := range order {
		look.commits[ci.Hash] = ci
	}
	for i, ci := range order {
		changed, err := look.changed(ci)
		if err != nil {
			return index.Note{}, err
		}
		if changed {
			n.Version++
			n.LastSeq, n.LastAuthor = seq+i+1, ci.Author.Name
		}
	}
	if n.Topic == "" && n.Version > 0 {
		n.Topic, _, _ = strings.Cut(key, "/") // as the index gives a note its row
	}
	return n, nil
}

// unindexed lists the commits head reaches that the index, at indexed
// with cursor seq, does not hold yet, in the order the build applies them
// (planSync); errTooFar when that is more than limit, or when head does not
// reach indexed. The last list is kept: the next write's look reuses it
// (fromGitWalk.reuse), so that only the first write of a build walks the
// history.
func (c *Catcher) unindexed(s commitLookup, indexed gitver.Hash, seq int, head gitver.Hash, limit int) ([]*gitver.CommitInfo, error) {
	// While this process's build walks the history, its walk is awaited
	// rather than made twice at once.
	for deadline := time.Now().Add(time.Second); ; {
		if st, ok := c.Building(); ok && limit > 0 && (st.Total-st.Done > limit || st.Total == 0 && st.Walked > limit) {
			return nil, errTooFar // the build's own count: no walk needed to know
		}
		c.mu.Lock()
		walking := c.walking
		c.mu.Unlock()
		if walking == nil || time.Now().After(deadline) {
			break
		}
		select {
		case <-walking:
		case <-time.After(10 * time.Millisecond):
		}
	}
	c.mu.Lock()
	last := c.lastWalk
	c.mu.Unlock()
	if last != nil {
		order, ok, err := last.reuse(c.repo, indexed, seq, head)
		if err != nil || ok {
			c.keepWalk(&fromGitWalk{indexed: indexed, seq: seq, head: head, order: order})
			return order, err
		}
	}
	plan, err := c.planSync(s, head, indexed, limit, nil)
	if err != nil {
		return nil, err
	}
	if !plan.reachesIndexed {
		return nil, errTooFar // a reset while the build runs: the build cuts the index back first
	}
	c.keepWalk(&fromGitWalk{indexed: indexed, seq: seq, head: head, order: plan.order})
	return plan.order, nil
}

// walkBegins tells writes that this process's build walks the history,
// until the function it returns is called.
func (c *Catcher) walkBegins() (walked func()) {
	ch := make(chan struct{})
	c.mu.Lock()
	c.walking = ch
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		c.walking = nil
		c.mu.Unlock()
		close(ch)
	}
}

func (c *Catcher) keepWalk(w *fromGitWalk) {
	c.mu.Lock()
	c.lastWalk = w
	c.mu.Unlock()
}

// fromGitWalk is a walk of the commits head reaches that the index, at
// indexed with cursor seq, did not hold, in the build's order.
type fromGitWalk struct {
	indexed, head gitver.Hash
	seq           int
	order         []*gitver.CommitInfo
}

// maxWritesOnWalk bounds the commits on top of a walk's head that reuse
// follows.
const maxWritesOnWalk = 64

// reuse is w's order for the index now at indexed (seq) and the branch at
// head, when w tells it: the branch is where it was, or has commits on top
// of it each with one parent (writes made since), which come after it in
// the build's order; and the index is where it was, or the build has
// applied a first part of the order, which leaves the rest: a step of the
// build ends at a commit of the branch's first-parent history, after what
// it reaches, and a walk from the branch stops at the same commits.
func (w *fromGitWalk) reuse(repo *gitver.Repo, indexed gitver.Hash, seq int, head gitver.Hash) ([]*gitver.CommitInfo, bool, error) {
	var writes []*gitver.CommitInfo
	for h := head; h != w.head; {
		if len(writes) == maxWritesOnWalk {
			return nil, false, nil
		}
		ci, err := repo.ReadCommit(h)
		if err != nil || len(ci.Parents) != 1 {
			return nil, false, err
		}
		writes = append(writes, ci)
		h = ci.Parents[0]
	}
	slices.Reverse(writes)
	order := append(slices.Clip(w.order), writes...)
	if indexed == w.indexed {
		return order, seq == w.seq, nil
	}
	i := slices.IndexFunc(order, func(ci *gitver.CommitInfo) bool { return ci.Hash == indexed })
	if i < 0 || seq != w.seq+i+1 {
		return nil, false, nil
	}
	return order[i+1:], true, nil
}

// noteLook tells which commits changed one note's files, each commit's
// files read once: in the walk's order, a commit's parent came just before.
type noteLook struct {
	c       *Catcher
	files   filesOfNote
	commits map[gitver.Hash]*gitver.CommitInfo // those walked
	seen    map[gitver.Hash]filesSeen
}

// filesOfNote are a note's files: the directory that holds them, and
// their names in it.
type filesOfNote struct {
	dir   string
	names []string
}

func noteFiles(key string) filesOfNote {
	f := filesOfNote{dir: path.Dir(key)}
	if f.dir == "." {
		f.dir = ""
	}
	for _, p := range note.Files(key) {
		f.names = append(f.names, path.Base(p))
	}
	return f
}

// filesSeen is what a commit holds of a note: the tree of its directory,
// and its files' blobs there (zero for none; nil while not read).
type filesSeen struct {
	tree  gitver.Hash
	blobs []gitver.Hash
}

// changed reports whether commit ci's content at the note's files differs
// from a parent's (from nothing, for a root commit): whether the index
// counts it as a version of the note, as gitver.Repo.Changes lists files.
func (l *noteLook) changed(ci *gitver.CommitInfo) (bool, error) {
	mine, err := l.at(ci, len(ci.Parents) == 0)
	if err != nil {
		return false, err
	}
	if len(ci.Parents) == 0 {
		return slices.ContainsFunc(mine.blobs, func(b gitver.Hash) bool { return !b.IsZero() }), nil
	}
	for _, p := range ci.Parents {
		pc, ok := l.commits[p]
		if !ok {
			if pc, err = l.c.repo.ReadCommit(p); err != nil {
				return false, err
			}
		}
		theirs, err := l.at(pc, false)
		if err != nil {
			return false, err
		}
		if theirs.tree == mine.tree {
			continue // the same directory: the same files
		}
		if mine, err = l.at(ci, true); err != nil {
			return false, err
		}
		if theirs, err = l.at(pc, true); err != nil {
			return false, err
		}
		if !slices.Equal(theirs.blobs, mine.blobs) {
			return true, nil
		}
	}
	return false, nil
}

// at is what commit ci holds of the note: its directory's tree, and with
// blobs its files' blobs too.
func (l *noteLook) at(ci *gitver.CommitInfo, blobs bool) (filesSeen, error) {
	f, ok := l.seen[ci.Hash]
	if !ok {
		tree, err := l.c.repo.SubTree(ci.Tree, l.files.dir)
		if err != nil {
			return f, err
		}
		f = filesSeen{tree: tree}
	}
	if blobs && f.blobs == nil {
		var err error
		if f.blobs, err = l.c.repo.FileBlobs(f.tree, l.files.names); err != nil {
			return f, err
		}
	}
	l.seen[ci.Hash] = f
	return f, nil
}
