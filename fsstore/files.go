package fsstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// This file is the one room for the work tree's files: everything the
// engine does to a note's file on disk (read it, stat it, walk the tree,
// stage a new file, put it in place without losing a person's save, remove
// it) is here, and goes through os.Root, so no link leads outside the
// workspace.

// tempMarker names the program's temporary files: a leading dot and this
// infix. No address can name such a file (segments start with a letter or
// digit), and recovery removes leftovers of a killed writer.
const tempMarker = ".bb-tmp-"

// partialMarker follows tempMarker in the name a file has while it is being
// written: only once whole (written and synced) is it renamed to its
// temporary name. A writer killed part way so leaves a partial file no one
// can take for a person's save (removeTemps puts those back in place).
const partialMarker = "part-"

// tempPattern matches every temporary file of the program, for git: a
// person's `git add -A` must never stage one (they live beside the notes,
// for a few milliseconds, or until the next write when a writer was
// killed).
const tempPattern = ".*" + tempMarker + "*"

// statOf is the part of a file's metadata that tells whether it changed,
// as the index records it (the blob left zero).
func statOf(fi fs.FileInfo) index.DiskStat {
	return diskStat(gitver.StatOfFile(fi))
}

func diskStat(st gitver.FileStat) index.DiskStat {
	return index.DiskStat{Size: st.Size, MTime: st.MTime, Ino: st.Ino}
}

// sameStat reports whether a file's stat now is the one recorded when it
// last matched its blob: its size, and its modification time to the
// nanosecond. The inode is recorded, not compared (as git's
// core.checkStat=minimal): a copy of the board (cp -a, a restored backup)
// keeps every file's size and time and gives it a new inode, and a file
// replaced since by another of its very size and nanosecond time is not
// something an editor or git makes.
func sameStat(recorded, now index.DiskStat) bool {
	return recorded.Size == now.Size && recorded.MTime == now.MTime
}

// checkNoLinks refuses a path when it or any directory on the way is a
// symbolic link or not what it should be: an address never leads through a
// link, even one that stays inside the workspace. A missing component is fine
// (the note does not exist yet).
func (w *Workspace) checkNoLinks(p string) error {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := w.root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return errorf("write", "", ErrInvalid, "%s is a symbolic link; the board does not follow links, remove it or replace it with a file", sub)
		case !last && !fi.IsDir():
			return errorf("write", "", ErrInvalid, "%s is a file where the address needs a directory", sub)
		case last && !fi.Mode().IsRegular():
			return errorf("write", "", ErrInvalid, "%s is not a regular file", sub)
		}
	}
	return nil
}

// ReadFile returns a workspace file's content (at most 64 MiB) and its
// stat, taken before the content was read: a write that lands during the read changes the file's
// stat afterwards, so a stat recorded with this content never hides it. ok
// is false when the file does not exist. Reads go through os.Root: no link
// leads outside.
func (w *Workspace) ReadFile(p string) (content []byte, fi fs.FileInfo, ok bool, err error) {
	const limit = maxFileBytes
	// O_NONBLOCK: a FIFO put where a note was must not hang the reader; for
	// a regular file it changes nothing.
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	defer f.Close()
	fi, err = f.Stat()
	if err != nil {
		return nil, nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, false, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > limit {
		return nil, nil, false, errorf("read", "", ErrTooLarge, "%s is %d bytes, over the limit of %d", p, fi.Size(), limit)
	}
	content, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, false, err
	}
	return content, fi, true, nil
}

// writeFileAtomic puts content at p: a temporary file in the same directory,
// synced, renamed over p, and the directory synced. No reader and no crash
// ever sees half a file.
func (w *Workspace) writeFileAtomic(p string, content []byte) error {
	tmp, _, err := w.stageFile(p, content)
	if err != nil {
		return err
	}
	if err := w.root.Rename(tmp, p); err != nil {
		w.root.Remove(tmp)
		return err
	}
	return w.syncDir(path.Dir(p))
}

