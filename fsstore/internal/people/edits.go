package people

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// People edit notes in their editors, create, move and delete them, and run
// git by hand. Every such change that git does not have yet is committed as
// the person's own version, through the same write path as a tool write
// (lock, journal, commit, git's index, derived index), when:
//
//   - a watcher reports that files changed (Workspace.Watch), after a quiet
//     moment;
//   - a server starts (changes made while none ran);
//   - before every tool write: the paths a watcher has reported and not yet
//     committed, and the note being written; without a watcher, the whole
//     work tree. Correctness never depends on a watcher having seen an event.
//
// A change is found by comparing the work tree with the branch's head, under
// the write lock: the program's own writes (which are committed before their
// files are in place) are never mistaken for a person's, and when several
// processes watch one workspace, the first commits a change and the others
// find nothing left to commit.

// Edit is one note a person changed.
type Edit struct {
	// Op is create, edit, delete or move.
	Op  string
	Key string
	// From is where a moved note was.
	From string
	// Version is the note's version after the commit.
	Version int
	Digest  string
	// Problem says why agents cannot read the note as it is now, if they
	// cannot: unreadable front matter, no digest, a missing blob file.
	Problem string
	// Merged is set when the person's save was made from an earlier
	// version and merged with what was written since (saves.go).
	Merged bool
}

// EditReport is what committing people's edits did.
type EditReport struct {
	// Commit is the commit made, "" when there was nothing to commit.
	Commit string
	Author string
	Edits  []Edit
	// Skipped are files left uncommitted, each with the reason and the fix.
	Skipped []string
	// Unsettled are files that looked half-saved (emptied a moment ago):
	// they stay pending, to be compared again shortly.
	Unsettled []string
}

// Lines renders the report's edits for a log, one line per note.
func (r *EditReport) Lines() []string {
	var out []string
	for _, e := range r.Edits {
		line := fmt.Sprintf("%s %s by %s", e.Op, e.Key, r.Author)
		switch e.Op {
		case "move":
			line = fmt.Sprintf("move %s to %s by %s", e.From, e.Key, r.Author)
		}
		if e.Op != "delete" {
			line += fmt.Sprintf(" (v%d)", e.Version)
		}
		if e.Merged {
			line += ", merged with what was written since the version it was made from"
		}
		if e.Problem != "" {
			line += ": " + e.Problem
		}
		out = append(out, line)
	}
	return out
}

// Pending are the work-tree paths a watcher reported and that have not
// been compared with git yet.
type Pending struct {
	mu    sync.Mutex
	paths map[string]bool
	// all asks for a comparison of the whole work tree: at start, after
	// events were lost.
	all bool
	// watched is set while a watcher reports changes; without one, every
	// write compares the whole work tree, unless the process is oneShot.
	watched, oneShot bool
}

// NewPending is the pending edits of a process; oneShot for one command
// (the CLI), whose writes compare only their own notes.
func NewPending(oneShot bool) *Pending { return &Pending{oneShot: oneShot} }

// SetWatched says whether a watcher reports changes now.
func (p *Pending) SetWatched(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watched = on
}

// Add has paths compared, and with all the whole work tree.
func (p *Pending) Add(paths []string, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paths == nil {
		p.paths = map[string]bool{}
	}
	for _, q := range paths {
		p.paths[q] = true
	}
	p.all = p.all || all
}

// waiting reports whether edits wait to be compared.
func (p *Pending) Waiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.paths) > 0 || p.all
}

// isWatched says whether a watcher reports changes.
func (p *Pending) isWatched() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.watched
}

// take returns and forgets what is pending.
func (p *Pending) Take() (paths []string, all bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for q := range p.paths {
		paths = append(paths, q)
	}
	sort.Strings(paths)
	all = p.all || !p.watched && !p.oneShot
	p.paths, p.all = nil, false
	return paths, all
}

func (p *People) CommitEdits(paths []string, all bool) (*EditReport, error) {
	if st, building := p.catch.Building(); building {
		// Edits wait for the build: their versions are the index's to
		// count, and a look at the whole tree now would read every file
		// from git, beside the build.
		p.edits.Add(paths, all)
		return &EditReport{}, &catchup.Building{Status: st}
	}
	var skipped []string
	compareFirst, rescanned := !all, false
	if all {
		if narrowed, problems, ok := p.RescanUnlocked(); ok {
			// The files that hold what is committed are passed over
			// without the lock, and their stats recorded, so that the
			// next look passes over them too: after a build of the index
			// or a copy of the board, that is every file, and the writes
			// must not wait while each is read.
			if narrowed, err := p.ChangedPaths(narrowed, true); err == nil {
				paths, all, skipped, rescanned = append(narrowed, paths...), false, problems, true
				if len(paths) == 0 {
					return &EditReport{Skipped: skipped}, nil
				}
			}
		}
	}
	rep, err := p.commitEditsAt(paths, all, compareFirst)
	if err != nil && rescanned {
		p.edits.Add(nil, true) // the whole tree is looked at again
	}
	rep.Skipped = append(skipped, rep.Skipped...)
	return rep, err
}

