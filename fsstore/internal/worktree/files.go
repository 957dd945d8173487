package worktree

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Files is the board's work tree as the engine writes it: every file of a
// note, opened through an os.Root, so that no link leads outside the
// workspace. It is safe for concurrent use.
type Files struct {
	root *os.Root
	git  Git
	// reach is told each step of putting a file in place (the crash
	// tests kill the process there).
	reach func(step string)
}

// Git is what Files needs of the repository: fsync as the repository does
// (not at all when it is not durable), and a blob's content.
type Git interface {
	Sync(f *os.File) error
	Durable() bool
	ReadBlob(h gitver.Hash) ([]byte, error)
}

// New returns the files under root. reach, when set, is told each step of
// putting a file in place.
func New(root *os.Root, git Git, reach func(step string)) *Files {
	if reach == nil {
		reach = func(string) {}
	}
	return &Files{root: root, git: git, reach: reach}
}

// Error is a file the engine must refuse (a link where a note should be, a
// file over the size limit): Kind is note.ErrInvalid or note.ErrTooLarge,
// Msg says what is wrong and what to do.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap makes errors.Is see the kind.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// TempMarker names the program's temporary files: a leading dot and this
// infix. No address can name such a file (segments start with a letter or
// digit), and recovery removes leftovers of a killed writer.
const TempMarker = ".bb-tmp-"

// partialMarker follows TempMarker in the name a file has while it is being
// written: only once whole (written and synced) is it renamed to its
// temporary name. A writer killed part way so leaves a partial file no one
// can take for a person's save (removeTemps puts those back in place).
const partialMarker = "part-"

// TempPattern matches every temporary file of the program, for git: a
// person's `git add -A` must never stage one (they live beside the notes,
// for a few milliseconds, or until the next write when a writer was
// killed).
const TempPattern = ".*" + TempMarker + "*"

// CheckNoLinks refuses a path when it or any directory on the way is a
// symbolic link or not what it should be: an address never leads through a
// link, even one that stays inside the workspace. A missing component is fine
// (the note does not exist yet).
func (t *Files) CheckNoLinks(p string) error {
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fi, err := t.root.Lstat(sub)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		last := i == len(parts)-1
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return errorf(note.ErrInvalid, "%s is a symbolic link; the board does not follow links, remove it or replace it with a file", sub)
		case !last && !fi.IsDir():
			return errorf(note.ErrInvalid, "%s is a file where the address needs a directory", sub)
		case last && !fi.Mode().IsRegular():
			return errorf(note.ErrInvalid, "%s is not a regular file", sub)
		}
	}
	return nil
}

// ReadFile returns a workspace file's content (at most 64 MiB) and its
// stat, taken before the content was read: a write that lands during the read changes the file's
// stat afterwards, so a stat recorded with this content never hides it. ok
// is false when the file does not exist. Reads go through os.Root: no link
// leads outside.
func (t *Files) ReadFile(p string) (content []byte, fi fs.FileInfo, ok bool, err error) {
	const limit = MaxFileBytes
	// O_NONBLOCK: a FIFO put where a note was must not hang the reader; for
	// a regular file it changes nothing.
	f, err := t.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
		return nil, nil, false, errorf(note.ErrTooLarge, "%s is %d bytes, over the limit of %d", p, fi.Size(), limit)
	}
	content, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, nil, false, err
	}
	return content, fi, true, nil
}

// WriteAtomic puts content at p: a temporary file in the same directory,
// synced, renamed over p, and the directory synced. No reader and no crash
// ever sees half a file.
func (t *Files) WriteAtomic(p string, content []byte) error {
	tmp, _, err := t.Stage(p, content)
	if err != nil {
		return err
	}
	if err := t.root.Rename(tmp, p); err != nil {
		t.root.Remove(tmp)
		return err
	}
	return t.SyncDir(path.Dir(p))
}

// Stage writes content to a synced temporary file beside p and returns
// its name and stat; renaming it over p later is atomic, keeps that stat
// (but the change time) and needs only the directory to be synced.
func (t *Files) Stage(p string, content []byte) (string, fs.FileInfo, error) {
	dir := path.Dir(p)
	tmp, err := t.TempName(p)
	if err != nil {
		return "", nil, err
	}
	at := strings.LastIndex(tmp, TempMarker) + len(TempMarker)
	partial := tmp[:at] + partialMarker + tmp[at:]
	f, err := t.root.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// A new topic or key directory.
		if err := t.root.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		f, err = t.root.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return "", nil, err
	}
	t.reach("staging")
	_, err = f.Write(content)
	if err == nil {
		err = t.git.Sync(f)
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
		err = t.root.Rename(partial, tmp)
	}
	if err != nil {
		t.root.Remove(partial)
		return "", nil, err
	}
	return tmp, fi, nil
}

// TempName returns a fresh temporary name beside p.
func (t *Files) TempName(p string) (string, error) {
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	return path.Join(path.Dir(p), "."+path.Base(p)+TempMarker+hex.EncodeToString(rnd[:])), nil
}

