package gitver

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git object names are SHA-1; this is addressing, not security.
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Hash is a git object name.
type Hash [20]byte

// ZeroHash names no object: an unborn branch, a deleted path.
var ZeroHash Hash

// String returns the 40-character hexadecimal form.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h names no object.
func (h Hash) IsZero() bool { return h == ZeroHash }

// Short returns the first 7 hexadecimal characters, as git abbreviates.
func (h Hash) Short() string { return h.String()[:7] }

// ParseHash reads a 40-character hexadecimal object name.
func ParseHash(s string) (Hash, error) {
	var h Hash
	s = strings.TrimSpace(s)
	if len(s) != 40 {
		return h, fmt.Errorf("not a git object name: %q", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("not a git object name: %q", s)
	}
	return h, nil
}

// Value stores a hash in a database as its hexadecimal form, and the zero
// hash (no object) as "" (database/sql's driver.Valuer).
func (h Hash) Value() (driver.Value, error) {
	if h.IsZero() {
		return "", nil
	}
	return h.String(), nil
}

// Scan reads what Value stored (database/sql's Scanner).
func (h *Hash) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case string:
		s = v
	case []byte:
		s = string(v)
	case nil:
	default:
		return fmt.Errorf("cannot read a git object name from %T", src)
	}
	if s == "" {
		*h = ZeroHash
		return nil
	}
	var err error
	*h, err = ParseHash(s)
	return err
}

// MarshalText writes the hexadecimal form, "" for the zero hash: JSON and
// other text encodings carry a hash as a string.
func (h Hash) MarshalText() ([]byte, error) {
	if h.IsZero() {
		return []byte{}, nil
	}
	return []byte(h.String()), nil
}

// UnmarshalText reads what MarshalText wrote.
func (h *Hash) UnmarshalText(b []byte) error { return h.Scan(b) }

// BlobHash is the object name git gives to content stored as a blob.
func BlobHash(content []byte) Hash {
	return objectHash("blob", content)
}

func objectHash(kind string, content []byte) Hash {
	h := sha1.New() //nolint:gosec // see the import.
	fmt.Fprintf(h, "%s %d\x00", kind, len(content))
	h.Write(content)
	var out Hash
	copy(out[:], h.Sum(nil))
	return out
}

// Options tune a Repo. The zero value is durable and uses the branch HEAD
// names.
type Options struct {
	// NoSync skips every fsync. An acknowledged commit may then be lost by a
	// power failure (never by a crash of the process). For tests and
	// throwaway boards.
	NoSync bool
	// Branch is the branch the Repo commits to ("main"), whatever HEAD
	// names: a person who has another branch checked out when the Repo is
	// opened, or checks one out later, does not move its writes. Empty
	// means the branch HEAD names when the Repo is opened.
	Branch string
}

// Repo is one git repository with a work tree. Its methods are safe for
// concurrent use; go-git itself is not, so mu guards every use of it.
type Repo struct {
	dir    string // the work tree
	gitDir string // dir/.git
	branch string // the full name of the branch commits go to, e.g. refs/heads/main
	sync   bool

	mu      sync.Mutex          // guards storage: go-git is not goroutine-safe
	storage *filesystem.Storage // reads objects; reopened when packs change under it
	index   *indexCache         // the last git index file read or written, guarded by mu
	shared  *sharedCache        // the last shared index of a split index, guarded by mu
	policy  *splitPolicyCache   // the config's say on splitting the index, guarded by mu
	reflogs reflogTails         // the ends of reflogs read, parsed
	trees   treeCache           // decoded trees, by hash
	commits commitCache         // decoded commits, by hash
	// known names the packs go-git's storage found when it was opened;
	// own holds those read here that appeared since (see packs.go).
	// Guarded by mu.
	known map[string]bool
	own   []*ownPack
	// mapped are the published packs read in place (mapped.go), nil
	// until listed; guarded by mu.
	mapped []*mappedPack
	// unmergeable names packs MergeSmallPacks leaves alone (a delta in
	// them, or git keeps them); guarded by mu.
	unmergeable map[string]bool
	// staged holds the objects of commits built and not yet written
	// (Stage), readable meanwhile; guarded by mu.
	staged      map[Hash]pendingObject
	stagedOrder []Hash
	syncer      func(f *os.File) error
	// noAtomic: the remote cannot update two refs in one push, so pushes
	// carry no turns (turns.go).
	noAtomic atomic.Bool
}

