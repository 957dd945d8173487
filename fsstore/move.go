package fsstore

import (
	"errors"
	"fmt"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"io/fs"
	"path"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/journal"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// mover moves the branch, with the files and git's index, through the
// journal, and finishes what a killed writer's journal left: the commit
// point of every write (move.go, journal.go). edits hears of a person's
// change a move left in place; displaced keeps the files a move replaced.
type mover struct {
	*board
	lock    *writeLock    // whose hold every step runs in
	journal *journal.File // the intent of the write in progress, for whoever comes next
	// recoveredIn is the hold of the write lock in which recover last
	// left no journal to finish.
	recoveredIn uint64
	writes      int // commits made by this process, guarded by the write lock: paces maintenance
	edits       *pendingEdits
	displaced   *displacedFiles
}

// moveBranchWithFiles is the one branch-move step: every tool write (one
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
func (m *mover) moveBranchWithFiles(from, to gitver.Hash, reason string, alongside func() error) (moved bool, err error) {
	return m.moveBranch(branchMove{from: from, to: to, reason: reason, alongside: alongside})
}

// branchMove is one move of the branch, for moveBranch.
type branchMove struct {
	from, to gitver.Hash
	reason   string // the reflog's message
	// alongside is what else must be durable before the branch names to
	// (the commits' objects); nil for nothing.
	alongside func() error
	// changes are the files to differs in from, and commits each commit's
	// own changes from its parent, when the caller built the commits from
	// from to to (tool writes): neither the move nor the derived index
	// then diffs the trees. Nil: they are diffed. A lone commit needs
	// changes alone.
	changes []gitver.PathChange
	commits map[gitver.Hash][]gitver.PathChange
	// onDisk is set when the work tree holds to's files already: a
	// person's edits, committed as they saved them. Nothing is staged or
	// written over them; a file they changed again since stays theirs.
	onDisk bool
	// infos are the stats of onDisk's files, taken before their content
	// was read: recorded in git's index, a later save never looks
	// committed.
	infos map[string]fs.FileInfo
	// fresh is set when to is commits made on from for this move (tool
	// writes, people's edits): they bring back nothing a reset dropped,
	// even one that is the dropped commit made again byte for byte (the
	// same write, built on the reset's branch within the same second).
	fresh bool
}

// moveBranch is moveBranchWithFiles, given the move.
func (m *mover) moveBranch(bm branchMove) (moved bool, err error) {
	// The journal is this move's from here: a killed writer's goes first.
	if err := m.recover(); err != nil {
		return false, err
	}
	from, to, reason, alongside := bm.from, bm.to, bm.reason, bm.alongside
	changes, hint := bm.changes, bm.commits
	switch {
	case changes == nil:
		if changes, err = m.hist.ChangedSince(from, to); err != nil {
			return false, err
		}
	case hint == nil:
		hint = map[gitver.Hash][]gitver.PathChange{to: changes}
	}
	who := m.agentSignature(note.InitAgent)
	wt := m.repo.WorkTree()
	j := &journal.Journal{Old: from, New: to, Time: who.When, OnDisk: bm.onDisk, BranchOnly: wt.Elsewhere != ""}
	for _, ch := range changes {
		j.Files = append(j.Files, journal.Change{Path: ch.Path, Old: ch.Old, New: ch.New})
	}
	if err := m.journal.Write(j); err != nil {
		return false, err
	}
	reach("journal")
	staged := make([]worktree.Staged, len(j.Files))
	defer func() {
		for _, f := range staged {
			if f.Tmp != "" {
				m.root.Remove(f.Tmp)
			}
		}
	}()
	var durable errgroup.Group
	durable.SetLimit(stagingWorkers)
	durable.Go(m.journal.Sync)
	if alongside != nil {
		durable.Go(alongside)
	}
	if !j.BranchOnly && !bm.onDisk {
		for i, f := range j.Files {
			if f.New.IsZero() {
				continue
			}
			durable.Go(func() error {
				if m.files.Holds(f.Path, f.New) {
					return nil // in place already
				}
				content, err := m.repo.ReadBlob(f.New)
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
	reach("objects")
	// git's index lock is held from before the branch moves until the
	// files are in place: a git command that read the branch before the
	// move (a person's `git reset --hard`) cannot write its older files
	// over these meanwhile; it either finished before, or fails to take
	// the lock, or starts after and then moves the branch too, which the
	// reflog tells.
	var gitIndex *gitver.IndexLock
	if !j.BranchOnly {
		if gitIndex, err = m.repo.LockIndex(); err != nil {
			return false, errors.Join(err, m.journal.Clear())
		}
		defer gitIndex.Release()
		// Holding git's index, look again: a checkout that began since
		// has finished writing its files by now, and one of the branch
		// that ended since may have left files older than the branch's,
		// to be put right before anything is placed (see unplaced.go);
		// a person's pull or merge that began since goes first.
		if now := m.repo.WorkTree(); now.Operation != wt.Operation || now.Elsewhere != wt.Elsewhere || now.Starting != "" || m.hasUnplaced() {
			gitIndex.Release()
			return false, m.journal.Clear()
		}
		if bm.onDisk && gitIndex.Waited {
			// A person's edits were read from the work tree while a git
			// command was writing it: a `git reset --hard` that read the
			// branch before an agent's write writes older files, and
			// moves the branch only after it lets the index go. Let it
			// finish, and compare again: its move shows in the reflog
			// then, and the repairs put the agent's write back instead of
			// taking the older files for an edit.
			gitIndex.Release()
			time.Sleep(settleBeforeEdits)
			return false, m.journal.Clear()
		}
	} else {
		// As for a write made while another branch is checked out: git
		// may write the older files when the branch is checked out again.
		older := make(map[string]gitver.Hash, len(changes))
		for _, ch := range changes {
			older[ch.Path] = ch.Old
		}
		if err := m.recordUnplaced(older); err != nil {
			return false, errors.Join(err, m.journal.Clear())
		}
	}
	if dropped, err := m.hist.BuildsOnADrop(from, to, bm.fresh); err != nil || dropped {
		// A person's reset took the program's last commit away, and the
		// repairs have not brought it back yet: built on that, this
		// move would count a version again. The caller repairs and looks
		// again.
		return false, errors.Join(err, m.journal.Clear())
	}
	if err := m.repo.UpdateBranch(from, to, who, reason); errors.Is(err, gitver.ErrMovedUnsynced) {
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
	reach("branch")
	var stats map[string]index.DiskStat
	if !j.BranchOnly {
		if stats, err = m.placeStaged(j, staged, bm.infos, gitIndex); err != nil {
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
		reach("index")
		return true, nil
	}
	if _, _, err := m.catch.CatchUpAll(hint, func(tx *index.Tx) error {
		for p, st := range stats {
			if err := tx.SetDisk(p, st); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return true, err
	}
	reach("index")
	return true, nil
}

// stagingWorkers bounds the files a branch move stages at once.
const stagingWorkers = 16

// placeStaged puts a branch move's files in place once the branch holds
// j.New: each file staged for it renamed into place (or removed, for a
// deleted one) unless a person changed it since, which stays theirs; the
// directories synced in one round; git's index entries written. It
// returns the stat of each file placed, with its blob. The caller holds
// git's index lock.
func (m *mover) placeStaged(j *journal.Journal, staged []worktree.Staged, infos map[string]fs.FileInfo, gitIndex *gitver.IndexLock) (map[string]index.DiskStat, error) {
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
			placed, err = m.place(staged[i], f.Path, f.Old, f.New)
			staged[i].Tmp = ""
		}
		if err != nil {
			return nil, fmt.Errorf("finish %s: %w", f.Path, err)
		}
		reach("placed")
		dirs[path.Dir(f.Path)] = true
		e := gitver.IndexEntry{Path: f.Path}
		switch {
		case !placed:
			// A person's change since the move began: it stays, to be
			// committed as their edit; git's index gets the commit's blob
			// with a stat that matches no file, so git compares the
			// content and sees the difference.
			m.edits.add([]string{f.Path}, false)
			if !f.New.IsZero() {
				e.Blob, e.Info = f.New, staleInfo{}
			}
		case !f.New.IsZero():
			// The staged file's own stat: a rename keeps its inode, size
			// and time, and a save that replaced it since does not match.
			e.Blob, e.Info = f.New, info
			if st := statOf(info); trustworthy(st) {
				st.Blob = f.New
				stats[f.Path] = st
			}
		}
		entries = append(entries, e)
	}
	reach("files")
	if m.repo.WorkTree().Elsewhere != "" {
		// `git checkout -b` moves HEAD after it lets git's index lock go:
		// it did so during this move, and the work tree is now that
		// checkout's, of a commit behind this one. The board's files go
		// back out of it, to be put in place when the branch is checked
		// out again.
		back, _, err := m.takeBack(j.New)
		if err != nil {
			return nil, err
		}
		entries, stats = replaceEntries(entries, back), nil
	}
	var synced errgroup.Group
	synced.SetLimit(stagingWorkers)
	for d := range dirs {
		synced.Go(func() error { return m.files.SyncDir(d) })
	}
	if err := synced.Wait(); err != nil {
		return nil, err
	}
	if err := gitIndex.Write(entries); err != nil {
		return nil, err
	}
	reach("gitindex")
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

// ownMove starts the reflog message of every move of the branch the program
// makes.
const ownMove = history.OwnMove

// commitChain makes m, the commits of n tool writes, through the one
// branch-move step (moveBranch), with their objects made durable
// alongside: the commit point of every tool write. moved is false, and
// nothing changed, when the branch was no longer at m.from; an error with
// moved set is a failure past the commit point. The caller holds the write
// lock.
func (m *mover) commitChain(move branchMove, n int) (moved bool, err error) {
	moved, err = m.moveBranch(move)
	if moved {
		m.counted(n)
	}
	return moved, err
}

// counted counts commits this process made, and now and then has git pack
// the loose objects they left (each commit leaves about five). The caller
// holds the write lock.
func (m *mover) counted(commits int) {
	before := m.writes
	m.writes += commits
	if before/64 != m.writes/64 || before == 0 {
		m.repo.MaybeMaintain()
	}
}