// stageFile writes content to a synced temporary file beside p and returns
// its name and stat; renaming it over p later is atomic, keeps that stat
// (but the change time) and needs only the directory to be synced.
func (w *Workspace) stageFile(p string, content []byte) (string, fs.FileInfo, error) {
	dir := path.Dir(p)
	tmp, err := w.tempName(p)
	if err != nil {
		return "", nil, err
	}
	at := strings.LastIndex(tmp, tempMarker) + len(tempMarker)
	partial := tmp[:at] + partialMarker + tmp[at:]
	f, err := w.root.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// A new topic or key directory.
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		f, err = w.root.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return "", nil, err
	}
	reach("staging")
	_, err = f.Write(content)
	if err == nil {
		err = w.repo.Sync(f)
	}
	var fi fs.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Not synced: after a power failure the file may be back under its
		// partial name, and the write's journal puts the content in place
		// again from git.
		err = w.root.Rename(partial, tmp)
	}
	if err != nil {
		w.root.Remove(partial)
		return "", nil, err
	}
	return tmp, fi, nil
}

// tempName returns a fresh temporary name beside p.
func (w *Workspace) tempName(p string) (string, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return path.Join(path.Dir(p), "."+path.Base(p)+tempMarker+hex.EncodeToString(rnd[:])), nil
}

// removeFile deletes p if present and syncs its directory.
func (w *Workspace) removeFile(p string) error {
	if err := w.unlink(p); err != nil {
		return err
	}
	return w.syncDir(path.Dir(p))
}

