package gitver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver/gitindex"
	"github.com/go-git/go-git/v5/plumbing"
)

// IndexEntry is one path to record in git's index file after a commit made by
// plumbing. Info is the file as it now is on disk; nil removes the path.
type IndexEntry struct {
	Path string
	Blob Hash
	Info os.FileInfo
}

// indexCache keeps the last index file this process read or wrote, so that a
// write does not parse the whole index again unless someone else changed it.
type indexCache struct {
	size  int64
	mtime time.Time
	ino   uint64
	idx   gitindex.Index
}

func (c *indexCache) matches(fi os.FileInfo) bool {
	return c != nil && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) && c.ino == inode(fi)
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// IndexLockPath is the lock git takes to rewrite its index file.
func (r *Repo) IndexLockPath() string { return filepath.Join(r.gitDir, "index.lock") }

// UpdateIndex records entries in git's index file (.git/index) under
// index.lock, as `git update-index` does. Without this, a person's next
// `git add other.md && git commit` would build its tree from a stale index and
// put back the old content of every note the program wrote.
//
// The cache-tree and other optional extensions are dropped (git rebuilds
// them); a split index stays split (splitindex.go), and a large one is split;
// an index with a required extension this package cannot keep (sparse
// directories) is left alone and reported.
func (r *Repo) UpdateIndex(entries []IndexEntry) error {
	if len(entries) == 0 {
		return nil
	}
	l, err := r.LockIndex()
	if err != nil {
		return err
	}
	return l.Write(entries)
}

// IndexLock is git's index.lock, held by this process.
//
// A writer holds it from before it moves the branch until git's index
// reflects the new commit, so no git command can write the index in between.
// `git commit` reads HEAD and then the index before it takes this lock: one
// that reads both within that window still builds on the index as it was.
// The window is kept to a few renames (files are staged before the branch
// moves), and the agent's content stays in history and in the file.
type IndexLock struct {
	r    *Repo
	f    *os.File
	done bool
	// Waited says a git command held the lock when LockIndex was called:
	// what was read of the work tree before may be from its middle.
	Waited bool
}

// settleAfterGit is how long LockIndex waits after a git command let the
// index lock go: git's checkout, reset and stash release it before they move
// HEAD or the branch, and a write that went on at once would do its work
// between the two (a reset would then move the branch back over it, a
// checkout -b move HEAD away from its files). Those last steps take git
// well under this.
const settleAfterGit = 20 * time.Millisecond

// LockIndex takes git's index lock, waiting a few seconds for a git command
// that holds it, and then a moment more for that command to finish. It
// waits as well while a person's command that moves the branch has just
// begun (a pull, a merge, a reset): such a command takes git's index more
// than once, and fails when it finds it held in between (`git merge` then
// cannot stash the work tree); it has moved the branch, or begun a while
// ago, by the time the lock is taken.
func (r *Repo) LockIndex() (*IndexLock, error) {
	lockPath := r.IndexLockPath()
	deadline := time.Now().Add(lockWait)
	waited := false
	for {
		if now := time.Now(); r.personsCommand(now) != "" && now.Before(deadline) {
			waited = true
			time.Sleep(2 * time.Millisecond)
			continue
		}
		f, err := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			if waited {
				time.Sleep(settleAfterGit)
			}
			return &IndexLock{r: r, f: f, Waited: waited}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s exists: another git command is using the index; if none is running, remove it", lockPath)
		}
		waited = true
		time.Sleep(2 * time.Millisecond)
	}
}

// Release gives the lock up without changing the index. It is a no-op after
// Write.
func (l *IndexLock) Release() {
	if l.done {
		return
	}
	l.done = true
	l.f.Close()
	os.Remove(l.r.IndexLockPath())
}

// Write records entries in the index and releases the lock.
func (l *IndexLock) Write(entries []IndexEntry) error {
	defer l.Release()
	if len(entries) == 0 {
		return nil
	}
	r := l.r
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.loadIndex()
	if err != nil {
		return err
	}
	r.index = nil // the cached entries are edited below; restored on success
	for _, e := range entries {
		if e.Info == nil {
			c.idx.Remove(e.Path)
		} else {
			c.idx.Set(e.Path, plumbing.Hash(e.Blob), gitindex.StatOf(e.Info))
		}
	}
	data, err := r.encodeIndex(c)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(data); err != nil {
		return err
	}
	// Not synced, like git's own index: it is a cache of what to commit next,
	// and a crash is repaired from the journal of the write that was running.
	if err := l.f.Close(); err != nil {
		return err
	}
	indexPath := filepath.Join(r.gitDir, "index")
	if err := os.Rename(r.IndexLockPath(), indexPath); err != nil {
		return err
	}
	l.done = true
	if fi, err := os.Stat(indexPath); err == nil {
		c.size, c.mtime, c.ino = fi.Size(), fi.ModTime(), inode(fi)
		r.index = c
	}
	return nil
}

