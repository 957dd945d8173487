package people

import (
	"bytes"
	"cmp"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/linemerge"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A write swaps its file in by rename: the note's path then names a new
// file, and the one it named before is unlinked. A person who still has
// that old file open (a shell's `exec 3>>note.md`, an append racing the
// write, an editor pausing between the two halves of an in-place save)
// writes into a file no path names any more: the text would reach neither
// the note nor git.
//
// So the displaced file is not deleted but kept, by one hard link in .git
// (git ignores what it does not know there), under a name that says what
// it held: .git/blackboard-displaced/<note's path>/<blob>.<size>.<mtime>.
// At most once a second, before a write or a comparison or from a watching
// server, a kept file whose size or time changed since is looked at, once
// it has been quiet for a moment: what the person wrote into it is
// committed as their save, merged with the branch's version of the note
// (what the file held is the version the save was made from, saves.go),
// and the branch's move puts it into the note's file. A kept file is let
// go once no process holds it open for writing (a second after it was
// kept), or once it has been unchanged for keepDisplaced.

const (
	// keepDisplaced is how long a displaced file that nobody writes into is
	// kept: a file handle held open longer than this and written later
	// writes into a file no one reads.
	keepDisplaced = 10 * time.Minute
	// DisplacedQuiet is how long a kept file must be left alone before what
	// was written into it is taken (a person may still be writing), and how
	// often the kept files are looked at.
	DisplacedQuiet = time.Second
)

// takeDisplaced looks at the kept files, at most once a second: what a
// person wrote into one is committed as their edit (adoptDisplaced); one
// unchanged for keepDisplaced is let go. The caller holds the write lock.
func (p *People) takeDisplaced() error {
	now := time.Now()
	if last := p.displaced.Look.Load(); last != 0 && now.Sub(time.Unix(0, last)) < DisplacedQuiet {
		return nil
	}
	p.displaced.Look.Store(now.UnixNano())
	root := filepath.Join(p.repo.GitDir(), mover.DisplacedDir)
	// The kept files of each note, oldest first, each committed as its own
	// edit (or kept as a sibling note, committed here) before the next is
	// looked at: a later one never writes over an earlier one's text
	// before git has it.
	byNote := map[string][]string{}
	err := filepath.WalkDir(root, func(held string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() && !strings.HasSuffix(held, mover.BaseSuffix) {
			byNote[filepath.Dir(held)] = append(byNote[filepath.Dir(held)], held)
		}
		return nil
	})
	if err != nil {
		return err
	}
	kept := false
	for _, files := range byNote {
		slices.SortFunc(files, func(a, b string) int { return cmp.Compare(modTime(a), modTime(b)) })
		may := true
		for _, held := range files {
			still, took, err := p.takeOneDisplaced(root, held, may)
			kept = kept || still
			if err != nil {
				return err
			}
			if !took {
				continue
			}
			if _, _, err := p.CommitEditsLocked(nil); errors.Is(err, fail.ErrWorkTreeBusy) {
				may = false // committed once git is done; the rest wait for it
			} else if err != nil {
				return err
			}
		}
	}
	p.displaced.Kept.Store(kept)
	return nil
}

// modTime is a file's modification time in nanoseconds, 0 when it cannot
// be read.
func modTime(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.ModTime().UnixNano()
}

// takeOneDisplaced looks at one kept file: still says it stays kept, took
// that what was written into it was taken, committed or kept as a sibling
// note (only when may).
func (p *People) takeOneDisplaced(root, held string, may bool) (still, took bool, err error) {
	rel, err := filepath.Rel(root, filepath.Dir(held))
	if err != nil {
		return false, false, err
	}
	path := filepath.ToSlash(rel)
	blob, size, mtime, ok := mover.ParseDisplacedName(filepath.Base(held))
	letGo := func() (bool, bool, error) {
		os.Remove(held + mover.BaseSuffix)
		err := os.Remove(held)
		os.Remove(filepath.Dir(held)) // when it was the last one there
		return false, false, err
	}
	fi, err := os.Stat(held)
	if !ok || err != nil {
		return letGo()
	}
	if fi.Size() == size && fi.ModTime().UnixNano() == mtime {
		// Unchanged, kept a while ago (the link set its change time), and
		// no process holds it open for writing: no path names it, so no
		// one can write into it any more. A file opened in the instant of
		// the swap is open by now. Its content decides, not its stat: a
		// write within the file system's clock tick that kept its size
		// leaves both as they were.
		kept, ok := changeTime(fi)
		final := time.Since(fi.ModTime()) > keepDisplaced ||
			ok && time.Since(kept) > DisplacedQuiet && !WriterMayHold(held)
		if !final {
			return true, false, nil
		}
		if content, err := os.ReadFile(held); err != nil || gitver.BlobHash(content) == blob {
			return letGo()
		}
	}
	if writing, _ := heldForWriting(held); time.Since(fi.ModTime()) < DisplacedQuiet || !may || writing {
		return true, false, nil // still being written, or another of the note's is taken first
	}
	written, err := os.ReadFile(held)
	if err != nil {
		return true, false, err
	}
	now := gitver.BlobHash(written)
	if now != blob {
		// What it held: the note's blob when it was displaced, or what was
		// taken from it last.
		base, err := os.ReadFile(held + mover.BaseSuffix)
		if errors.Is(err, fs.ErrNotExist) {
			base, err = p.repo.ReadBlob(blob)
		}
		if err != nil {
			base = nil
		}
		adopted, err := p.adoptDisplaced(path, base, written)
		if err != nil || !adopted {
			return true, false, err // looked at again next time
		}
		took = true
	}
	renamed := filepath.Join(filepath.Dir(held), mover.DisplacedName(now, fi.Size(), fi.ModTime().UnixNano()))
	if err := os.WriteFile(renamed+mover.BaseSuffix, written, 0o644); err != nil {
		return true, took, err
	}
	os.Remove(held + mover.BaseSuffix)
	return true, took, os.Rename(held, renamed)
}

// adoptDisplaced commits what a person wrote into a displaced file of the
// note's file at path as their edit, on the branch's head: merged with the
// branch's version, base (what the displaced file held) being the version
// it was made from (saves.go); taken whole when base is not known. Where
// it conflicts with what was written since, the note stays, and the
// person's text is kept as a sibling note linked `contradicts`. adopted
// is false when it is to be looked at again: git holds the work tree, or
// the branch moved meanwhile.
//
// Committed before it is placed, never only put into the note's file to
// be committed by a later comparison: a person who read the note before
// (an editor's buffer) and saves it after would replace the file, and
// their save, compared with a branch that never held the text, would be
// taken for an edit of the branch's version, and the text be in no
// version. Once the branch holds it, that save is merged with it; and a
// save that lands before the commit's file is placed stays the person's,
// merged in turn (Mover.Move).
func (p *People) adoptDisplaced(path string, base, written []byte) (adopted bool, err error) {
	if p.repo.WorkTree().Busy() != "" {
		return false, nil // the files are git's now
	}
	head, _, err := p.catch.CatchUp(nil, nil)
	var b *catchup.Building
	if errors.As(err, &b) {
		return false, nil // the index counts the versions: once it is built
	}
	if err != nil {
		return false, err
	}
	committed, err := p.repo.PathBlob(head, path)
	if err != nil {
		return false, err
	}
	var branch []byte
	if !committed.IsZero() {
		if branch, err = p.repo.ReadBlob(committed); err != nil {
			return false, err
		}
	}
	change := commits.Change{Path: path, Content: written}
	if len(base) > 0 && !committed.IsZero() {
		m, ok := linemerge.Merge(base, branch, written)
		if ok && note.IsNoteFile(path) && !stillReads(m, branch, written) {
			ok = false
		}
		switch key, _ := note.KeyOf(path); {
		case ok:
			change.Content = m
			if made := gitver.BlobHash(base); made != committed {
				change.Base = made // what was written since is in the merge
			}
		case note.IsNoteFile(path):
			return p.keepDisplacedText(key, written)
		}
	}
	if !committed.IsZero() && bytes.Equal(change.Content, branch) {
		return true, nil // the branch holds all they wrote
	}
	return p.commitDisplacedText(head, change)
}

// commitDisplacedText commits change, a note's file with what a person
// wrote into a displaced file of it, on head as their edit; the branch's
// move puts it in place, unless the person changed the file since.
func (p *People) commitDisplacedText(head gitver.Hash, change commits.Change) (adopted bool, err error) {
	rep := &EditReport{}
	_, err = p.commitPersonsEdits(head, []commits.Change{change}, rep, false)
	if errors.Is(err, fail.ErrBranchMoved) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	p.logf("text written into %s through a file opened before a write replaced it is in the note again, as the person's edit", change.Path)
	if rep.Commit != "" && p.onEdits != nil {
		p.onEdits(rep)
	}
	return true, nil
}

// keepDisplacedText keeps what a person wrote into a displaced file of the
// note key, which conflicts with what was written since, as a sibling note
// linked `contradicts`, to be committed as theirs.
func (p *People) keepDisplacedText(key string, written []byte) (bool, error) {
	head, err := p.repo.Head()
	if err != nil {
		return false, err
	}
	sibling, err := (&staleLook{p: p, head: head}).keep(key, written)
	if err != nil {
		return false, err
	}
	p.edits.Add([]string{sibling.Path}, false)
	p.logf("text written into %s.md through a file opened before a write replaced it changes the lines written since; "+
		"it is kept as the sibling note %s, linked `contradicts`", key, sibling.Path)
	return true, nil
}

// WriterMayHold reports whether some process may hold the file at abs open
// for writing; where the kernel cannot tell, the answer is yes.
func WriterMayHold(abs string) bool {
	held, known := heldForWriting(abs)
	return held || !known
}

// heldForWriting is worktree.HeldForWriting of the file at abs, outside
// the work tree (the kept files in .git).
func heldForWriting(abs string) (held, known bool) {
	f, err := os.Open(abs)
	if err != nil {
		return false, false
	}
	defer f.Close()
	return worktree.HeldForWriting(f)
}

// changeTime is fi's inode change time.
func changeTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
}