// RescanUnlocked looks at the whole work tree without the write lock and
// returns the paths whose files may differ from the branch's head: no stat
// recorded for them, another stat or blob than recorded, gone, or changed
// by the commits the index has not caught up with yet. A look at the whole
// tree compared every file under the write lock (1.4 s on 100,000 notes,
// and more once the index was built anew, without stats), and the writes
// of a server that had just started waited for it. ok is false when the
// tree cannot be walked: the whole tree is then compared under the lock.
func (p *People) RescanUnlocked() (paths, problems []string, ok bool) {
	head, err := p.repo.Head()
	if err != nil {
		return nil, nil, false
	}
	found, treeProblems, listed := p.WalkNotes()
	if !listed {
		return nil, nil, false
	}
	var indexed gitver.Hash
	attempts := 0
	err = p.idx.Read(func(s *index.Snapshot) error {
		// The comparison takes what it compared out of found: a retried
		// read starts over from a new walk.
		if attempts++; attempts > 1 {
			if found, treeProblems, listed = p.WalkNotes(); !listed {
				return errors.New("the work tree cannot be listed")
			}
		}
		paths = paths[:0]
		var err error
		if indexed, _, err = s.Head(); err != nil {
			return err
		}
		err = s.EachPresentFile(func(f index.PresentFile) error {
			st, ok := found[f.Path]
			switch {
			case !ok: // gone
				paths = append(paths, f.Path)
			case !f.HasStat || f.Recorded.Blob != f.Committed || !index.SameStat(f.Recorded, index.StatOf(st)):
				paths = append(paths, f.Path)
			}
			delete(found, f.Path)
			return nil
		})
		if err != nil {
			return err
		}
		for rel := range found { // new: no present note has it
			paths = append(paths, rel)
		}
		return nil
	})
	if err == nil && indexed != head {
		// What the branch changed since the index's commit is looked at
		// too: a file there may match the index's stat and not the head.
		var changed []string
		if changed, err = p.pathsBetween(indexed, head); err == nil {
			paths = append(paths, changed...)
		}
	}
	if err != nil {
		return nil, nil, false
	}
	for _, problem := range treeProblems {
		problems = append(problems, problem.String())
	}
	return paths, problems, true
}

// pathsBetween lists the files whose content differs between commits
// from (zero for none) and to.
func (p *People) pathsBetween(from, to gitver.Hash) ([]string, error) {
	var trees [2]gitver.Hash
	for i, h := range []gitver.Hash{from, to} {
		if h.IsZero() {
			continue
		}
		c, err := p.repo.ReadCommit(h)
		if err != nil {
			return nil, err
		}
		trees[i] = c.Tree
	}
	changes, err := p.repo.DiffTrees(trees[0], trees[1])
	if err != nil {
		return nil, err
	}
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out, nil
}

// commitEditsAt commits the edits to paths, or to the whole work tree.
// With compareFirst, the paths whose files hold what the branch's head
// holds are passed over before the lock is taken.
func (p *People) commitEditsAt(paths []string, all, compareFirst bool) (*EditReport, error) {
	if compareFirst {
		var err error
		if paths, err = p.ChangedPaths(paths, false); err != nil || len(paths) == 0 {
			if err != nil {
				p.edits.Add(paths, false)
			}
			return &EditReport{}, err
		}
	}
	var rep *EditReport
	err := p.lock(func() error {
		p.edits.Add(paths, all)
		// What a reset dropped and could not be brought back yet is the
		// next write's to wait for: edits are compared all the same.
		if err := p.Repair(); err != nil && !errors.Is(err, fail.ErrBranchMoved) {
			return err
		}
		var err error
		_, rep, err = p.CommitEditsLocked(nil)
		return err
	})
	if rep == nil {
		rep = &EditReport{}
	}
	return rep, err
}

// MisnamedNote says why a Markdown file a person saved in a topic folder is
// not a note, "" when it is one or is not meant as one (README.md at the
// root, a file deleted).
func (p *People) MisnamedNote(rel string) string {
	if _, err := p.root.Lstat(rel); err != nil {
		return ""
	}
	if problem := p.misnamed(rel); problem != nil {
		return problem.String()
	}
	return ""
}

