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

// checkFile refuses a path that is a symbolic link or not a regular file; a
// missing file is fine. checkNoLinks has checked its directories.
func (w *Workspace) checkFile(p string) error {
	fi, err := w.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return errorf("write", "", ErrInvalid, "%s is a symbolic link; the board does not follow links, remove it or replace it with a file", p)
	}
	if !fi.Mode().IsRegular() {
		return errorf("write", "", ErrInvalid, "%s is not a regular file", p)
	}
	return nil
}

// readDisk returns a workspace file's content and stat; ok is false when it
// does not exist. Reads go through os.Root: no link leads outside.
func (w *Workspace) readDisk(p string, limit int64) (content []byte, st fileStat, ok bool, err error) {
	f, err := w.root.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, st, false, nil
	}
	if err != nil {
		return nil, st, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, st, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, st, false, fmt.Errorf("%s is not a regular file", p)
	}
	if fi.Size() > limit {
		return nil, st, false, errorf("read", "", ErrTooLarge, "%s is %d bytes, over the limit of %d", p, fi.Size(), limit)
	}
	content, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, st, false, err
	}
	return content, statOf(fi), true, nil
}

// writeFileAtomic puts content at p: a temporary file in the same directory,
// synced, renamed over p, and the directory synced. No reader and no crash
// ever sees half a file.
func (w *Workspace) writeFileAtomic(p string, content []byte) error {
	tmp, err := w.stageFile(p, content)
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
// its name; renaming it over p later is atomic and needs only the directory
// to be synced.
func (w *Workspace) stageFile(p string, content []byte) (string, error) {
	dir := path.Dir(p)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, "."+path.Base(p)+tempMarker+hex.EncodeToString(rnd[:]))
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		// A new topic or key directory.
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		f, err = w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return "", err
	}
	_, err = f.Write(content)
	if err == nil {
		err = w.repo.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.root.Remove(tmp)
		return "", err
	}
	return tmp, nil
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
// writer.
func (w *Workspace) removeTemps(dir string) {
	d, err := w.root.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if strings.HasPrefix(n, ".") && strings.Contains(n, tempMarker) {
			w.root.Remove(path.Join(dir, n))
		}
	}
}
