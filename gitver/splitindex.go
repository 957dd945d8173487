package gitver

import (
	"crypto/sha1" //nolint:gosec // git's index checksum is SHA-1.
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver/gitindex"
	"github.com/go-git/go-git/v5/plumbing"
)

// The policy of git's split index (the format is gitver/gitindex's, split.go):
// when to split, when to write a new shared index, where shared indexes live,
// syncing them, and removing expired ones. At 100,000 notes the whole index
// is about 11 MB; rewriting and hashing it on every write was the largest
// cost that grew with the board. Split, a write rewrites a few kilobytes.

// When blackboard-mcp splits the index it writes (git's core.splitIndex
// unset): at this many entries, about 1 MB, the rewrite starts to cost a
// write more than a millisecond.
const splitMinEntries = 10_000

// defaultMaxPercentChange is git's splitIndex.maxPercentChange: when more
// entries than this share of the whole are not in the shared index, a new
// shared index is written.
const defaultMaxPercentChange = 20

// Where splitIndex.maxPercentChange is not set, a new shared index is also
// written once the index file holds more than maxNotShared entries (about
// 150 KB). git's share alone let the file grow to 1.4 MB at 100,000 notes,
// which every write rewrote and hashed (0.7 MB on average, written back
// to the disk a few seconds later): the board writes the index at every
// write, a person's git seldom. A new shared index (11 MB, synced) then
// comes once in 2,000 writes, 5 KB a write.
const maxNotShared = 2_000

// defaultSharedIndexExpire is how long a shared index the current index
// no longer names is kept, untouched, where splitIndex.sharedIndexExpire
// is not set: long enough for a git command that read the index file
// before it moved on to read the shared index it named (git touches one
// each time it reads or writes it), short enough that the shared indexes
// replaced every 2,000 writes do not pile up (git's two weeks keep 11 MB
// for each).
const defaultSharedIndexExpire = time.Minute

// sharedIndexPath is where git keeps the shared index with checksum sum.
func (r *Repo) sharedIndexPath(sum Hash) string {
	return filepath.Join(r.gitDir, "sharedindex."+hex.EncodeToString(sum[:]))
}

// readSharedIndex parses the shared index named sum, checking that its
// content is what its name says.
func (r *Repo) readSharedIndex(sum Hash) (*gitindex.Whole, error) {
	if r.shared != nil && r.shared.sum == sum {
		return r.shared.x, nil
	}
	path := r.sharedIndexPath(sum)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the git index links a shared index that cannot be read: %w", err)
	}
	x, err := gitindex.ParseShared(data, plumbing.Hash(sum))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.shared = &sharedCache{sum: sum, x: x}
	return x, nil
}

// sharedCache is the last shared index read or written.
type sharedCache struct {
	sum Hash
	x   *gitindex.Whole
}

// writeSharedIndex writes x as a new shared index and returns the split
// index that starts from it. x must not be changed afterwards.
func (r *Repo) writeSharedIndex(x *gitindex.Whole) (*gitindex.Split, error) {
	data := x.Bytes()
	var sum Hash
	copy(sum[:], data[len(data)-sha1.Size:])
	path := r.sharedIndexPath(sum)
	if _, err := os.Stat(path); err != nil {
		f, err := os.CreateTemp(r.gitDir, "sharedindex_")
		if err != nil {
			return nil, err
		}
		_, err = f.Write(data)
		if err == nil && r.sync {
			// Unlike the index file, a shared index that lost its content
			// in a crash would break every git command: it is synced.
			err = r.syncer(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(f.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
			return nil, err
		}
		if r.sync {
			if err := r.SyncDir(r.gitDir); err != nil {
				return nil, err
			}
		}
		r.removeExpiredSharedIndexes(sum)
	}
	r.shared = &sharedCache{sum: sum, x: x}
	return gitindex.NewSplit(x, plumbing.Hash(sum)), nil
}

// removeExpiredSharedIndexes removes shared indexes other than current
// that nothing has read or written for splitIndex.sharedIndexExpire (a
// minute unless configured: defaultSharedIndexExpire), as git does when it
// writes a new one: git touches a shared index each time it reads it.
func (r *Repo) removeExpiredSharedIndexes(current Hash) {
	expire := defaultSharedIndexExpire
	if c := r.config(); c != nil {
		switch v := strings.TrimSpace(c.Raw.Section("splitIndex").Option("sharedIndexExpire")); v {
		case "":
		case "never":
			return
		case "now":
			expire = 0
		default:
			if d, ok := approxAgo(v); ok {
				expire = d
			}
		}
	}
	matches, _ := filepath.Glob(filepath.Join(r.gitDir, "sharedindex.*"))
	keep := filepath.Base(r.sharedIndexPath(current))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && filepath.Base(m) != keep && time.Since(fi.ModTime()) > expire {
			os.Remove(m)
		}
	}
}

// approxAgo reads the few forms of git's approxidate a person writes for an
// expiry: "2.weeks.ago", "3 days ago", "1.hour.ago".
func approxAgo(v string) (time.Duration, bool) {
	f := strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == ' ' })
	if len(f) != 3 || f[2] != "ago" {
		return 0, false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return 0, false
	}
	units := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour,
		"day": 24 * time.Hour, "week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour}
	u, ok := units[strings.TrimSuffix(f[1], "s")]
	return time.Duration(n) * u, ok
}

