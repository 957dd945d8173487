// Package mover is the commit point of every write: it moves the board's
// branch from one commit to another, with the files, git's index and the
// derived index, through a journal that makes a crash at any step
// recoverable, and it finishes what a killed writer's journal left. Files
// a move replaced are kept for a person who may still write into them
// (displaced.go); files of writes made while another branch is checked out
// wait to be placed (unplaced.go).
//
// It knows commits and files, not notes or people: what a move means for
// them it tells through the functions it is handed (Options).
package mover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/journal"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Git is what the mover needs of the board's repository.
type Git interface {
	Head() (gitver.Hash, error)
	WorkTree() gitver.WorkTree
	LockIndex() (*gitver.IndexLock, error)
	UpdateBranch(from, to gitver.Hash, who gitver.Signature, reason string) error
	ReadBlob(h gitver.Hash) ([]byte, error)
	ReadCommit(h gitver.Hash) (*gitver.CommitInfo, error)
	DiffTrees(a, b gitver.Hash) ([]gitver.PathChange, error)
	CheckedOut() (gitver.Hash, error)
	IndexBlobs(paths []string) (map[string]gitver.Hash, error)
	RemoveStaleLock(newHash gitver.Hash) (bool, error)
	RemoveStaleIndexLock(before time.Time) (bool, error)
	MaybeMaintain()
	GitDir() string
	Sync(f *os.File) error
}

// Options is what a Mover is handed: the board's parts it moves, and what
// it tells the engine through.
type Options struct {
	Git     Git
	Dir     string          // the workspace's directory
	Root    *os.Root        // the workspace, every file opened through it
	Files   *worktree.Files // the notes' files
	Journal *journal.File
	Catch   *catchup.Catcher // brings the derived index to the branch
	History *history.History
	// Displaced is the watch on the files moves kept for a person.
	Displaced *Displaced
	// Holds counts the holds of the write lock taken so far: Recover
	// reads the journal once a hold.
	Holds func() uint64
	// StillOpen fails when the workspace's directory is no longer the
	// one opened: nothing is moved or compared then.
	StillOpen func() error
	// Signature is the program's, for the reflog.
	Signature func() gitver.Signature
	// Edited hears of paths a person changed while a move placed them:
	// their change stays, to be committed as their edit.
	Edited func(paths []string)
	// Reach marks a step of a write for the crash tests.
	Reach func(step string)
}

// Mover moves the branch; every step runs in a hold of the write lock.
type Mover struct {
	git       Git
	dir       string
	root      *os.Root
	files     *worktree.Files
	journal   *journal.File // the intent of the write in progress, for whoever comes next
	catch     *catchup.Catcher
	hist      *history.History
	displaced *Displaced
	holds     func() uint64
	stillOpen func() error
	signature func() gitver.Signature
	edited    func(paths []string)
	reach     func(step string)
	// recoveredIn is the hold of the write lock in which Recover last
	// left no journal to finish.
	recoveredIn uint64
	writes      int // commits made by this process, guarded by the write lock: paces maintenance
}

// New is the mover of opts' board.
func New(opts Options) *Mover {
	return &Mover{git: opts.Git, dir: opts.Dir, root: opts.Root, files: opts.Files, journal: opts.Journal,
		catch: opts.Catch, hist: opts.History, displaced: opts.Displaced, holds: opts.Holds, stillOpen: opts.StillOpen,
		signature: opts.Signature, edited: opts.Edited, reach: opts.Reach}
}

// SettleBeforeEdits is how long a commit of people's edits that met a git
// command in the work tree waits before it compares again.
const SettleBeforeEdits = 100 * time.Millisecond