// misnamed says why the Markdown file at p, in a topic folder, is not a
// note although it looks meant as one; nil when it is a note or is not a
// Markdown file in a folder (README.md at the root).
func (p *People) misnamed(rel string) *TreeProblem {
	if !strings.HasSuffix(rel, ".md") || !strings.Contains(rel, "/") {
		return nil
	}
	if _, ok := note.KeyOf(rel); ok {
		return nil
	}
	a, err := note.ParseAddress(strings.TrimSuffix(rel, ".md"), p.name)
	if err != nil {
		return &TreeProblem{Path: rel, Minor: true, What: "not a note (" + fail.Msg(err) + ")",
			Fix: "rename it to an address of the grammar, or move it out of the topic folders"}
	}
	return &TreeProblem{Path: rel, Minor: true, What: "not a note: a note's file name is its address in lower case",
		Fix: "rename it " + a.Short() + ".md"}
}

// ChangedPaths keeps the paths whose file is not what the branch's head
// holds. It runs without the write lock, so that the echoes of the program's
// own writes (each seen by every watching process) cost no lock: a file
// equal to the head's blob has nothing to commit, whatever is in flight.
// With record, the stats of the files passed over are recorded, each with
// the blob its content was read as (a stat taken before the read, and old
// enough to trust): true of the file whatever the branch does meanwhile,
// and a file saved since has another stat.
//
// It does not bring the derived index up to date either: when the index is
// behind the branch (a writer is between its branch move and its index
// update, or a person committed), the head's blobs are read from git. Every
// watching process catching the index up itself would make them all queue
// for its write transaction, and the writer with them.
func (p *People) ChangedPaths(paths []string, record bool) ([]string, error) {
	head, err := p.repo.Head()
	if err != nil {
		return paths, err
	}
	var out []string
	same := map[string]index.DiskStat{}
	err = p.idx.Read(func(s *index.Snapshot) error {
		out = out[:0] // a retried read starts over
		clear(same)
		indexed, _, err := s.Head()
		if err != nil {
			return err
		}
		for _, file := range paths {
			if _, ok := note.KeyOf(file); !ok {
				continue
			}
			var committed gitver.Hash
			if indexed == head {
				committed, err = s.FileBlob(file)
			} else {
				committed, err = p.repo.PathBlob(head, file)
			}
			if err != nil {
				return err
			}
			content, fi, ok, err := p.files.ReadFile(file)
			switch {
			case err != nil || ok && gitver.BlobHash(content) != committed || !ok && !committed.IsZero():
				out = append(out, file)
			case ok && record && p.files.CheckNoLinks(file) == nil:
				// A link's stat is never recorded: the look at the whole
				// tree names it as a problem (walkNotes) each time.
				if st := worktree.StatOf(fi); worktree.Trustworthy(st) {
					st.Blob = committed
					same[file] = st
				}
			}
		}
		return nil
	})
	if err != nil {
		return paths, err // all of them stay pending
	}
	if err := p.recordStats(same); err != nil {
		p.logf("record the stats of %d files that hold what is committed: %v", len(same), err)
	}
	return out, nil
}

// statsPerTransaction bounds the stats one transaction of recordStats
// writes: a write's catch-up of the derived index waits for it.
const statsPerTransaction = 1000