// splitPolicy is what git's config asks of the index's form: core.splitIndex
// (-1 unset, 0 false, 1 true) and splitIndex.maxPercentChange, with
// maxEntries, the most entries the index file holds itself (maxNotShared
// where maxPercentChange is not set, else 0 for no bound). It is read again
// only when the repository's config file changed (the person's own config
// is not read: the default then is to keep the form git left).
func (r *Repo) splitPolicy() (split, maxPercent, maxEntries int) {
	fi, err := os.Stat(filepath.Join(r.gitDir, "config"))
	if err != nil {
		return -1, defaultMaxPercentChange, maxNotShared
	}
	if p := r.policy; p != nil && p.size == fi.Size() && p.mtime.Equal(fi.ModTime()) && p.ino == inode(fi) {
		return p.split, p.maxPercent, p.maxEntries
	}
	split, maxPercent, maxEntries = -1, defaultMaxPercentChange, maxNotShared
	if c := r.config(); c != nil {
		if v := strings.ToLower(strings.TrimSpace(c.Raw.Section("core").Option("splitIndex"))); v != "" {
			split = 0
			if v == "true" || v == "yes" || v == "on" || v == "1" {
				split = 1
			}
		}
		if v, err := strconv.Atoi(strings.TrimSpace(c.Raw.Section("splitIndex").Option("maxPercentChange"))); err == nil &&
			v >= 0 && v <= 100 {
			maxPercent, maxEntries = v, 0
		}
	}
	r.policy = &splitPolicyCache{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi),
		split: split, maxPercent: maxPercent, maxEntries: maxEntries}
	return split, maxPercent, maxEntries
}

// splitPolicyCache is splitPolicy's answer for one state of the config file.
type splitPolicyCache struct {
	size                          int64
	mtime                         time.Time
	ino                           uint64
	split, maxPercent, maxEntries int
}

// encodeIndex returns the bytes to write for c's index, choosing its form
// as git would: kept as it is unless core.splitIndex says otherwise, split
// when the board is large enough for the rewrite to matter, and given a new
// shared index when too much of it lives in the index file.
func (r *Repo) encodeIndex(c *indexCache) ([]byte, error) {
	split, maxPercent, maxEntries := r.splitPolicy()
	switch idx := c.idx.(type) {
	case *gitindex.Whole:
		if split == 0 || (split < 0 && idx.Len() < splitMinEntries) {
			return idx.Bytes(), nil
		}
		s, err := r.writeSharedIndex(idx)
		if err != nil {
			return nil, err
		}
		c.idx = s
		return s.Bytes(), nil
	case *gitindex.Split:
		if split == 0 {
			x := idx.Merged()
			c.idx = x
			return x.Bytes(), nil
		}
		if maxPercent == 0 || idx.Len()*maxPercent < idx.NotShared()*100 && maxPercent < 100 ||
			maxEntries > 0 && idx.NotShared() > maxEntries {
			s, err := r.writeSharedIndex(idx.Merged())
			if err != nil {
				return nil, err
			}
			c.idx = s
			return s.Bytes(), nil
		}
		// git freshens the shared index whenever it writes the index file:
		// it is in use. One removed meanwhile is written again.
		now := time.Now()
		if err := os.Chtimes(r.sharedIndexPath(Hash(idx.SharedSum())), now, now); err != nil {
			s, err := r.writeSharedIndex(idx.Merged())
			if err != nil {
				return nil, err
			}
			c.idx = s
			return s.Bytes(), nil
		}
		return idx.Bytes(), nil
	}
	return nil, fmt.Errorf("%w: unknown form", gitindex.ErrFormat)
}
