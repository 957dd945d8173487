package gitver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrBranchMoved is returned by UpdateBranch when the branch no longer points
// where the caller last saw it: another process or a person committed first.
var ErrBranchMoved = errors.New("the branch moved")

// ErrBranchLocked is returned by UpdateBranch when another process holds the
// branch's lock file and did not let go within the wait.
var ErrBranchLocked = errors.New("the branch is locked by another git process")

// Head returns the commit the branch points to, or the zero hash while the
// branch is unborn. It reads the loose ref and then packed-refs, as git does;
// a loose ref is replaced by rename, so it is never seen half-written.
func (r *Repo) Head() (Hash, error) {
	return r.readRef(r.branch)
}

func (r *Repo) refPath(name string) string {
	return filepath.Join(r.gitDir, filepath.FromSlash(name))
}

func (r *Repo) readRef(name string) (Hash, error) {
	b, err := os.ReadFile(r.refPath(name))
	if err == nil {
		s := strings.TrimSpace(string(b))
		if strings.HasPrefix(s, "ref: ") {
			return ZeroHash, fmt.Errorf("%s is a symbolic ref; blackboard-mcp needs a plain branch", name)
		}
		return ParseHash(s)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return ZeroHash, err
	}
	return r.readPackedRef(name)
}

func (r *Repo) readPackedRef(name string) (Hash, error) {
	f, err := os.Open(filepath.Join(r.gitDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return ZeroHash, nil
	}
	if err != nil {
		return ZeroHash, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 42 || line[0] == '#' || line[0] == '^' {
			continue
		}
		if line[41:] == name {
			return ParseHash(line[:40])
		}
	}
	return ZeroHash, sc.Err()
}

// LockPath is the lock file git and this package create to update the branch.
func (r *Repo) LockPath() string { return r.refPath(r.branch) + ".lock" }

// lockWait is how long UpdateBranch waits for a lock held by someone else: a
// git commit holds it for milliseconds.
const lockWait = 3 * time.Second

// UpdateBranch moves the branch from old to new with git's own protocol:
// create `<ref>.lock` exclusively, verify the branch still points to old,
// write and sync the lock, rename it over the ref, sync the directory. This is
// the commit point of every write. It fails with ErrBranchMoved, without
// changing anything, when the branch is not at old.
func (r *Repo) UpdateBranch(old, new Hash, who Signature, reason string) error {
	return r.UpdateRef(r.branch, old, new, who, reason)
}

// UpdateRef moves the ref name (refs/...) from old (zero: the ref does not
// exist yet) to new, as UpdateBranch moves the branch.
func (r *Repo) UpdateRef(name string, old, new Hash, who Signature, reason string) error {
	lock := r.refPath(name) + ".lock"
	deadline := time.Now().Add(lockWait)
	var f *os.File
	for {
		var err error
		f, err = os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			break
		}
		if errors.Is(err, os.ErrNotExist) {
			// refs/heads/ of a fresh repository, or a branch in a
			// subdirectory (refs/heads/team/main): make the directory.
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				return err
			}
			continue
		}
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s exists; if no git command is running, remove it", ErrBranchLocked, lock)
		}
		time.Sleep(2 * time.Millisecond)
	}
	committed := false
	defer func() {
		if !committed {
			f.Close()
			os.Remove(lock)
		}
	}()
	cur, err := r.readRef(name)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("%w: %s expected at %s, found at %s", ErrBranchMoved, name, old, cur)
	}
	if _, err := f.WriteString(new.String() + "\n"); err != nil {
		return err
	}
	if err := r.syncer(f); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The reflog line goes first, while the lock is held, as git writes
	// its own: the reflog then lists the moves of every writer, git's and
	// this program's, in the order they happened, which is what tells a
	// reset that dropped agents' commits (see fsstore's rescue.go).
	r.appendReflog(name, old, new, who, reason)
	if err := os.Rename(lock, r.refPath(name)); err != nil {
		return err
	}
	committed = true
	if err := r.SyncDir(filepath.Dir(lock)); err != nil {
		return fmt.Errorf("%w: %w", ErrMovedUnsynced, err)
	}
	return nil
}

// ErrMovedUnsynced means a ref did move, but its directory could not be
// synced: the move stands (every reader sees it), and a power failure may
// still undo it. A caller reports the move as made, with the failure.
var ErrMovedUnsynced = errors.New("the ref moved, but syncing it failed")

// ReflogEntry is one move of a ref as its reflog records it.
type ReflogEntry struct {
	Old, New Hash
	Who      Signature // who moved it, and when
	Message  string    // "reset: moving to HEAD", "commit: ...", "blackboard: ..."
}

// reflogTail is how much of the end of the branch's reflog is read: a
// reflog grows by a line a move, so this is hundreds of the newest moves.
const reflogTail = 64 << 10

