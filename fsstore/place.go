package fsstore

import (
	"errors"
	"io/fs"
	"path"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A person may save a note at any moment, also in the few milliseconds
// between a write comparing the file with git and putting its own content in
// place. A plain rename would then replace their save unseen. placeFile
// instead swaps the files atomically (renameat2 RENAME_EXCHANGE), looks at
// what it swapped out, and when that is not what the write expected, swaps
// the person's save back: their file stays, to be committed on top of the
// write as their edit.

// placeFile moves the staged file tmp, holding the blob ours, to dst,
// provided dst still holds the blob expect ("" for no file). It reports
// false when a person's save was found there instead and kept; tmp is gone
// either way.
func (w *Workspace) placeFile(tmp, dst, expect, ours string) (bool, error) {
	d, err := w.root.Open(path.Dir(dst))
	if err != nil {
		return false, err
	}
	defer d.Close()
	fd := int(d.Fd())
	from, to := path.Base(tmp), path.Base(dst)
	flag := uint(unix.RENAME_EXCHANGE)
	if expect == "" {
		flag = unix.RENAME_NOREPLACE
	}
	err = unix.Renameat2(fd, from, fd, to, flag)
	switch {
	case err == nil && expect == "":
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
	if w.holds(tmp, expect) {
		w.root.Remove(tmp)
		return true, nil
	}
	// A person saved dst after it was compared: give their save its place
	// back. Each exchange puts the newest file back in dst; what comes out
	// is what the previous exchange put there (the write's file, which is
	// in git), unless the person saved again meanwhile: then that newer
	// save goes back in, and the older one comes out, superseded like two
	// saves within one debounce.
	prev := ours
	for range 8 {
		displaced, _ := w.blobOf(tmp)
		if err := unix.Renameat2(fd, from, fd, to, unix.RENAME_EXCHANGE); err != nil {
			return false, err
		}
		reach("swapped back")
		out, ok := w.blobOf(tmp)
		if !ok {
			break // it cannot be told apart: better left than deleted
		}
		if out == prev {
			w.root.Remove(tmp)
			break
		}
		prev = displaced
	}
	return false, nil
}

// blobOf returns the blob name of the file at p.
func (w *Workspace) blobOf(p string) (string, bool) {
	content, _, ok, err := w.readDisk(p, maxFileBytes)
	if err != nil || !ok {
		return "", false
	}
	return gitver.BlobHash(content).String(), true
}

// placeFileByRename is placeFile for file systems without renameat2 flags:
// compare, then rename. A save landing between the two is replaced, but it
// was made after the write began and the window is a system call wide.
func (w *Workspace) placeFileByRename(tmp, dst, expect string) (bool, error) {
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
func (w *Workspace) removeIf(p, expect string) (bool, error) {
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

// holds reports whether the file at p has the blob expect ("" for no file).
func (w *Workspace) holds(p, expect string) bool {
	content, _, ok, err := w.readDisk(p, maxFileBytes)
	if err != nil {
		return false
	}
	if !ok {
		return expect == ""
	}
	return gitver.BlobHash(content).String() == expect
}

// racyWindow is how recently a file may have been modified for its stat to
// be worth nothing: a file system's clock is coarse (a few milliseconds on
// Linux), so a second write within the same tick can leave size, time and
// inode unchanged. Files younger than this are compared by content.
const racyWindow = time.Second

// trustworthy reports whether st may stand for the content read with it.
func trustworthy(st fileStat) bool {
	return time.Since(time.Unix(0, st.mtime)) >= racyWindow
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
