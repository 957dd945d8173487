package pipeline

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Tx is one tool write being built: the unit of work that travels
// down the write path as an argument, from the caller's build function
// (updateLocked, linkLocked) to the commit it makes. Every tool write is
// built the same way, alone or in a batch: on base, the branch or the
// write before it in its batch, checked against the note's version there
// (noteIn), and made one commit on top (commit). The batch's chain is then
// pushed (with a remote) and moved onto the branch (pipeline.go); the build
// is the same.
type Tx struct {
	q    *Pipeline   // what builds it
	head gitver.Hash // the branch when the write began
	base gitver.Hash // what the write builds on: head, or the batch's chain
	tip  gitver.Hash // base, then the write's own commit once built
	// built is the write's commit once built: its objects are staged in
	// memory (gitver.Repo.Stage), readable until the batch writes them
	// (as one pack, or loose when the write is alone).
	built *gitver.PendingCommit
	// changes are the files the commit changed, as gitver.Repo.Changes
	// lists them, so that nothing need diff its trees again.
	changes []gitver.PathChange
}

// noteIn is the note at key as tx builds on it: the derived index's row at
// the branch, then each write of the batch before it that changed the note
// counted as a version, as every reader counts them once they are on the
// branch. The index
// must be at tx.head: another process may have brought it to where the
// branch went since (a person's reset), and then the write starts over
// (fail.ErrBranchMoved), or it would check its expect_version against one
// commit and build on another. While the index is being built, the note
// is read from git, its version counted there (noteAtHead).
func (tx *Tx) NoteIn(key string) (index.Note, error) {
	if tx.base == tx.head {
		return tx.q.noteAtHead(key, tx.head)
	}
	return tx.ChainNote(key)
}

// commit builds the write's commit of changes on tx's base, and makes it
// the tip; committed is false, and nothing is built, when base holds every
// file as changes would leave it. A note's version counts the commits
// whose content at its files differs from a parent's (gitver.Repo.Changes),
// so a write that changes nothing is no version: it must make no commit,
// or it would be acknowledged at a version that no reader of git counts.
func (tx *Tx) Commit(changes []commits.Change, author gitver.Signature, message string) (committed bool, err error) {
	if tx.tip != tx.base {
		return false, fmt.Errorf("a write makes one commit; this one made %s already", tx.tip.Short())
	}
	if wt := tx.q.repo.WorkTree(); wt.Operation != "" {
		return false, fail.BusyWithGit(wt)
	}
	built, err := tx.q.commits.Build(tx.base, changes, author, message)
	if err != nil || built == nil {
		return false, err
	}
	tx.tip, tx.built, tx.changes = built.Hash, built.PendingCommit, built.Diff
	return true, nil
}

// TxAt is a transaction on base, the branch at head or a batch's chain on
// it, as a write of a batch is built (for tests that read a note as a
// write would).
func (q *Pipeline) TxAt(head, base gitver.Hash) *Tx {
	return &Tx{q: q, head: head, base: base, tip: base}
}

// Head is the branch when the write began.
func (tx *Tx) Head() gitver.Hash { return tx.head }

// Base is what the write builds on: the branch, or the batch's chain.
func (tx *Tx) Base() gitver.Hash { return tx.base }

// builtWrite is a write built in a batch.
type builtWrite struct {
	commit gitver.Hash
	info   *gitver.CommitInfo
	diff   []gitver.PathChange
	// pending is the commit as built, its objects in memory.
	pending *gitver.PendingCommit
}

// buildWrite runs attempt in a new transaction on the batch's chain as
// built tells (the branch for the first), and makes its commit the tip in
// built. mine is nil for a write answered without a commit (it changed
// nothing) or refused. waits says the write changed nothing on a note an
// earlier write of the batch changed: its answer waits for that write, and
// it is built again on the branch it reaches. The caller holds the write
// lock.
func (q *Pipeline) buildWrite(uri string, attempt func(*Tx) error, built *builtTip) (mine *builtWrite, waits bool, err error) {
	tx := &Tx{q: q, head: built.head, base: built.tip, tip: built.tip}
	if err := attempt(tx); err != nil {
		return nil, false, err
	}
	if tx.tip == tx.base {
		// Nothing to commit: answered as it is, at the note's version,
		// unless that version counts writes of the batch not on the
		// branch yet.
		if tx.base != tx.head {
			touched, err := tx.chainTouched(uri)
			return nil, touched && err == nil, err
		}
		return nil, false, nil
	}
	info, err := q.repo.ReadCommit(tx.tip)
	if err != nil {
		return nil, false, err
	}
	q.rememberChanges(info.Hash, tx.changes)
	built.tip = tx.tip
	return &builtWrite{commit: tx.tip, info: info, diff: tx.changes, pending: tx.built}, false, nil
}

// chainTouched reports whether the batch's writes under tx changed the
// note uri names.
func (tx *Tx) chainTouched(uri string) (bool, error) {
	key, ok := tx.q.keyOf(uri)
	if !ok {
		return false, nil
	}
	onBranch, err := tx.q.noteAtHead(key, tx.head)
	if err != nil {
		return false, err
	}
	inChain, err := tx.ChainNote(key)
	return inChain.Version != onBranch.Version, err
}

// builtTip is the tip of the chain a batch built, on the branch at head.
type builtTip struct{ head, tip gitver.Hash }