// ErrNotRepository is returned by Open for a directory without a .git
// directory.
var ErrNotRepository = errors.New("not a git repository")

// ErrDetached is returned by Open when HEAD names a commit instead of a
// branch: a write would have no branch to move.
var ErrDetached = errors.New("HEAD is detached: check out a branch (git switch main)")

// Init makes dir a git repository whose HEAD names branch (e.g. "main"),
// unless it already is one. It writes what `git init` writes that matters:
// HEAD, objects/, refs/heads/ and a config file.
func Init(dir, branch string) error {
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err == nil && fi.IsDir() {
		return nil
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags", "info"} {
		if err := os.MkdirAll(filepath.Join(gitDir, filepath.FromSlash(d)), 0o755); err != nil {
			return err
		}
	}
	config := "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
	files := map[string]string{
		"HEAD":        "ref: refs/heads/" + branch + "\n",
		"config":      config,
		"description": "Unnamed repository; edit this file 'description' to name the repository.\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(gitDir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Open opens the repository whose work tree is dir.
func Open(dir string, opts Options) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	gitDir := filepath.Join(abs, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", abs, ErrNotRepository)
	}
	ref := ""
	if opts.Branch == "" {
		branch, err := HeadBranch(abs)
		if err != nil {
			return nil, err
		}
		ref = "refs/heads/" + branch
	}
	r := &Repo{dir: abs, gitDir: gitDir, branch: ref, sync: !opts.NoSync}
	if opts.Branch != "" {
		r.branch = "refs/heads/" + opts.Branch
	}
	r.syncer = func(f *os.File) error { return f.Sync() }
	if !r.sync {
		r.syncer = func(*os.File) error { return nil }
	}
	r.reopen()
	return r, nil
}

// HeadBranch is the branch HEAD names in the repository whose work tree is
// dir ("main"): ErrDetached when HEAD names a commit, ErrNotRepository when
// there is no repository.
func HeadBranch(dir string) (string, error) {
	head, err := os.ReadFile(filepath.Join(dir, ".git", "HEAD"))
	if err != nil {
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepository)
	}
	ref, ok := strings.CutPrefix(string(bytes.TrimSpace(head)), "ref: ")
	if !ok {
		return "", ErrDetached
	}
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return "", fmt.Errorf("HEAD names %s, not a branch: %w", ref, ErrDetached)
	}
	return branch, nil
}

// reopen drops go-git's storage, with its cached list of packs. Called when an
// object is not found: a `git gc` by anyone may have moved loose objects into
// a pack that the old storage does not know about.
func (r *Repo) reopen() {
	if r.storage != nil {
		r.storage.Close()
	}
	// Pack files stay open between reads (KeepDescriptors): opening the pack
	// for every object read dominated walking a long history. The object
	// cache holds decoded objects, so delta chains are resolved once.
	r.storage = filesystem.NewStorageWithOptions(osfs.New(r.gitDir), cache.NewObjectLRU(32*cache.MiByte),
		filesystem.Options{KeepDescriptors: true, MaxOpenDescriptors: 64})
	r.forgetOwnPacks()
	r.closeMapped()
}

// Close releases the open pack files.
func (r *Repo) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.storage == nil {
		return nil
	}
	err := r.storage.Close()
	r.storage = nil
	for _, p := range r.own {
		p.close()
	}
	r.own = nil
	r.closeMapped()
	return err
}

// Dir is the work tree's absolute path.
func (r *Repo) Dir() string { return r.dir }

// GitDir is the repository's .git directory.
func (r *Repo) GitDir() string { return r.gitDir }