// LastMoveBy returns the newest move of the branch whose reflog message
// starts with own (the caller's own moves); found is false when none of the
// moves in the reflog's last 64 KB is. It reads the last 4 KB first: the
// newest line is usually the caller's own.
func (r *Repo) LastMoveBy(own string) (last ReflogEntry, found bool, err error) {
	for _, tail := range []int64{4 << 10, reflogTail} {
		moves, whole, err := r.branchMoves(tail)
		if err != nil {
			return last, false, err
		}
		for i := len(moves) - 1; i >= 0; i-- {
			if strings.HasPrefix(moves[i].Message, own) {
				return moves[i], true, nil
			}
		}
		if whole {
			break
		}
	}
	return last, false, nil
}

// RecentBranchMoves returns the moves in the last 64 KB of the branch's
// reflog, oldest first.
func (r *Repo) RecentBranchMoves() ([]ReflogEntry, error) {
	moves, _, err := r.branchMoves(reflogTail)
	return moves, err
}

// RecentHeadMoves returns the moves in the last 64 KB of HEAD's reflog,
// oldest first: what was checked out, and the branch's moves while it was.
func (r *Repo) RecentHeadMoves() ([]ReflogEntry, error) {
	moves, _, err := r.reflogMoves("HEAD", reflogTail)
	return moves, err
}

// branchMoves reads the moves in the last tail bytes of the branch's
// reflog, oldest first; whole says the whole reflog was read.
func (r *Repo) branchMoves(tail int64) (moves []ReflogEntry, whole bool, err error) {
	return r.reflogMoves(r.branch, tail)
}

// reflogMoves reads the moves in the last tail bytes of ref's reflog (at
// most reflogTail): the lines that start past the first line break there.
func (r *Repo) reflogMoves(ref string, tail int64) (moves []ReflogEntry, whole bool, err error) {
	f, err := os.Open(filepath.Join(r.gitDir, "logs", filepath.FromSlash(ref)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	r.reflogs.mu.Lock()
	defer r.reflogs.mu.Unlock()
	if r.reflogs.byRef == nil {
		r.reflogs.byRef = map[string]*reflogEnd{}
	}
	t := r.reflogs.byRef[ref]
	if t == nil || !t.readOn(f, fi) {
		t = &reflogEnd{}
		if err := t.readFrom(f, fi, max(0, fi.Size()-reflogTail)); err != nil {
			return nil, false, err
		}
		r.reflogs.byRef[ref] = t
	}
	from := fi.Size() - min(tail, reflogTail)
	i, _ := slices.BinarySearch(t.starts, from+1) // the lines that start past from
	if from < 0 {
		i = 0
	}
	return slices.Clone(t.moves[i:]), from <= 0, nil
}

// reflogTails keeps the end of each reflog read, parsed: the upkeep before
// every write reads the branch's, the watcher's looks read it too, and a
// reflog only grows at its end. Read whole each time, the last 64 KB were
// 300 KB of allocations a write at 100,000 notes.
type reflogTails struct {
	mu    sync.Mutex
	byRef map[string]*reflogEnd
}

// reflogEnd is the end of one reflog as read: its moves, where each one's
// line starts, and where the lines read end (after the last whole line).
type reflogEnd struct {
	ino    uint64
	moves  []ReflogEntry
	starts []int64
	end    int64
	last   []byte // the last line read: the file must still hold it there
}

// readOn reads the lines the reflog f gained since t was read, and reports
// false when it cannot (the file is another, was cut, or was rewritten):
// then it must be read anew.
func (t *reflogEnd) readOn(f *os.File, fi os.FileInfo) bool {
	if t.ino != inode(fi) || fi.Size() < t.end {
		return false
	}
	if len(t.last) > 0 {
		at := t.end - int64(len(t.last))
		held := make([]byte, len(t.last))
		if _, err := f.ReadAt(held, at); err != nil || !bytes.Equal(held, t.last) {
			return false
		}
	}
	return t.readFrom(f, fi, t.end) == nil
}

// readFrom parses the whole lines of f from offset from on, dropping the
// first when from is within the file (it may be cut), and the moves more
// than reflogTail from the end.
func (t *reflogEnd) readFrom(f *os.File, fi os.FileInfo, from int64) error {
	t.ino = inode(fi)
	if fi.Size() == from {
		return nil
	}
	buf := make([]byte, fi.Size()-from)
	if _, err := f.ReadAt(buf, from); err != nil {
		return err
	}
	whole := bytes.LastIndexByte(buf, '\n') + 1 // a line being appended waits
	buf = buf[:whole]
	at := from
	if from > 0 && from != t.end {
		cut := bytes.IndexByte(buf, '\n') + 1
		buf, at = buf[cut:], from+int64(cut)
	}
	for len(buf) > 0 {
		n := bytes.IndexByte(buf, '\n') + 1
		if e, ok := parseReflogLine(string(buf[:n-1])); ok {
			t.moves = append(t.moves, e)
			t.starts = append(t.starts, at)
		}
		t.last = append(t.last[:0], buf[:n]...)
		buf, at = buf[n:], at+int64(n)
	}
	t.end = from + int64(whole)
	// What no caller reads any longer goes.
	i, _ := slices.BinarySearch(t.starts, t.end-reflogTail+1)
	t.moves, t.starts = slices.Delete(t.moves, 0, i), slices.Delete(t.starts, 0, i)
	return nil
}

func parseReflogLine(line string) (ReflogEntry, bool) {
	head, msg, _ := strings.Cut(line, "\t")
	if len(head) < 82 {
		return ReflogEntry{}, false
	}
	old, err1 := ParseHash(head[:40])
	new, err2 := ParseHash(head[41:81])
	if err1 != nil || err2 != nil {
		return ReflogEntry{}, false
	}
	return ReflogEntry{Old: old, New: new, Who: parseIdent(head[82:]), Message: msg}, true
}

// parseIdent reads "Name <email> 1700000000 +0100" as git writes it in a
// reflog line; what it cannot read stays empty.
func parseIdent(s string) Signature {
	var who Signature
	name, rest, ok := strings.Cut(s, " <")
	if !ok {
		return who
	}
	email, when, ok := strings.Cut(rest, "> ")
	if !ok {
		return who
	}
	who.Name, who.Email = name, email
	secs, zone, _ := strings.Cut(when, " ")
	unix, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return who
	}
	who.When = time.Unix(unix, 0)
	if z, err := time.Parse("-0700", zone); err == nil {
		who.When = who.When.In(z.Location())
	}
	return who
}

// Refs lists the refs under prefix (e.g. "refs/blackboard/"), loose and
// packed, with the commits they name.
func (r *Repo) Refs(prefix string) (map[string]Hash, error) {
	out := map[string]Hash{}
	if f, err := os.Open(filepath.Join(r.gitDir, "packed-refs")); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if len(line) > 41 && line[0] != '#' && line[0] != '^' && strings.HasPrefix(line[41:], prefix) {
				if h, err := ParseHash(line[:40]); err == nil {
					out[line[41:]] = h
				}
			}
		}
		f.Close()
	}
	root := r.refPath(prefix)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(r.gitDir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		h, err := r.readRef(name)
		if err == nil && !h.IsZero() {
			out[name] = h
		}
		return nil
	})
	return out, err
}