// unlink deletes p if present, without syncing.
func (w *Workspace) unlink(p string) error {
	err := w.root.Remove(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (w *Workspace) syncDir(dir string) error {
	if !w.repo.Durable() {
		return nil
	}
	d, err := w.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// removeTemps deletes the program's temporary files left in dir by a killed
// writer. blobs are the contents the writer's journal names for each path
// (old, then new): a temporary file holding anything else is a person's save
// that the writer had swapped out of the way and not yet put back (see
// placeFile). It goes back in place, unless the person saved again since.
// A file that cannot be read, or put back, is left rather than deleted.
func (w *Workspace) removeTemps(dir string, blobs map[string][]gitver.Hash) {
	d, err := w.root.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		at := strings.LastIndex(n, tempMarker) // a key may hold the marker too
		if at <= 0 || !strings.HasPrefix(n, ".") {
			continue
		}
		base, rest := n[:at], n[at+len(tempMarker):]
		tmp, target := path.Join(dir, n), path.Join(dir, base[1:])
		if strings.HasPrefix(rest, partialMarker) {
			w.root.Remove(tmp) // cut short while being written: never a save
			continue
		}
		blob, ok := w.blobOf(tmp)
		if !ok {
			continue
		}
		known := blobs[target]
		if len(known) > 0 && !slices.Contains(known, blob) {
			cur, readable := w.blobOf(target)
			_, statErr := w.root.Lstat(target)
			if errors.Is(statErr, fs.ErrNotExist) || readable && cur == known[len(known)-1] {
				_ = w.root.Rename(tmp, target) // the person's save, back in place
				continue
			}
		}
		w.root.Remove(tmp)
	}
}

// TreeProblem is a path of the work tree that cannot be read as a note's
// file: what is wrong, and what to do.
type TreeProblem struct {
	Path, What, Fix string
	// Minor is set for a file that is no note at all (a Markdown file whose
	// name no address can have): nothing of the board is wrong, but a
	// person may have meant it as a note.
	Minor bool
}

func (p TreeProblem) String() string {
	if p.Path == "" {
		return p.What + "; " + p.Fix
	}
	return p.Path + " is " + p.What + "; " + p.Fix
}

// WalkNotes finds every file of the work tree that belongs to a note, with
// its stat, and the paths that would but cannot be read. It does not enter
// directories whose name starts with a dot (.git, .blackboard, editors'
// folders: no address names them) and does not follow links. ok is false
// when the work tree itself cannot be listed.
func (w *Workspace) WalkNotes() (found map[string]gitver.FileStat, problems []TreeProblem, ok bool) {
	found = map[string]gitver.FileStat{}
	err := filepath.WalkDir(w.dir, func(abs string, d fs.DirEntry, err error) error {
		p := w.Rel(abs)
		if err != nil {
			if p == "." {
				return err
			}
			problems = append(problems, TreeProblem{Path: p, What: "unreadable (" + errMsg(err) + ")", Fix: "fix its permissions"})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if _, ok := note.KeyOf(p); !ok {
			if problem := w.misnamed(p); problem != nil && d.Type().IsRegular() {
				problems = append(problems, *problem)
			}
			return nil
		}
		const fix = "replace it with a regular file, or remove it"
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			problems = append(problems, TreeProblem{Path: p, What: "a symbolic link, which the board does not follow", Fix: fix})
		case !d.Type().IsRegular():
			problems = append(problems, TreeProblem{Path: p, What: "not a regular file", Fix: fix})
		default:
			if fi, err := d.Info(); err == nil {
				found[p] = gitver.StatOfFile(fi)
			}
		}
		return nil
	})
	if err != nil {
		problems = append(problems, TreeProblem{What: "the work tree cannot be listed: " + errMsg(err), Fix: "fix the workspace directory's permissions"})
		return found, problems, false
	}
	return found, problems, true
}

// Rel turns a path under the workspace into its slash-separated
// relative form.
func (w *Workspace) Rel(abs string) string {
	rel, err := filepath.Rel(w.dir, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}

// A person may save a note at any moment, also in the few milliseconds
// between a write comparing the file with git and putting its own content in
// place. A plain rename would then replace their save unseen. placeFile
// instead swaps the files atomically (renameat2 RENAME_EXCHANGE), looks at
// what it swapped out, and when that is not what the write expected, swaps
// the person's save back: their file stays, to be committed on top of the
// write as their edit.

// placeFile moves the staged file, holding the blob ours, to dst, provided
// dst still holds the blob expect (zero for no file). It reports false when
// a person's save was found there instead and kept; the staged file is gone
// either way (or kept, when a person wrote into it: settleSwappedBack).
func (w *Workspace) placeFile(staged stagedFile, dst string, expect, ours gitver.Hash) (bool, error) {
	tmp := staged.tmp
	d, err := w.root.Open(path.Dir(dst))
	if err != nil {
		return false, err
	}
	defer d.Close()
	fd := int(d.Fd())
	from, to := path.Base(tmp), path.Base(dst)
	flag := uint(unix.RENAME_EXCHANGE)
	if expect.IsZero() {
		flag = unix.RENAME_NOREPLACE
	}
	err = unix.Renameat2(fd, from, fd, to, flag)
	switch {
	case err == nil && expect.IsZero():
		return true, nil
	case err == nil:
		// dst's former file is now at tmp.
		reach("exchanged")
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOENT):
		// A person created the file, or deleted it, since it was compared:
		// their change stays.
		w.root.Remove(tmp)
		return false, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return w.placeFileByRename(tmp, dst, expect)
	default:
		w.root.Remove(tmp)
		return false, err
	}
	// The displaced file's stat is taken before its content is compared:
	// a person's write through a handle they hold, landing after the
	// comparison, then shows as a change of the kept file, never as what
	// it held when it was kept.
	before, statErr := w.root.Lstat(tmp)
	if w.holds(tmp, expect) {
		// Kept, not deleted: a person may still have it open.
		if statErr == nil {
			w.keepDisplacedFile(tmp, dst, expect, before, nil)
		} else {
			w.root.Remove(tmp)
		}
		return true, nil
	}
	// A person changed dst's file after it was compared: it goes back in
	// place, and the write's file comes out again.
	if err := unix.Renameat2(fd, from, fd, to, unix.RENAME_EXCHANGE); err != nil {
		return false, err
	}
	reach("swapped back")
	return false, w.settleSwappedBack(fd, tmp, dst, expect, ours, staged.info.Size())
}

// settleSwappedBack deals with the write's file, at tmp again after its
// moment in dst's place (placeFile), as a person may have left it:
//   - as it was placed, or with text appended (a person opened the note
//     meanwhile): it is kept like a displaced file, and what they appended
//     goes onto the note (takeDisplaced).
//   - replaced by a save: that save is newer than the changed file put
//     back, and takes its place; the file that comes out is superseded, as
//     two saves within one debounce are, except for text appended to what
//     the write expected, which goes onto the note as above.
//
// Whatever comes out is kept, not deleted: a person who opened it while it
// was in place may still write into it, and that text reaches the note.
func (w *Workspace) settleSwappedBack(fd int, tmp, dst string, expect, ours gitver.Hash, oursSize int64) error {
	st, content, ok := w.lookAt(tmp)
	if !ok {
		return nil // gone, or it cannot be told apart: better left than deleted
	}
	if int64(len(content)) >= oursSize && gitver.BlobHash(content[:oursSize]) == ours {
		w.keepDisplacedFile(tmp, dst, ours, st, content[:oursSize])
		return nil
	}
	from, to := path.Base(tmp), path.Base(dst)
	if err := unix.Renameat2(fd, from, fd, to, unix.RENAME_EXCHANGE); err != nil {
		return err
	}
	reach("swapped again")
	if st, content, ok = w.lookAt(tmp); !ok {
		return nil
	}
	if base, err := w.repo.ReadBlob(expect); err == nil && int64(len(content)) > int64(len(base)) &&
		gitver.BlobHash(content[:len(base)]) == expect {
		w.keepDisplacedFile(tmp, dst, expect, st, base)
		return nil
	}
	w.keepDisplacedFile(tmp, dst, gitver.BlobHash(content), st, content)
	return nil
}

// lookAt returns the stat of the file at p, taken first, and its content.
func (w *Workspace) lookAt(p string) (fs.FileInfo, []byte, bool) {
	st, err := w.root.Lstat(p)
	if err != nil {
		return nil, nil, false
	}
	content, _, ok, err := w.ReadFile(p)
	if err != nil || !ok {
		return nil, nil, false
	}
	return st, content, true
}

// blobOf returns the blob name of the file at p.
func (w *Workspace) blobOf(p string) (gitver.Hash, bool) {
	content, _, ok, err := w.ReadFile(p)
	if err != nil || !ok {
		return gitver.ZeroHash, false
	}
	return gitver.BlobHash(content), true
}

// placeFileByRename is placeFile for file systems without renameat2 flags:
// compare, then rename. A save landing between the two is replaced, but it
// was made after the write began and the window is a system call wide.
func (w *Workspace) placeFileByRename(tmp, dst string, expect gitver.Hash) (bool, error) {
	if !w.holds(dst, expect) {
		w.root.Remove(tmp)
		return false, nil
	}
	if err := w.root.Rename(tmp, dst); err != nil {
		w.root.Remove(tmp)
		return false, err
	}
	return true, nil
}

// removeIf deletes p when it still holds the blob expect. It moves the file
// aside first, so that a save made meanwhile can be put back rather than
// deleted. It reports false when a person's save was kept.
func (w *Workspace) removeIf(p string, expect gitver.Hash) (bool, error) {
	aside, err := w.tempName(p)
	if err != nil {
		return false, err
	}
	if err := w.root.Rename(p, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		return false, err
	}
	if w.holds(aside, expect) {
		w.root.Remove(aside)
		return true, nil
	}
	d, err := w.root.Open(path.Dir(p))
	if err != nil {
		return false, err
	}
	defer d.Close()
	fd := int(d.Fd())
	err = unix.Renameat2(fd, path.Base(aside), fd, path.Base(p), unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		// The person saved the file again: their newest save stays.
		err = nil
	}
	w.root.Remove(aside)
	return false, err
}

// holds reports whether the file at p has the blob expect (zero for no file).
func (w *Workspace) holds(p string, expect gitver.Hash) bool {
	content, _, ok, err := w.ReadFile(p)
	if err != nil {
		return false
	}
	if !ok {
		return expect.IsZero()
	}
	return gitver.BlobHash(content) == expect
}

// racyWindow is how recently a file may have been modified for its stat to
// be worth nothing: a file system's clock is coarse (a few milliseconds on
// Linux), so a second write within the same tick can leave size, time and
// inode unchanged. Files younger than this are compared by content.
const racyWindow = time.Second

// trustworthy reports whether st may stand for the content read with it.
func trustworthy(st index.DiskStat) bool {
	return time.Since(time.Unix(0, st.MTime)) >= racyWindow
}

// staleInfo is a stat that matches no file: recorded in git's index for a
// path whose file is not the committed content (a person's save kept by
// placeFile), it makes git compare the content instead of trusting the
// entry.
type staleInfo struct{}

func (staleInfo) Name() string       { return "" }
func (staleInfo) Size() int64        { return 0 }
func (staleInfo) Mode() fs.FileMode  { return 0o644 }
func (staleInfo) ModTime() time.Time { return time.Unix(0, 0) }
func (staleInfo) IsDir() bool        { return false }
func (staleInfo) Sys() any           { return nil }

// maxFileBytes bounds any single file the program reads from the workspace:
// a note, a blob, a person's edit.
const maxFileBytes = 64 << 20

// stagedFile is a new file written under a temporary name, and its stat.
type stagedFile struct {
	tmp  string
	info fs.FileInfo
}