// Branch is the full name of the branch the Repo commits to
// (refs/heads/main).
func (r *Repo) Branch() string { return r.branch }

// Durable reports whether writes are fsynced.
func (r *Repo) Durable() bool { return r.sync }

// Sync flushes f to stable storage unless the repository was opened with
// NoSync. Callers outside the package use it so one switch governs all
// durability.
func (r *Repo) Sync(f *os.File) error { return r.syncer(f) }

// SyncDir flushes a directory entry (a rename or a new file in it).
func (r *Repo) SyncDir(dir string) error {
	if !r.sync {
		return nil
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readObject returns an object's type and content. It retries once with fresh
// storage, because another process may have repacked the repository.
func (r *Repo) readObject(h Hash) (plumbing.ObjectType, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, b, err := r.readObjectLocked(h)
	// A repack replaces packs and removes loose objects while we look: see
	// the repository afresh, and again a moment later if a pack was being
	// swapped just then.
	for try := 0; err != nil && try < 3; try++ {
		if try > 0 {
			time.Sleep(time.Duration(try) * 20 * time.Millisecond)
		}
		r.reopen()
		t, b, err = r.readObjectLocked(h)
	}
	return t, b, err
}

func (r *Repo) readObjectLocked(h Hash) (plumbing.ObjectType, []byte, error) {
	if r.storage == nil {
		r.reopen()
	}
	if o, ok := r.staged[h]; ok {
		t, err := plumbing.ParseObjectType(o.kind)
		return t, o.content, err
	}
	if t, b, ok := r.readLoadedOwnPacks(h); ok {
		return t, b, nil
	}
	if t, b, ok := r.readMapped(h); ok {
		return t, b, nil
	}
	if t, b, ok, err := r.readLoose(h); ok && err == nil {
		return t, b, nil
	}
	// A pack may have been published since the packs were listed.
	r.refreshMapped()
	if t, b, ok := r.readMapped(h); ok {
		return t, b, nil
	}
	r.noteKnownPacks()
	obj, err := r.storage.EncodedObject(plumbing.AnyObject, plumbing.Hash(h))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		if t, b, ok := r.readOwnPacks(h); ok {
			return t, b, nil
		}
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	rd, err := obj.Reader()
	if err != nil {
		return 0, nil, err
	}
	defer rd.Close()
	buf := bytes.NewBuffer(make([]byte, 0, obj.Size()))
	if _, err := buf.ReadFrom(rd); err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", h, err)
	}
	return obj.Type(), buf.Bytes(), nil
}

// ReadBlob returns the content of a blob.
func (r *Repo) ReadBlob(h Hash) ([]byte, error) {
	t, b, err := r.readObject(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.BlobObject {
		return nil, fmt.Errorf("object %s is a %s, not a blob", h, t)
	}
	return b, nil
}

// UserIdentity returns who a person is to git: GIT_AUTHOR_NAME and
// GIT_AUTHOR_EMAIL, else user.name and user.email of this repository's config,
// else of the person's; "" when unset.
func (r *Repo) UserIdentity() (name, email string) {
	// As git: the environment first, then the repository's config, then
	// the person's.
	name, email = os.Getenv("GIT_AUTHOR_NAME"), os.Getenv("GIT_AUTHOR_EMAIL")
	if name != "" && email != "" {
		return name, email
	}
	if c := r.config(); c != nil {
		name, email = firstNonEmpty(name, c.User.Name), firstNonEmpty(email, c.User.Email)
	}
	if name == "" || email == "" {
		if p := os.Getenv("GIT_CONFIG_GLOBAL"); p != "" {
			// git's own override of the person's config file.
			if f, err := os.Open(p); err == nil {
				c, err := config.ReadConfig(f)
				f.Close()
				if err == nil {
					name, email = firstNonEmpty(name, c.User.Name), firstNonEmpty(email, c.User.Email)
				}
			}
		} else if g, err := config.LoadConfig(config.GlobalScope); err == nil {
			if name == "" {
				name = g.User.Name
			}
			if email == "" {
				email = g.User.Email
			}
		}
	}
	return name, email
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
