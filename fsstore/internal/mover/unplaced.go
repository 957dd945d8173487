package mover

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// While a person has another branch checked out, a write goes to the
// board's branch only: the work tree and git's index are the other
// checkout's. When the person checks the branch out again, git writes the
// files of the commit it resolved when it started, which can be older than
// a write that landed meanwhile; and `git checkout -b side` moves HEAD after
// it lets git's index lock go, so it can land in the middle of a write,
// whose files then go back out of the work tree (TakeBack).
//
// Either way the work tree can end up holding an older version of the
// branch's file, and comparing it with the branch would take it for a
// person's edit and commit it, reverting agents' writes. So the paths of
// such writes are recorded, with the blobs the work tree may still hold for
// them (the branch's versions from before the writes), and once the work
// tree is the branch's again, before anything compares it, a file still
// holding one of those is put right. A file a person changed meanwhile
// holds none of them and stays theirs.

// unplacedName is the record, in .git: state of this clone's work tree,
// never committed.
const unplacedName = "blackboard-unplaced.json"

type Unplaced struct {
	// Paths maps a path to the blobs the work tree may hold for it that
	// are older than the branch's (zero: no file).
	Paths map[string][]gitver.Hash `json:"paths"`
}

func (m *Mover) unplacedPath() string { return filepath.Join(m.git.GitDir(), unplacedName) }

// HasUnplaced reports whether writes' files wait to be placed.
func (m *Mover) HasUnplaced() bool {
	_, err := os.Lstat(m.unplacedPath())
	return err == nil
}

func (m *Mover) LoadUnplaced() (*Unplaced, error) {
	u := &Unplaced{Paths: map[string][]gitver.Hash{}}
	b, err := os.ReadFile(m.unplacedPath())
	if errors.Is(err, fs.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, u); err != nil {
		return u, nil // torn: the writer died before its commit point
	}
	if u.Paths == nil {
		u.Paths = map[string][]gitver.Hash{}
	}
	return u, nil
}

// SaveUnplaced writes the record durably (temporary file, sync, rename),
// or removes it when it is empty.
func (m *Mover) SaveUnplaced(u *Unplaced) error {
	p := m.unplacedPath()
	if len(u.Paths) == 0 {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(u)
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = m.git.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, p)
}

// RecordUnplaced adds, for each path, the blob the work tree may still hold
// for it. It is written before the write's commit point.
func (m *Mover) RecordUnplaced(older map[string]gitver.Hash) error {
	u, err := m.LoadUnplaced()
	if err != nil {
		return err
	}
	for p, h := range older {
		if !slices.Contains(u.Paths[p], h) {
			u.Paths[p] = append(u.Paths[p], h)
		}
	}
	return m.SaveUnplaced(u)
}

// maxLeakWalk and maxLeakPaths bound the look for a write's files left on
// another branch's checkout: it is for a branch made a moment ago.
const (
	maxLeakWalk  = 100
	maxLeakPaths = 1000
)

// TakeBack gives each file of the checkout HEAD names that holds the
// version of head (the board's branch, ahead of that checkout) the
// checkout's version back, records it to be placed when the branch is
// checked out again, and returns the git index entries to match and how
// many files it took back. A file the person changed holds neither version
// and stays theirs.
func (m *Mover) TakeBack(head gitver.Hash) ([]gitver.IndexEntry, int, error) {
	at, err := m.git.CheckedOut()
	if err != nil || at.IsZero() || at == head {
		return nil, 0, nil // an unborn or unreadable HEAD, or the branch's own commit
	}
	// The board's commits the checkout is behind.
	ahead, behind, err := m.hist.CommitsUntil(head, at, maxLeakWalk)
	if err != nil || !behind {
		return nil, 0, err
	}
	from, err := m.git.ReadCommit(at)
	if err != nil {
		return nil, 0, err
	}
	to, err := m.git.ReadCommit(head)
	if err != nil {
		return nil, 0, err
	}
	changes, err := m.git.DiffTrees(from.Tree, to.Tree)
	if err != nil || len(changes) == 0 || len(changes) > maxLeakPaths {
		return nil, 0, err
	}
	versions, err := m.hist.VersionsOf(ahead, changes)
	if err != nil {
		return nil, 0, err
	}
	paths := make([]string, len(changes))
	for i, ch := range changes {
		paths[i] = ch.Path
	}
	staged, err := m.git.IndexBlobs(paths)
	if err != nil {
		return nil, 0, err
	}
	// Older versions that a checkout of the branch wrote and that were not
	// yet put right when `git checkout -b` carried them over count too.
	waiting, err := m.LoadUnplaced()
	if err != nil {
		return nil, 0, err
	}
	leaked := func(p string, old, blob gitver.Hash) bool {
		return blob != old && (slices.Contains(versions[p], blob) || slices.Contains(waiting.Paths[p], blob))
	}
	leftovers := m.hist.Leftovers()
	var entries []gitver.IndexEntry
	older := map[string]gitver.Hash{}
	for _, ch := range changes {
		content, fi, exists, err := m.files.ReadFile(ch.Path)
		if err != nil {
			return nil, 0, err
		}
		var disk gitver.Hash
		if exists {
			disk = gitver.BlobHash(content)
		}
		// A file or an index entry holding one of the board's versions
		// came from a write or a checkout; anything else is this
		// checkout's or the person's, and stays. That includes an older
		// version a checkout of the board's branch wrote over a write's
		// before the person left it (checkouts.go).
		fileLeaked := leaked(ch.Path, ch.Old, disk)
		indexLeaked := leaked(ch.Path, ch.Old, staged[ch.Path])
		if !fileLeaked && exists && disk != ch.Old {
			if fileLeaked, err = leftovers.Holds(ch.Path, disk, fi.ModTime()); err != nil {
				return nil, 0, err
			}
			// git wrote the checkout's index entry with its file.
			indexLeaked = indexLeaked || (fileLeaked && staged[ch.Path] == disk)
		}
		if !fileLeaked && !indexLeaked {
			continue
		}
		if fileLeaked {
			if err := m.PutBlob(ch.Path, ch.Old); err != nil {
				return nil, 0, err
			}
			disk = ch.Old
		}
		e := gitver.IndexEntry{Path: ch.Path}
		if !ch.Old.IsZero() {
			e.Blob, e.Info = ch.Old, worktree.StaleInfo{} // the person's file: git compares its content
			if disk == ch.Old {
				if e.Info, err = m.root.Lstat(ch.Path); err != nil {
					return nil, 0, err
				}
			}
		}
		older[ch.Path] = ch.Old
		entries = append(entries, e)
	}
	if len(older) == 0 {
		return nil, 0, nil
	}
	return entries, len(older), m.RecordUnplaced(older)
}

// PutBlob makes the file at p hold blob (zero: no file).
func (m *Mover) PutBlob(p string, blob gitver.Hash) error {
	if blob.IsZero() {
		return m.files.Remove(p)
	}
	content, err := m.git.ReadBlob(blob)
	if err != nil {
		return err
	}
	return m.files.WriteAtomic(p, content)
}
