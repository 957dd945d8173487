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
	"slices"
	"strings"
	"syscall"
)

// tempMarker names the program's temporary files: a leading dot and this
// infix. No address can name such a file (segments start with a letter or
// digit), and recovery removes leftovers of a killed writer.
const tempMarker = ".bb-tmp-"

// fileStat is the part of a file's metadata that tells whether it changed.
type fileStat struct {
	size, mtime int64
	ino         uint64
}

func statOf(fi fs.FileInfo) fileStat {
	s := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
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

// readDisk returns a workspace file's content and its stat, taken before the
// content was read: a write that lands during the read changes the file's
// stat afterwards, so a stat recorded with this content never hides it. ok
// is false when the file does not exist. Reads go through os.Root: no link
// leads outside.
func (w *Workspace) readDisk(p string, limit int64) (content []byte, fi fs.FileInfo, ok bool, err error) {
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
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// A new topic or key directory.
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		f, err = w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return "", nil, err
	}
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
	if err != nil {
		w.root.Remove(tmp)
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
func (w *Workspace) removeTemps(dir string, blobs map[string][]string) {
	d, err := w.root.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		base, _, isTemp := strings.Cut(n, tempMarker)
		if !isTemp || !strings.HasPrefix(base, ".") {
			continue
		}
		tmp, target := path.Join(dir, n), path.Join(dir, base[1:])
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