// recordStats records stats of files that hold what is committed, in
// transactions of statsPerTransaction (after a build, every file's).
func (p *People) recordStats(stats map[string]index.DiskStat) error {
	paths := slices.Sorted(maps.Keys(stats))
	for len(paths) > 0 {
		batch := paths[:min(len(paths), statsPerTransaction)]
		paths = paths[len(batch):]
		if err := p.idx.Update(func(tx *index.Tx) error {
			for _, rel := range batch {
				if err := tx.SetDisk(rel, stats[rel]); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// adoptEdits commits people's pending edits and any edit to the notes keys,
// before tool writes to them are built: their compare-and-swap then fails
// against the person's version instead of overwriting it. It is one
// attempt: when a person's commit moves the branch meanwhile it returns
// fail.ErrBranchMoved, and the write's one loop (commitBatch, whileBranchMoves)
// runs the upkeep again. It returns the branch's commit after. The caller
// holds the write lock.
//
// While a git command holds git's index only for a moment (a person's `git
// add`, their `git commit`), or a person's command that moves the branch
// has just begun (gitver.WorkTree's Starting), the comparison waits for
// it, as the write's branch move would (gitver.Repo.LockIndex): a pull's
// merge fails when it finds git's index held between its steps; and built
// without the wait, a write could check its expect_version against a
// person's commit that undid an agent's write in the same instant (its
// tree taken from git's index as it was before the write), whose file
// still holds the undone text, and be acknowledged on top of it: a
// counter's increment given twice.
//
// While the derived index is being built, no edit is committed: a person's
// version and the stale-file rule are counted by the index (whileBuilt).
func (p *People) adoptEdits(keys []string) (gitver.Hash, error) {
	deadline := time.Now().Add(indexBusyWait)
	once := func(attempt func() error) error { return attempt() }
	for {
		// Looked at each time: the git command waited for (a pull) may
		// leave the index far behind the branch.
		head, building, err := p.whileBuilt(keys)
		if building || err != nil {
			return head, err
		}
		head, _, err = p.commitEditsWith(keys, head, once)
		var b *catchup.Building
		if errors.As(err, &b) {
			continue // the branch went far since whileBuilt looked
		}
		if !errors.Is(err, fail.ErrWorkTreeBusy) {
			return head, err
		}
		wt := p.repo.WorkTree()
		if wt.Operation != "" || wt.Elsewhere != "" {
			// Edits wait for git. The write goes on: commitLocked decides
			// whether its files may go to the work tree, and placeFile
			// keeps any file a person changed meanwhile.
			return head, nil
		}
		lock := p.repo.IndexLockPath()
		fi, lerr := os.Stat(lock)
		if long := lerr == nil && time.Since(fi.ModTime()) > indexBusyWait; long || time.Now().After(deadline) {
			// A long git command (a pull, a checkout of a large tree): the
			// write is answered now, not after it, and so are the others
			// built in this hold of the write lock.
			why := fmt.Sprintf("a git command holds git's index (%s)", p.rel(lock))
			if !long && wt.Starting != "" {
				why = wt.Starting
			}
			return head, fail.Errorf("write", "", fail.ErrConflict, "the workspace is busy: %s; write again once it is done", why)
		}
		time.Sleep(indexBusyPoll)
	}
}

// whileBuilt brings the derived index to the branch, and returns the
// branch's commit. While the index is being built (building is true then)
// it is adoptEdits' answer: the writes go on when their notes' files on
// disk are the branch's, and wait for the build, unavailable, when a
// person changed one; their change stays, to be committed as theirs once
// the build is done.
func (p *People) whileBuilt(keys []string) (head gitver.Hash, building bool, err error) {
	head, _, err = p.catch.CatchUp(nil, nil)
	var b *catchup.Building
	if !errors.As(err, &b) {
		return head, false, err
	}
	if head, err = p.repo.Head(); err != nil {
		return head, true, err
	}
	if wt := p.repo.WorkTree(); wt.Operation != "" || wt.Elsewhere != "" {
		return head, true, nil // edits wait for git, as they do after the build
	}
	for _, key := range keys {
		for _, rel := range note.Files(key) {
			committed, err := p.repo.PathBlob(head, rel)
			if err != nil {
				return head, true, err
			}
			if !p.files.Holds(rel, committed) {
				return head, true, fail.Errorf("write", "", fail.ErrUnavailable,
					"%s holds a change not committed yet, to be committed as its author's once the index is built (%s); retry",
					rel, b.Status).Because(b)
			}
		}
	}
	return head, true, nil
}

const (
	// indexBusyWait bounds how long adoptEdits waits for a git command to
	// let git's index go, counted from when the command took it: a
	// person's add or commit takes a moment, and a write answers within
	// a second.
	indexBusyWait = 900 * time.Millisecond
	// indexBusyPoll is how often it looks.
	indexBusyPoll = 2 * time.Millisecond
)

// CommitEditsLocked commits the pending edits and those to the notes keys.
// The caller holds the write lock. On failure the edits stay pending.
func (p *People) CommitEditsLocked(keys []string) (gitver.Hash, *EditReport, error) {
	// A person's git commit landing meanwhile moves the branch: compare
	// again.
	return p.commitEditsWith(keys, gitver.ZeroHash, func(attempt func() error) error {
		return p.follower.WhileBranchMoves("commit people's edits", "", p.Repair, attempt)
	})
}

// commitEditsWith is commitEditsLocked, its attempts run by run (once, or
// again while the branch moves); caughtUp is the branch's commit when the
// caller has just brought the derived index to it, zero for the first
// attempt to do so.
func (p *People) commitEditsWith(keys []string, caughtUp gitver.Hash, run func(attempt func() error) error) (gitver.Hash, *EditReport, error) {
	paths, all := p.edits.Take()
	if all && len(keys) > 0 && p.edits.isWatched() {
		// A write adopts the edits to its own notes and to the paths the
		// watcher named; the look at the whole tree stays the watcher's,
		// which makes it without the write lock (rescanUnlocked).
		p.edits.Add(nil, true)
		all = false
	}
	var head gitver.Hash
	var rep *EditReport
	err := run(func() error {
		var err error
		head, rep, err = p.commitEditsOnce(keys, paths, all, caughtUp)
		caughtUp = gitver.ZeroHash // an attempt again looks again
		return err
	})
	switch {
	case err != nil:
		p.edits.Add(paths, all)
	case rep.Commit != "" && p.onEdits != nil:
		p.onEdits(rep)
	}
	return head, rep, err
}

// candidate is one path to compare: its committed blob and recorded stat.
type candidate struct {
	committed gitver.Hash
	recorded  index.DiskStat
	hasStat   bool
	looked    bool // committed, recorded and hasStat were read from the index
	// walked is the file's stat as a walk of the work tree found it (when
	// wasWalked): its directories are real ones, not links.
	walked    gitver.FileStat
	wasWalked bool
	// strict: the path belongs to a note being written, whose problems are
	// the write's errors rather than skipped files.
	strict bool
}

// commitEditsOnce is one attempt of commitEditsWith: the work tree
// compared with the derived index at the branch (brought there, unless
// caughtUp says it is), people's changes committed.
func (p *People) commitEditsOnce(keys, paths []string, all bool, caughtUp gitver.Hash) (gitver.Hash, *EditReport, error) {
	if err := p.stillOpen(); err != nil {
		return gitver.ZeroHash, nil, err
	}
	head := caughtUp
	var err error
	if head.IsZero() {
		if head, _, err = p.catch.CatchUp(nil, nil); err != nil {
			return head, nil, err
		}
	}
	rep := &EditReport{}
	if why := p.repo.WorkTree().Busy(); why != "" {
		return head, rep, fmt.Errorf("%w: %s", fail.ErrWorkTreeBusy, why)
	}
	cands := map[string]*candidate{}
	addNote := func(key string, strict bool) {
		for _, rel := range note.Files(key) {
			if c, ok := cands[rel]; ok {
				c.strict = c.strict || strict
			} else {
				cands[rel] = &candidate{strict: strict}
			}
		}
	}
	for _, k := range keys {
		addNote(k, true)
	}
	for _, rel := range paths {
		if key, ok := note.KeyOf(rel); ok {
			addNote(key, false)
		}
	}
	if all {
		found, problems, _ := p.WalkNotes()
		for _, problem := range problems {
			rep.Skipped = append(rep.Skipped, problem.String())
		}
		for rel, fi := range found {
			if cands[rel] == nil {
				cands[rel] = &candidate{walked: fi, wasWalked: true}
			}
		}
	}
	err = p.idx.Read(func(s *index.Snapshot) error {
		for _, c := range cands {
			c.looked = false // a retried read starts over
		}
		if all {
			err := s.EachPresentFile(func(f index.PresentFile) error {
				c := cands[f.Path]
				if c == nil {
					c = &candidate{}
					cands[f.Path] = c
				}
				c.committed, c.recorded, c.hasStat, c.looked = f.Committed, f.Recorded, f.HasStat, true
				return nil
			})
			if err != nil {
				return err
			}
		}
		for rel, c := range cands {
			if c.looked {
				continue
			}
			var err error
			if c.committed, err = s.FileBlob(rel); err != nil {
				return err
			}
			if c.recorded, c.hasStat, err = s.Disk(rel); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return head, rep, err
	}

	var changes []commits.Change
	unchanged := map[string]index.DiskStat{}
	leftovers := p.hist.Leftovers()
	olderFromCheckouts := map[string]gitver.Hash{}
	stale := &staleLook{p: p, head: head}
	olderLeft := map[string]gitver.Hash{} // earlier versions put right, kept or not
	var kept []string                     // the sibling notes that keep some
	for _, rel := range slices.Sorted(maps.Keys(cands)) {
		c := cands[rel]
		ch, same, err := p.compare(rel, c)
		if err != nil {
			if c.strict {
				return head, rep, err
			}
			rep.Skipped = append(rep.Skipped, fail.Msg(err))
			continue
		}
		older := false
		var blob gitver.Hash
		if ch != nil && !ch.Deleted && ch.Info != nil {
			blob = gitver.BlobHash(ch.Content)
			if older, err = leftovers.Holds(rel, blob, ch.Info.ModTime()); err != nil {
				return head, rep, err
			}
			if older {
				olderFromCheckouts[rel] = blob
			}
		}
		switch {
		case older:
		case ch != nil && (halfSaved(ch, c) || p.BeingWritten(ch)):
			rep.Unsettled = append(rep.Unsettled, rel)
		case ch != nil && p.checkedOutJustNow(ch):
			// git's index records this very file, so git wrote it, or a
			// write did: placeStaged records a placed file's stat there. A
			// write's file that a person's `git commit` undid in the same
			// instant (its tree taken from git's index as it was before the
			// write) looks so too, and must be committed again now: the
			// next write would otherwise build on the undone version, and
			// acknowledge a counter's increment twice.
			verdict, err := stale.verdict(rel, blob, ch.Info)
			if err != nil {
				return head, rep, err
			}
			if verdict == undoneByCommit {
				changes = append(changes, *ch)
				break
			}
			rep.Unsettled = append(rep.Unsettled, rel)
		case ch != nil && !blob.IsZero():
			verdict, err := stale.verdict(rel, blob, ch.Info)
			if err != nil {
				return head, rep, err
			}
			if verdict == undoneByCommit {
				changes = append(changes, *ch)
				break
			}
			key, _ := note.KeyOf(rel)
			var conflicting []byte // the person's text, kept beside the note
			if verdict == notStale {
				m, err := p.mergeSave(rel, c.committed, ch)
				switch {
				case err != nil:
					return head, rep, err
				case m.unsettled:
					rep.Unsettled = append(rep.Unsettled, rel)
				case m.change != nil:
					changes = append(changes, *m.change)
				}
				if conflicting = m.conflict; conflicting == nil {
					break
				}
			} else {
				olderLeft[rel] = blob
				if verdict != unclear || !note.IsNoteFile(rel) {
					break
				}
				conflicting = ch.Content
			}
			sibling, err := stale.keep(key, conflicting)
			if err != nil {
				return head, rep, err
			}
			changes = append(changes, sibling)
			kept = append(kept, sibling.Path)
			// Compared again later, should this commit not be made.
			p.edits.Add([]string{sibling.Path}, false)
		case ch != nil:
			changes = append(changes, *ch)
		case same != nil:
			unchanged[rel] = *same
		}
	}
	changes = p.holdFreshDeletes(changes, cands, rep)
	p.edits.Add(rep.Unsettled, false)
	if len(olderFromCheckouts)+len(olderLeft) > 0 {
		maps.Copy(olderLeft, olderFromCheckouts)
		if err := p.mover.RecordUnplaced(olderLeft); err != nil {
			return head, rep, err
		}
		if err := p.placeUnplaced(); err != nil {
			return head, rep, err
		}
	}
	if len(olderFromCheckouts) > 0 {
		p.logf("a `git checkout` of the board's branch that read it before a write wrote older versions of %d file(s) "+
			"over the write's; the branch's versions are back in place", len(olderFromCheckouts))
	}
	if n := len(olderLeft) - len(olderFromCheckouts); n > 0 {
		p.logf("%d file(s) held an earlier version of their note, left behind by a git command that read the branch "+
			"before a write (a reset, a stash, a pull whose ref update failed) or by a write that never placed its files; "+
			"the branch's versions are back in place%s", n, keptAs(kept))
	}
	if len(changes) > 0 {
		// A checkout that began during the comparison writes the other
		// branch's files before it moves HEAD: look again before
		// committing what was found (commitLocked looks once more under
		// git's index lock).
		if why := p.repo.WorkTree().Busy(); why != "" {
			return head, rep, fmt.Errorf("%w: %s", fail.ErrWorkTreeBusy, why)
		}
		commit, err := p.commitPersonsEdits(head, changes, rep, true)
		if err != nil {
			return head, rep, err
		}
		head = commit
	}
	if len(unchanged) > 0 {
		// Remember the stats, so that the next comparison need not read
		// these files again.
		if _, _, err := p.catch.CatchUp(nil, func(tx *index.Tx) error {
			for rel, st := range unchanged {
				if err := tx.SetDisk(rel, st); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return head, rep, err
		}
	}
	return head, rep, nil
}

// compare returns the change a path needs, or, when the file equals the
// committed blob and its stat is worth remembering, that stat.
func (p *People) compare(file string, c *candidate) (*commits.Change, *index.DiskStat, error) {
	st := index.StatOf(c.walked)
	if !c.wasWalked {
		if err := p.files.CheckNoLinks(file); err != nil {
			return nil, nil, err
		}
		fi, err := p.root.Lstat(file)
		if errors.Is(err, fs.ErrNotExist) {
			if !c.committed.IsZero() {
				return &commits.Change{Path: file, Deleted: true}, nil, nil
			}
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		st = worktree.StatOf(fi)
	}
	if c.hasStat && !c.committed.IsZero() && c.recorded.Blob == c.committed && index.SameStat(c.recorded, st) {
		return nil, nil, nil // unchanged since it last matched git
	}
	content, info, ok, err := p.readSettled(file, c.committed)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if !ok {
		if !c.committed.IsZero() {
			return &commits.Change{Path: file, Deleted: true}, nil, nil
		}
		return nil, nil, nil
	}
	if gitver.BlobHash(content) == c.committed {
		if st := worktree.StatOf(info); worktree.Trustworthy(st) {
			st.Blob = c.committed
			return nil, &st, nil
		}
		return nil, nil, nil
	}
	return &commits.Change{Path: file, Content: content, Info: info}, nil, nil
}

// settleTime is how long a changed file must have been left alone before
// it is committed: an editor that writes in place truncates the file, then
// writes it, and a comparison between the two would commit half a save.
// The watcher's debounce already waits longer; this guards the comparisons
// a write makes.
const settleTime = 50 * time.Millisecond

// readSettled reads p; when it differs from the blob committed and was
// modified within settleTime, it waits (a few times at most, holding the
// write lock) until the file has been quiet that long, and reads it again.
func (p *People) readSettled(file string, committed gitver.Hash) ([]byte, fs.FileInfo, bool, error) {
	for range 8 {
		content, info, ok, err := p.files.ReadFile(file)
		if err != nil || !ok || gitver.BlobHash(content) == committed {
			return content, info, ok, err
		}
		young := settleTime - time.Since(info.ModTime())
		if young <= 0 || young > settleTime { // quiet, or a clock in the future
			return content, info, ok, nil
		}
		time.Sleep(young)
	}
	return p.files.ReadFile(file)
}

// EmptyGrace is how long a note file emptied in place is taken for a save
// in progress rather than a person's wish.
const EmptyGrace = 2 * time.Second

// GitSettle is how long a file git itself wrote is left before it is taken
// for a person's edit.
const GitSettle = 500 * time.Millisecond

// checkedOutJustNow reports whether git itself wrote the changed file a
// moment ago: a `git reset --hard` or `git stash` that read the branch
// before an agent's write writes the older file, and moves the branch only
// after; when its move comes, the reflog tells and the repairs put the
// agent's write back. Until then the file is not taken for an edit. A file
// git wrote and left (`git checkout HEAD~1 -- note.md`) is the person's
// edit once GitSettle has passed.
func (p *People) checkedOutJustNow(ch *commits.Change) bool {
	return !ch.Deleted && ch.Info != nil && time.Since(ch.Info.ModTime()) < GitSettle &&
		p.repo.WroteByGit(ch.Path, ch.Info, gitver.BlobHash(ch.Content))
}

// halfSaved reports whether a change looks like a save caught between its
// truncation and its write: a file that had content, empty since a moment.
// An editor that writes in place can be descheduled between the two for
// longer than any debounce. Such a file is compared again later; emptied
// for good, it is committed once EmptyGrace has passed.
func halfSaved(ch *commits.Change, c *candidate) bool {
	return !ch.Deleted && len(ch.Content) == 0 && !c.committed.IsZero() &&
		time.Since(ch.Info.ModTime()) < EmptyGrace
}

// commitPersonsEdits commits changes as one commit authored by the person
// and fills rep. onDisk says the files hold the changes already; otherwise
// the branch's move puts them in place (commitLocked). merged are the
// person's git commits whose saves the changes merge (saves.go).
func (p *People) commitPersonsEdits(head gitver.Hash, changes []commits.Change, rep *EditReport, onDisk bool, merged ...gitver.Hash) (gitver.Hash, error) {
	byNote := map[string][]commits.Change{}
	for _, c := range changes {
		key, _ := note.KeyOf(c.Path)
		byNote[key] = append(byNote[key], c)
	}
	var edits []Edit
	created := map[gitver.Hash]string{} // note blob -> key, to pair moves
	for _, key := range slices.Sorted(maps.Keys(byNote)) {
		cur, err := p.idx.Note(key)
		if err != nil {
			return head, err
		}
		e := Edit{Key: key, Version: cur.Version + 1, Digest: cur.Digest, Problem: cur.Problem}
		e.Op = "edit"
		for _, c := range byNote[key] {
			e.Merged = e.Merged || !c.Base.IsZero()
			if c.Path != key+".md" {
				continue
			}
			switch {
			case c.Deleted:
				e.Op, e.Digest, e.Problem = "delete", "", ""
			case !cur.Present:
				e.Op = "create"
				created[gitver.BlobHash(c.Content)] = key
			}
			if !c.Deleted {
				e.Digest, e.Problem = describeNote(c.Content)
			}
		}
		if e.Op == "edit" && !cur.Present {
			continue // only blob files of no note changed: nothing to tell
		}
		edits = append(edits, e)
	}
	// A note deleted here and created there with the same content was moved.
	for i, e := range edits {
		if e.Op != "delete" {
			continue
		}
		old, err := p.idx.Note(e.Key)
		if err != nil {
			return head, err
		}
		if to, ok := created[old.NoteBlob]; ok {
			for j := range edits {
				if edits[j].Key == to {
					edits[j].Op, edits[j].From = "move", e.Key
				}
			}
			edits[i].Op = "" // told by the move
			delete(created, old.NoteBlob)
		}
	}
	edits = slices.DeleteFunc(edits, func(e Edit) bool { return e.Op == "" })
	p.warnMissingBlobs(byNote, edits)
	who := p.PersonSignature()
	message := p.editMessage(edits, who.Name)
	for _, c := range changes {
		if !c.Saved.IsZero() {
			message.Saved = append(message.Saved, c.Path+" "+c.Saved.String())
		}
	}
	for _, c := range merged {
		message.Merged = append(message.Merged, c.String())
	}
	commit, err := p.CommitLocked(head, changes, who, message.String(), onDisk)
	if err != nil || commit == head {
		return head, err // failed, or git held every file as it is
	}
	rep.Commit, rep.Author, rep.Edits = commit.String(), who.Name, edits
	return commit, nil
}

// describeNote returns a note file's digest, or what is wrong with it.
func describeNote(content []byte) (digest, problem string) {
	f, err := note.Parse(content)
	if err != nil {
		return "", fail.Msg(err) + "; committed as it is"
	}
	digest = f.Str(note.KeyDigest)
	if digest == "" {
		return "", "the front matter has no digest"
	}
	return oneLine(digest), ""
}

// oneLine keeps a digest fit for a commit subject.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}

// warnMissingBlobs marks edits whose note names a blob file this commit
// deletes: agents cannot read that note's content until it is restored.
func (p *People) warnMissingBlobs(byNote map[string][]commits.Change, edits []Edit) {
	for i, e := range edits {
		if e.Op == "delete" {
			continue
		}
		var named string // the blob file the note names after the commit
		for _, c := range byNote[e.Key] {
			if c.Path == e.Key+".md" {
				if f, err := note.Parse(c.Content); err == nil {
					named = note.SiblingBlobPath(e.Key, f.Str(note.KeyBlob))
				}
			}
		}
		if named == "" {
			if n, err := p.idx.Note(e.Key); err == nil {
				named = n.ContentPath
			}
		}
		for _, c := range byNote[e.Key] {
			if c.Deleted && c.Path == named {
				edits[i].Problem = fmt.Sprintf("its blob file %s was deleted, so its content cannot be read; restore it from history (git log -- %s)", c.Path, c.Path)
			}
		}
	}
}

// editMessage is the commit message of a person's edits: like a tool
// write's, with the digest in the subject, so `git log` reads the same.
func (p *People) editMessage(edits []Edit, who string) note.Message {
	line := func(e Edit) string {
		switch e.Op {
		case "delete":
			return fmt.Sprintf("delete %s by hand", e.Key)
		case "move":
			return note.Subject(fmt.Sprintf("move %s to %s v%d by hand", e.From, e.Key, e.Version), e.Digest)
		}
		if e.Merged {
			return note.Subject(fmt.Sprintf("%s %s v%d by hand, merged", e.Op, e.Key, e.Version), e.Digest)
		}
		return note.Subject(fmt.Sprintf("%s %s v%d by hand", e.Op, e.Key, e.Version), e.Digest)
	}
	switch len(edits) {
	case 0:
		return note.Message{Subject: "edit blob files by hand", Agent: who}
	case 1:
		e := edits[0]
		m := note.Message{Subject: line(e), URI: note.URI(p.name, e.Key), Version: e.Version, Agent: who}
		if e.Merged {
			m.Lines = []string{mergedLine}
		}
		return m
	}
	m := note.Message{Subject: fmt.Sprintf("edit %d notes by hand", len(edits)), Agent: who}
	for _, e := range edits {
		m.Lines = append(m.Lines, line(e))
	}
	return m
}

// mergedLine explains, in the message of a person's commit, a save that
// was merged (saves.go).
const mergedLine = "Saved from an earlier version of the note: what was written since is kept, and the person's changes are on top."