// appendReflog records the update in the ref's reflog, and in HEAD's when
// HEAD names the ref, as git does, so `git reflog` shows agents' commits too
// and HEAD's shows only what was checked out. The reflog is a convenience
// for people, not part of the commit: a failure here is ignored.
func (r *Repo) appendReflog(ref string, old, new Hash, who Signature, reason string) {
	reason = strings.ReplaceAll(reason, "\n", " ")
	_, offset := who.When.Zone()
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	line := fmt.Sprintf("%s %s %s <%s> %d %c%02d%02d\t%s\n", old, new, identity(who.Name), identity(who.Email),
		who.When.Unix(), sign, offset/3600, offset%3600/60, reason)
	names := []string{ref}
	if head, err := os.ReadFile(filepath.Join(r.gitDir, "HEAD")); err == nil && strings.TrimSpace(string(head)) == "ref: "+ref {
		names = append(names, "HEAD")
	}
	for _, name := range names {
		p := filepath.Join(r.gitDir, "logs", filepath.FromSlash(name))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if errors.Is(err, os.ErrNotExist) {
			if os.MkdirAll(filepath.Dir(p), 0o755) != nil {
				return
			}
			f, err = os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		}
		if err != nil {
			return
		}
		_, _ = f.WriteString(line)
		f.Close()
	}
}

// RemoveStaleLock removes the branch lock file if its content is what a
// writer of this program that died holding it had written there: the commit it
// intended, or nothing yet. The caller knows from its own journal that such a
// writer existed. An empty lock is removed only once it is a second old,
// since a git command that has just created its lock has not written it yet;
// a lock with other content belongs to somebody else and stays.
func (r *Repo) RemoveStaleLock(intended Hash) (bool, error) {
	lock := r.LockPath()
	for {
		fi, err := os.Stat(lock)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		b, err := os.ReadFile(lock)
		if err != nil {
			return false, nil // removed meanwhile
		}
		b = bytes.TrimSpace(b)
		switch {
		case string(b) == intended.String():
		case len(b) == 0 && time.Since(fi.ModTime()) > time.Second:
		case len(b) == 0:
			time.Sleep(50 * time.Millisecond)
			continue
		default:
			return false, nil
		}
		return true, os.Remove(lock)
	}
}
