package access

import (
	"errors"
	"os"
	"sync"
	"syscall"
	"time"
)

// Reader loads the access file at one path, parsing it again only once it
// changed: a server that checks every request's token would otherwise
// parse it at every request (220 µs for ten agents). A change is any other
// size, inode, or time of modification or of status change, so a token
// revoked is refused at the next request, whether the file was replaced
// (a commit of it) or written in place (an editor).
type Reader struct {
	path string
	mu   sync.Mutex
	seen fileStamp // of the file parsed; zero: none
	f    *File
}

// NewReader is the reader of the access file at path.
func NewReader(path string) *Reader { return &Reader{path: path} }

// fileStamp is what tells one state of a file from another.
type fileStamp struct {
	ino, size    int64
	mtime, ctime time.Time
	known        bool
}

// stampOf is fi's stamp; known is false where the system gives no inode or
// status change time, and then nothing is kept.
func stampOf(fi os.FileInfo) fileStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{}
	}
	return fileStamp{ino: int64(st.Ino), size: fi.Size(), mtime: fi.ModTime(),
		ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec), known: true}
}

// Load is Load(path), from what was parsed while the file is unchanged.
func (r *Reader) Load() (f *File, ok bool, err error) {
	fi, err := os.Stat(r.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	stamp := stampOf(fi)
	r.mu.Lock()
	defer r.mu.Unlock()
	if stamp.known && stamp == r.seen {
		return r.f, true, nil
	}
	f, ok, err = Load(r.path)
	if err != nil || !ok {
		r.seen, r.f = fileStamp{}, nil
		return f, ok, err
	}
	// The file may have changed between the stat and the read: kept only
	// when it still has the stamp it was read under.
	if again, serr := os.Stat(r.path); serr == nil && stampOf(again) == stamp {
		r.seen, r.f = stamp, f
	} else {
		r.seen, r.f = fileStamp{}, nil
	}
	return f, true, nil
}