// MoveWithFiles is the one branch-move step: every tool write (one
// that came alone, or a group of them), a fast-forward to the remote, a
// rebuild on it, goes onto the branch through it. It moves the local
// branch from one commit to another and puts the files that differ in
// place, in the order that makes a crash at any point recoverable:
//
//  1. the journal names both commits and every file; then it, the new
//     files (under temporary names beside their targets) and alongside
//     (what else must be durable before the branch names it: the commits'
//     objects; nil for nothing) are synced in one round;
//  2. git's index lock is taken, so no `git commit` or checkout can take
//     git's index while the branch moves; holding it, the work tree is
//     looked at again (a checkout that began or ended meanwhile makes the
//     step start over: moved is false);
//  3. the branch moves from one commit to the other: the commit point;
//  4. the staged files are renamed into place, unless a person changed
//     one since (it stays theirs, to be committed as their edit), their
//     directories synced, and git's index written for those paths;
//  5. the journal is cleared: the files and git's index were what it
//     finishes, and no reader sees the move before it is;
//  6. the derived index follows the branch, with the stat of each placed
//     file (so the next look for people's edits need not hash it), unless
//     it is being built: the build takes the commits in its turn.
//
// While a person has another branch checked out, only the branch moves:
// the files and git's index are that checkout's, and the files are put in
// place when the branch is checked out again (unplaced.go). moved is false
// when the branch was no longer at from, or the work tree changed hands;
// nothing then changed. An error with moved set is a failure past the
// commit point, which the journal finishes on the next hold of the write
// lock. The caller holds the write lock.
func (m *Mover) MoveWithFiles(from, to gitver.Hash, reason string, alongside func() error) (moved bool, err error) {
	return m.Move(Move{From: from, To: to, Reason: reason, Alongside: alongside})
}

// Move is one move of the branch, for Mover.Move.
type Move struct {
	From, To gitver.Hash
	Reason   string // the reflog's message
	// alongside is what else must be durable before the branch names to
	// (the commits' objects); nil for nothing.
	Alongside func() error
	// changes are the files to differs in from, and commits each commit's
	// own changes from its parent, when the caller built the commits from
	// from to to (tool writes): neither the move nor the derived index
	// then diffs the trees. Nil: they are diffed. A lone commit needs
	// changes alone.
	Changes []gitver.PathChange
	Commits map[gitver.Hash][]gitver.PathChange
	// onDisk is set when the work tree holds to's files already: a
	// person's edits, committed as they saved them. Nothing is staged or
	// written over them; a file they changed again since stays theirs.
	OnDisk bool
	// infos are the stats of onDisk's files, taken before their content
	// was read: recorded in git's index, a later save never looks
	// committed.
	Infos map[string]fs.FileInfo
	// fresh is set when to is commits made on from for this move (tool
	// writes, people's edits): they bring back nothing a reset dropped,
	// even one that is the dropped commit made again byte for byte (the
	// same write, built on the reset's branch within the same second).
	Fresh bool
}