// IndexBlobs returns the blobs git's index file records for paths (stage
// 0), by path; a path it does not hold is absent.
func (r *Repo) IndexBlobs(paths []string) (map[string]Hash, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.loadIndex()
	if err != nil {
		return nil, err
	}
	r.index = c
	out := make(map[string]Hash, len(paths))
	for _, p := range paths {
		if e, ok := c.idx.Entry(p); ok {
			out[p] = Hash(e.Blob())
		}
	}
	return out, nil
}

// ReleaseMemory gives back the memory reading objects took: the pages of
// the packs' indexes it touched (10 MB at 100,000 notes, faulted in again
// from the page cache by the next read) and the delta bases kept. With
// index, it also lets go of git's index file as this process keeps it
// parsed to write it again quickly (and a split index's shared part: 16
// MB at 100,000 files), which the next write parses again, 60-110 ms at
// that size: a server does that only once it has been quiet for long.
func (r *Repo) ReleaseMemory(index bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.mapped {
		p.Release()
	}
	if index {
		r.index, r.shared = nil, nil
	}
}

// loadIndex returns the current index file, parsed, from the cache when the
// file is unchanged since this process last read or wrote it.
func (r *Repo) loadIndex() (*indexCache, error) {
	indexPath := filepath.Join(r.gitDir, "index")
	fi, err := os.Stat(indexPath)
	if errors.Is(err, os.ErrNotExist) {
		return &indexCache{idx: gitindex.Empty()}, nil
	}
	if err != nil {
		return nil, err
	}
	if r.index.matches(fi) {
		return r.index, nil
	}
	data, err := os.ReadFile(indexPath)
	if err != nil {
		return nil, err
	}
	x, link, err := gitindex.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath, err)
	}
	var idx gitindex.Index = x
	if link != nil {
		shared := func(sum plumbing.Hash) (*gitindex.Whole, error) { return r.readSharedIndex(Hash(sum)) }
		if idx, err = gitindex.SplitFrom(x, link, shared); err != nil {
			return nil, fmt.Errorf("%s: %w", indexPath, err)
		}
	}
	return &indexCache{idx: idx, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}, nil
}

// RemoveStaleIndexLock removes git's index lock when it is not older than
// since: the caller knows from its journal that a writer of this program died
// after that moment, before it could release the lock it took.
func (r *Repo) RemoveStaleIndexLock(since time.Time) (bool, error) {
	fi, err := os.Stat(r.IndexLockPath())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if fi.ModTime().Before(since) {
		return false, nil
	}
	return true, os.Remove(r.IndexLockPath())
}

// FileStat is what tells that a file changed without reading it, as git's
// index and the derived index compare it: its size, its modification time
// to the nanosecond and its inode. A walk of a whole board keeps 100,000 of
// them, a quarter of the size of the os.FileInfo each comes from.
type FileStat struct {
	Size, MTime int64
	Ino         uint64
}

// StatOfFile is fi's FileStat.
func StatOfFile(fi os.FileInfo) FileStat {
	return FileStat{Size: fi.Size(), MTime: fi.ModTime().UnixNano(), Ino: inode(fi)}
}

// SameAsIndexed lists which of files git's index records with the blob
// blobs names and with the very stat the file has now (its time to the
// nanosecond, size and inode): files that hold that blob, as `git status`
// would judge them without reading them. A file whose time is not before
// the index file's own is left out, as git does: it may have changed within
// the moment git recorded it ("racily clean").
func (r *Repo) SameAsIndexed(files map[string]FileStat, blobs map[string]Hash) (map[string]bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.loadIndex()
	if err != nil {
		return nil, err
	}
	r.index = c
	out := map[string]bool{}
	for p, st := range files {
		blob, ok := blobs[p]
		mtime := time.Unix(0, st.MTime)
		if !ok || !mtime.Before(c.mtime) {
			continue
		}
		if e, ok := c.idx.Entry(p); ok && Hash(e.Blob()) == blob && e.Matches(gitindex.Stat{MTime: mtime, Ino: uint32(st.Ino), Size: uint32(st.Size)}) {
			out[p] = true
		}
	}
	return out, nil
}

// WroteByGit reports whether git's index records path with the very stat of
// fi (its time to the nanosecond, size and inode) and with blob: git itself
// wrote the file (a checkout, a reset, a stash), as no editor's save keeps
// all three.
func (r *Repo) WroteByGit(path string, fi os.FileInfo, blob Hash) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.loadIndex()
	if err != nil {
		return false
	}
	r.index = c
	e, ok := c.idx.Entry(path)
	return ok && Hash(e.Blob()) == blob && e.Matches(gitindex.StatOf(fi))
}