// keyOf is the note key a tool write's address names.
func (q *Pipeline) keyOf(uri string) (string, bool) {
	a, err := note.ParseAddress(uri, q.name)
	if err != nil {
		return "", false
	}
	return a.Short(), true
}

// chainNote is the note at key as the batch's writes before tx left it:
// the derived index's at the branch, then each commit of the chain that
// changed its file counted as a version.
func (tx *Tx) ChainNote(key string) (index.Note, error) {
	n, err := tx.q.noteAtHead(key, tx.head)
	if err != nil || tx.base == tx.head {
		return n, err
	}
	chain, _, err := tx.q.hist.CommitsUntil(tx.base, tx.head, maxChain)
	if err != nil {
		return n, err
	}
	notePath := key + ".md"
	var latest *gitver.CommitInfo
	for i, c := range chain { // newest first
		parent := tx.head
		if i+1 < len(chain) {
			parent = chain[i+1].Hash
		}
		changed, err := tx.q.chainChanged(c, parent, key)
		if err != nil {
			return n, err
		}
		if changed {
			if latest == nil {
				latest = c
			}
			n.Version++
		}
	}
	if latest == nil {
		return n, nil
	}
	n.LastAuthor = latest.Author.Name
	if n.NoteBlob, err = tx.q.repo.PathBlob(tx.base, notePath); err != nil {
		return n, err
	}
	n.Present, n.Digest, n.ContentPath, n.ContentBlob = !n.NoteBlob.IsZero(), "", "", gitver.ZeroHash
	if !n.Present {
		return n, nil
	}
	raw, err := tx.q.repo.ReadBlob(n.NoteBlob)
	if err != nil {
		return n, err
	}
	f, err := note.Parse(raw)
	if err != nil {
		return n, nil // loadNote says what is wrong with it
	}
	n.Digest = f.Str(note.KeyDigest)
	if name := f.Str(note.KeyBlob); name != "" {
		for _, p := range note.BlobFiles(key) {
			if path.Base(p) == name {
				n.ContentPath = p
				n.ContentBlob, err = tx.q.repo.PathBlob(tx.base, p)
			}
		}
	}
	return n, err
}

// chainChanged reports whether the commit c of a batch's chain, made on
// parent, changed the files of note key. A commit that changed the note's
// blob file alone counts too, as the derived index counts it: two writes
// of one digest by one agent within a second differ in their content
// only. A commit of the chain is a tool write, which changes its own
// note's files alone, and its message names the note: the commits of
// other notes' writes need no diff.
func (q *Pipeline) chainChanged(c *gitver.CommitInfo, parent gitver.Hash, key string) (bool, error) {
	if about, _, ok := q.messageKey(c.Message); ok {
		if about != key {
			return false, nil
		}
		p, err := q.repo.ReadCommit(parent)
		if err != nil {
			return false, err
		}
		return p.Tree != c.Tree, nil
	}
	diff, err := q.chainChanges(c)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(diff, func(d gitver.PathChange) bool { k, _ := note.KeyOf(d.Path); return k == key }), nil
}

// messageKey is the note a tool write's commit message names, and the
// version the write was built at.
func (q *Pipeline) messageKey(message string) (key string, version int, ok bool) {
	uri, version, ok := note.WrittenAt(message)
	if !ok {
		return "", 0, false
	}
	key, ok = q.keyOf(uri)
	return key, version, ok
}

// chainChanges is what a commit of a batch's chain changed, remembered:
// each write built on the chain looks at every commit in it. The caller
// holds the write lock.
func (q *Pipeline) chainChanges(c *gitver.CommitInfo) ([]gitver.PathChange, error) {
	if diff, ok := q.chainDiffs[c.Hash]; ok {
		return diff, nil
	}
	diff, err := q.repo.Changes(c)
	if err != nil {
		return nil, err
	}
	q.rememberChanges(c.Hash, diff)
	return diff, nil
}

// rememberChanges keeps what the commit c of a batch's chain changed, for
// chainChanges. The caller holds the write lock.
func (q *Pipeline) rememberChanges(c gitver.Hash, diff []gitver.PathChange) {
	if q.chainDiffs == nil || len(q.chainDiffs) >= maxChain {
		q.chainDiffs = map[gitver.Hash][]gitver.PathChange{}
	}
	q.chainDiffs[c] = diff
}

// subject is a commit message's first line.
func subject(message string) string {
	line, _, _ := strings.Cut(message, "\n")
	return line
}

// noteAtHead is the note at key on the branch at head, as the derived
// index holds it, which must be at head (see noteIn); while the index is
// being built, read from git, its version counted there for this note
// alone (catchup.NoteFromGit), so that writes go on during the build.
func (q *Pipeline) noteAtHead(key string, head gitver.Hash) (index.Note, error) {
	var n index.Note
	behind := false
	err := q.idx.Read(func(s *index.Snapshot) error {
		at, _, err := s.Head()
		if err != nil || at != head {
			behind = err == nil
			return err
		}
		n, _, err = s.Note(key)
		return err
	})
	if !behind {
		return n, err
	}
	if _, building := q.catch.Building(); building {
		return q.catch.NoteFromGit(head, key, catchup.FromGitCommits)
	}
	return n, fail.ErrBranchMoved
}