// Move is MoveWithFiles, given the move.
func (m *Mover) Move(bm Move) (moved bool, err error) {
	// The journal is this move's from here: a killed writer's goes first,
	// unless the upkeep of this hold of the lock finished it already (a
	// batch's, people's), as it has for every write.
	if !m.recovered() {
		if err := m.Recover(); err != nil {
			return false, err
		}
	}
	from, to, reason, alongside := bm.From, bm.To, bm.Reason, bm.Alongside
	changes, hint := bm.Changes, bm.Commits
	switch {
	case changes == nil:
		if changes, err = m.hist.ChangedSince(from, to); err != nil {
			return false, err
		}
	case hint == nil:
		hint = map[gitver.Hash][]gitver.PathChange{to: changes}
	}
	who := m.signature()
	wt := m.git.WorkTree()
	j := &journal.Journal{Old: from, New: to, Time: who.When, OnDisk: bm.OnDisk, BranchOnly: wt.Elsewhere != ""}
	for _, ch := range changes {
		j.Files = append(j.Files, journal.Change{Path: ch.Path, Old: ch.Old, New: ch.New})
	}
	if err := m.journal.Write(j); err != nil {
		return false, err
	}
	m.reach("journal")
	staged := make([]worktree.Staged, len(j.Files))
	defer func() {
		for _, f := range staged {
			if f.Tmp != "" {
				m.root.Remove(f.Tmp)
			}
		}
	}()
	var durable errgroup.Group
	durable.SetLimit(StagingWorkers)
	durable.Go(m.journal.Sync)
	if alongside != nil {
		durable.Go(alongside)
	}
	if !j.BranchOnly && !bm.OnDisk {
		for i, f := range j.Files {
			if f.New.IsZero() {
				continue
			}
			durable.Go(func() error {
				if m.files.Holds(f.Path, f.New) {
					return nil // in place already
				}
				content, err := m.git.ReadBlob(f.New)
				if err != nil {
					return err
				}
				staged[i].Tmp, staged[i].Info, err = m.files.Stage(f.Path, content)
				return err
			})
		}
	}
	if err := durable.Wait(); err != nil {
		return false, errors.Join(err, m.journal.Clear())
	}
	m.reach("objects")
	// git's index lock is held from before the branch moves until the
	// files are in place: a git command that read the branch before the
	// move (a person's `git reset --hard`) cannot write its older files
	// over these meanwhile; it either finished before, or fails to take
	// the lock, or starts after and then moves the branch too, which the
	// reflog tells.
	var gitIndex *gitver.IndexLock
	if !j.BranchOnly {
		if gitIndex, err = m.git.LockIndex(); err != nil {
			return false, errors.Join(err, m.journal.Clear())
		}
		defer gitIndex.Release()
		// Holding git's index, look again: a checkout that began since
		// has finished writing its files by now, and one of the branch
		// that ended since may have left files older than the branch's,
		// to be put right before anything is placed (see unplaced.go);
		// a person's pull or merge that began since goes first.
		if now := m.git.WorkTree(); now.Operation != wt.Operation || now.Elsewhere != wt.Elsewhere || now.Starting != "" || m.HasUnplaced() {
			gitIndex.Release()
			return false, m.journal.Clear()
		}
		if bm.OnDisk && gitIndex.Waited {
			// A person's edits were read from the work tree while a git
			// command was writing it: a `git reset --hard` that read the
			// branch before an agent's write writes older files, and
			// moves the branch only after it lets the index go. Let it
			// finish, and compare again: its move shows in the reflog
			// then, and the repairs put the agent's write back instead of
			// taking the older files for an edit.
			gitIndex.Release()
			time.Sleep(SettleBeforeEdits)
			return false, m.journal.Clear()
		}
	} else {
		// As for a write made while another branch is checked out: git
		// may write the older files when the branch is checked out again.
		older := make(map[string]gitver.Hash, len(changes))
		for _, ch := range changes {
			older[ch.Path] = ch.Old
		}
		if err := m.RecordUnplaced(older); err != nil {
			return false, errors.Join(err, m.journal.Clear())
		}
	}
	if dropped, err := m.hist.BuildsOnADrop(from, to, bm.Fresh); err != nil || dropped {
		// A person's reset took the program's last commit away, and the
		// repairs have not brought it back yet: built on that, this
		// move would count a version again. The caller repairs and looks
		// again.
		return false, errors.Join(err, m.journal.Clear())
	}
	if err := m.git.UpdateBranch(from, to, who, reason); errors.Is(err, gitver.ErrMovedUnsynced) {
		return true, err // the journal stays: the next hold of the write lock finishes the files
	} else if err != nil {
		if cerr := m.journal.Clear(); cerr != nil {
			return false, cerr
		}
		if errors.Is(err, gitver.ErrBranchMoved) {
			return false, nil // moved meanwhile: the next look decides
		}
		return false, err
	}
	m.reach("branch")
	var stats map[string]index.DiskStat
	if !j.BranchOnly {
		if stats, err = m.placeStaged(j, staged, bm.Infos, gitIndex); err != nil {
			return true, err
		}
	}
	// The files and git's index are in place: what the journal finishes
	// is done. It is cleared before the derived index shows the move, so
	// that no reader sees a version whose write is still in the journal;
	// the derived index follows git by itself (a killed writer's is caught
	// up by the next catch-up).
	if err := m.journal.Clear(); err != nil {
		return true, err
	}
	// The derived index follows the branch in this hold of the lock. Left
	// to whoever reads next, it would be caught up by every watching
	// process at once, each waiting for the others' transactions, the
	// next write's build among them. While it is being built, the build
	// takes these commits in its turn: the write was checked against git
	// (noteAtHead), and does not wait for the build.
	if _, building := m.catch.Building(); building {
		m.reach("index")
		return true, nil
	}
	if _, _, err := m.catch.FollowMove(hint, func(tx *index.Tx) error {
		for p, st := range stats {
			if err := tx.SetDisk(p, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return true, err
	}
	m.reach("index")
	return true, nil
}

// StagingWorkers bounds the files a branch move stages at once.
const StagingWorkers = 16

// placeStaged puts a branch move's files in place once the branch holds
// j.New: each file staged for it renamed into place (or removed, for a
// deleted one) unless a person changed it since, which stays theirs; the
// directories synced in one round; git's index entries written. It
// returns the stat of each file placed, with its blob. The caller holds
// git's index lock.
func (m *Mover) placeStaged(j *journal.Journal, staged []worktree.Staged, infos map[string]fs.FileInfo, gitIndex *gitver.IndexLock) (map[string]index.DiskStat, error) {
	entries := make([]gitver.IndexEntry, 0, len(j.Files))
	stats := make(map[string]index.DiskStat, len(j.Files))
	dirs := map[string]bool{}
	for i, f := range j.Files {
		var placed bool
		var err error
		info := staged[i].Info
		switch {
		case f.New.IsZero():
			placed, err = m.files.RemoveIf(f.Path, f.Old)
		case staged[i].Tmp == "":
			// In place already when staging began (a person's edit: when
			// it was read).
			if placed = m.files.Holds(f.Path, f.New); placed {
				if info = infos[f.Path]; info == nil {
					info, err = m.root.Lstat(f.Path)
				}
			}
		default:
			placed, err = m.Place(staged[i], f.Path, f.Old, f.New)
			staged[i].Tmp = ""
		}
		if err != nil {
			return nil, fmt.Errorf("finish %s: %w", f.Path, err)
		}
		m.reach("placed")
		dirs[path.Dir(f.Path)] = true
		e := gitver.IndexEntry{Path: f.Path}
		switch {
		case !placed:
			// A person's change since the move began: it stays, to be
			// committed as their edit; git's index gets the commit's blob
			// with a stat that matches no file, so git compares the
			// content and sees the difference.
			m.edited([]string{f.Path})
			if !f.New.IsZero() {
				e.Blob, e.Info = f.New, worktree.StaleInfo{}
			}
		case !f.New.IsZero():
			// The staged file's own stat: a rename keeps its inode, size
			// and time, and a save that replaced it since does not match.
			e.Blob, e.Info = f.New, info
			if st := worktree.StatOf(info); worktree.Trustworthy(st) {
				st.Blob = f.New
				stats[f.Path] = st
			}
		}
		entries = append(entries, e)
	}
	m.reach("files")
	if m.git.WorkTree().Elsewhere != "" {
		// `git checkout -b` moves HEAD after it lets git's index lock go:
		// it did so during this move, and the work tree is now that
		// checkout's, of a commit behind this one. The board's files go
		// back out of it, to be put in place when the branch is checked
		// out again.
		back, _, err := m.TakeBack(j.New)
		if err != nil {
			return nil, err
		}
		entries, stats = replaceEntries(entries, back), nil
	}
	var synced errgroup.Group
	synced.SetLimit(StagingWorkers)
	for d := range dirs {
		synced.Go(func() error { return m.files.SyncDir(d) })
	}
	if err := synced.Wait(); err != nil {
		return nil, err
	}
	if err := gitIndex.Write(entries); err != nil {
		return nil, err
	}
	m.reach("gitindex")
	return stats, nil
}

// replaceEntries is entries with those of the same paths as in taken
// replaced by them.
func replaceEntries(entries, taken []gitver.IndexEntry) []gitver.IndexEntry {
	byPath := make(map[string]gitver.IndexEntry, len(taken))
	for _, e := range taken {
		byPath[e.Path] = e
	}
	out := make([]gitver.IndexEntry, 0, len(entries)+len(taken))
	for _, e := range entries {
		if t, ok := byPath[e.Path]; ok {
			e = t
			delete(byPath, e.Path)
		}
		out = append(out, e)
	}
	for _, e := range taken {
		if _, ok := byPath[e.Path]; ok {
			out = append(out, e)
		}
	}
	return out
}

// CommitChain makes m, the commits of n tool writes, through the one
// branch-move step (Move), with their objects made durable
// alongside: the commit point of every tool write. moved is false, and
// nothing changed, when the branch was no longer at m.from; an error with
// moved set is a failure past the commit point. The caller holds the write
// lock.
func (m *Mover) CommitChain(move Move, n int) (moved bool, err error) {
	moved, err = m.Move(move)
	if moved {
		m.Counted(n)
	}
	return moved, err
}

// Counted counts commits this process made, and now and then has git pack
// the loose objects they left (each commit leaves about five). The caller
// holds the write lock.
func (m *Mover) Counted(commits int) {
	before := m.writes
	m.writes += commits
	if before/64 != m.writes/64 || before == 0 {
		m.git.MaybeMaintain()
	}
}