// Remove deletes p if present and syncs its directory.
func (t *Files) Remove(p string) error {
	if err := t.Unlink(p); err != nil {
		return err
	}
	return t.SyncDir(path.Dir(p))
}

// Unlink deletes p if present, without syncing.
func (t *Files) Unlink(p string) error {
	err := t.root.Remove(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (t *Files) SyncDir(dir string) error {
	if !t.git.Durable() {
		return nil
	}
	d, err := t.root.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RemoveTemps deletes the program's temporary files left in dir by a killed
// writer. blobs are the contents the writer's journal names for each path
// (old, then new): a temporary file holding anything else is a person's save
// that the writer had swapped out of the way and not yet put back (see
// Place). It goes back in place, unless the person saved again since.
// A file that cannot be read, or put back, is left rather than deleted.
func (t *Files) RemoveTemps(dir string, blobs map[string][]gitver.Hash) {
	d, err := t.root.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		at := strings.LastIndex(n, TempMarker) // a key may hold the marker too
		if at <= 0 || !strings.HasPrefix(n, ".") {
			continue
		}
		base, rest := n[:at], n[at+len(TempMarker):]
		tmp, target := path.Join(dir, n), path.Join(dir, base[1:])
		if strings.HasPrefix(rest, partialMarker) {
			t.root.Remove(tmp) // cut short while being written: never a save
			continue
		}
		blob, ok := t.blobOf(tmp)
		if !ok {
			continue
		}
		known := blobs[target]
		if len(known) > 0 && !slices.Contains(known, blob) {
			cur, readable := t.blobOf(target)
			_, statErr := t.root.Lstat(target)
			if errors.Is(statErr, fs.ErrNotExist) || readable && cur == known[len(known)-1] {
				_ = t.root.Rename(tmp, target) // the person's save, back in place
				continue
			}
		}
		t.root.Remove(tmp)
	}
}

// A person may save a note at any moment, also in the few milliseconds
// between a write comparing the file with git and putting its own content in
// place. A plain rename would then replace their save unseen. placeFile
// instead swaps the files atomically (renameat2 RENAME_EXCHANGE), looks at
// what it swapped out, and when that is not what the write expected, swaps
// the person's save back: their file stays, to be committed on top of the
// write as their edit. A save there already when the write comes is found
// by a look before the swap, and never swapped out at all.

// Place moves the staged file, holding the blob ours, to dst, provided
// dst still holds the blob expect (zero for no file). It reports false when
// a person's save was found there instead and kept; the staged file is gone
// either way (or kept, when a person wrote into it: settleSwappedBack).
// kept is a file it moved out of dst's place that a person may still write
// into: the caller keeps it (see fsstore's displaced.go), and removes it.
func (t *Files) Place(staged Staged, dst string, expect, ours gitver.Hash) (placed bool, kept *Displaced, err error) {
	tmp := staged.Tmp
	if held, _ := t.HeldForWriting(dst); held && !expect.IsZero() {
		// A person is writing the file (a `cat >>` still open, an editor
		// between the halves of a save): a rename would send the rest of
		// what they write into a file no path names. The file stays
		// theirs, and is compared once they close it.
		t.reach("held")
		t.root.Remove(tmp)
		return false, nil, nil
	}
	if !expect.IsZero() && !t.Holds(dst, expect) {
		// A person saved the file since it was compared: it stays theirs.
		// Looked at before the swap, not only after: swapped in, the
		// write's file would be the note for a moment, and a person who
		// reads it then, and saves that buffer into their file once it is
		// back, replaces their own save, never committed, with a text that
		// lacks it.
		t.root.Remove(tmp)
		return false, nil, nil
	}
	t.reach("unheld") // a person may open or save the file from here on, and still write into it after the swap
	d, err := t.root.Open(path.Dir(dst))
	if err != nil {
		return false, nil, err
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
		return true, nil, nil
	case err == nil:
		// dst's former file is now at tmp.
		t.reach("exchanged")
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOENT):
		// A person created the file, or deleted it, since it was compared:
		// their change stays.
		t.root.Remove(tmp)
		return false, nil, nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		placed, err := t.placeByRename(tmp, dst, expect)
		return placed, nil, err
	default:
		t.root.Remove(tmp)
		return false, nil, err
	}
	// The displaced file's stat is taken before its content is compared:
	// a person's write through a handle they hold, landing after the
	// comparison, then shows as a change of the kept file, never as what
	// it held when it was kept.
	before, statErr := t.root.Lstat(tmp)
	if t.Holds(tmp, expect) {
		// Kept, not deleted: a person may still have it open.
		if statErr == nil {
			return true, &Displaced{Tmp: tmp, Path: dst, Blob: expect, Info: before}, nil
		}
		t.root.Remove(tmp)
		return true, nil, nil
	}
	// A person changed dst's file after it was compared: it goes back in
	// place, and the write's file comes out again.
	if err := unix.Renameat2(fd, from, fd, to, unix.RENAME_EXCHANGE); err != nil {
		return false, nil, err
	}
	t.reach("swapped back")
	kept, err = t.settleSwappedBack(fd, tmp, dst, expect, ours, staged.Info.Size())
	return false, kept, err
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
func (t *Files) settleSwappedBack(fd int, tmp, dst string, expect, ours gitver.Hash, oursSize int64) (*Displaced, error) {
	st, content, ok := t.lookAt(tmp)
	if !ok {
		return nil, nil // gone, or it cannot be told apart: better left than deleted
	}
	if int64(len(content)) >= oursSize && gitver.BlobHash(content[:oursSize]) == ours {
		return &Displaced{Tmp: tmp, Path: dst, Blob: ours, Info: st, Base: content[:oursSize]}, nil
	}
	from, to := path.Base(tmp), path.Base(dst)
	if err := unix.Renameat2(fd, from, fd, to, unix.RENAME_EXCHANGE); err != nil {
		return nil, err
	}
	t.reach("swapped again")
	if st, content, ok = t.lookAt(tmp); !ok {
		return nil, nil
	}
	if base, err := t.git.ReadBlob(expect); err == nil && int64(len(content)) > int64(len(base)) &&
		gitver.BlobHash(content[:len(base)]) == expect {
		return &Displaced{Tmp: tmp, Path: dst, Blob: expect, Info: st, Base: base}, nil
	}
	return &Displaced{Tmp: tmp, Path: dst, Blob: gitver.BlobHash(content), Info: st, Base: content}, nil
}

// lookAt returns the stat of the file at p, taken first, and its content.
func (t *Files) lookAt(p string) (fs.FileInfo, []byte, bool) {
	st, err := t.root.Lstat(p)
	if err != nil {
		return nil, nil, false
	}
	content, _, ok, err := t.ReadFile(p)
	if err != nil || !ok {
		return nil, nil, false
	}
	return st, content, true
}

// blobOf returns the blob name of the file at p.
func (t *Files) blobOf(p string) (gitver.Hash, bool) {
	content, _, ok, err := t.ReadFile(p)
	if err != nil || !ok {
		return gitver.ZeroHash, false
	}
	return gitver.BlobHash(content), true
}

// placeByRename is placeFile for file systems without renameat2 flags:
// compare, then rename. A save landing between the two is replaced, but it
// was made after the write began and the window is a system call wide.
func (t *Files) placeByRename(tmp, dst string, expect gitver.Hash) (bool, error) {
	if !t.Holds(dst, expect) {
		t.root.Remove(tmp)
		return false, nil
	}
	if err := t.root.Rename(tmp, dst); err != nil {
		t.root.Remove(tmp)
		return false, err
	}
	return true, nil
}

// RemoveIf deletes p when it still holds the blob expect. It moves the file
// aside first, so that a save made meanwhile can be put back rather than
// deleted. It reports false when a person's save was kept.
func (t *Files) RemoveIf(p string, expect gitver.Hash) (bool, error) {
	aside, err := t.TempName(p)
	if err != nil {
		return false, err
	}
	if err := t.root.Rename(p, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		return false, err
	}
	if t.Holds(aside, expect) {
		t.root.Remove(aside)
		return true, nil
	}
	d, err := t.root.Open(path.Dir(p))
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
	t.root.Remove(aside)
	return false, err
}

// Holds reports whether the file at p has the blob expect (zero for no file).
func (t *Files) Holds(p string, expect gitver.Hash) bool {
	content, _, ok, err := t.ReadFile(p)
	if err != nil {
		return false
	}
	if !ok {
		return expect.IsZero()
	}
	return gitver.BlobHash(content) == expect
}

// HeldForWriting reports whether some process holds the file at p open for
// writing, as the kernel counts its open descriptors: it refuses a read
// lease (EAGAIN) on a file that any process has open for writing. known is
// false where it cannot tell (a file system without leases, a file of
// another user); held is then false.
func (t *Files) HeldForWriting(p string) (held, known bool) {
	f, err := t.root.Open(p)
	if err != nil {
		return false, false
	}
	defer f.Close()
	return HeldForWriting(f)
}

// HeldForWriting is Files.HeldForWriting of an open file, which the caller
// opened for reading only.
func HeldForWriting(f *os.File) (held, known bool) {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_RDLCK)
	switch {
	case err == nil:
		_, _ = unix.FcntlInt(f.Fd(), unix.F_SETLEASE, unix.F_UNLCK)
		return false, true
	case errors.Is(err, unix.EAGAIN):
		return true, true
	}
	return false, false
}

// MaxFileBytes bounds any single file the program reads from the workspace:
// a note, a blob, a person's edit.
const MaxFileBytes = 64 << 20

// Staged is a new file written under a temporary name, and its stat.
type Staged struct {
	Tmp  string
	Info fs.FileInfo
}

// Displaced is a file Place moved out of a note's place, which a person may
// still have open: at Tmp, it held Blob when its stat Info was taken (or
// Blob with text appended; Base is Blob's content when git may not have
// it), and was at Path.
type Displaced struct {
	Tmp, Path string
	Blob      gitver.Hash
	Info      fs.FileInfo
	Base      []byte
}
