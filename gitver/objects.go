package gitver

import (
	"bytes"
	"compress/zlib"
	"container/list"
	"crypto/sha1" //nolint:gosec // git names objects by SHA-1.
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"golang.org/x/sync/errgroup"
)

// objectWriter collects the new objects of one commit in memory, then writes
// them as loose objects the way git does (zlib-compressed
// "<type> <size>\0<content>" under objects/xx/) in one batch: every
// temporary file written, all of them synced at once, renamed into place, and
// their directories synced at once. Syncing in parallel lets the file system
// commit its journal once for the batch instead of once per object.
type objectWriter struct {
	r       *Repo
	pending []pendingObject
	seen    map[Hash]bool
}

type pendingObject struct {
	hash    Hash
	kind    string
	content []byte
}

func (r *Repo) newObjectWriter() *objectWriter {
	return &objectWriter{r: r, seen: map[Hash]bool{}}
}

// write adds an object to the batch and returns its name.
func (w *objectWriter) write(kind string, content []byte) (Hash, error) {
	h := objectHash(kind, content)
	if !w.seen[h] {
		w.seen[h] = true
		w.pending = append(w.pending, pendingObject{hash: h, kind: kind, content: content})
	}
	return h, nil
}

// flush writes the batch durably.
func (w *objectWriter) flush() error { return w.flushSynced(w.r.sync) }

// flushSynced writes the batch, synced or not.
func (w *objectWriter) flushSynced(sync bool) error {
	type staged struct{ tmp, path string }
	var files []staged
	dirs := map[string]bool{}
	newFanout := false
	defer func() {
		for _, f := range files {
			if f.tmp != "" { // not renamed: a failure on the way
				os.Remove(f.tmp)
			}
		}
	}()
	for _, o := range w.pending {
		path := w.r.loosePath(o.hash)
		dir := filepath.Dir(path)
		if intactLoose(path, o.hash) {
			continue // objects are immutable: an existing file is this object
		}
		tmp, err := writeLooseObject(dir, o.kind, o.content)
		for try := 0; errors.Is(err, os.ErrNotExist) && try < 10; try++ {
			// A new fan-out directory, or one a `git gc` (its prune-packed)
			// removed once it emptied, maybe again since: make it, as git does.
			if err = os.MkdirAll(dir, 0o755); err == nil {
				newFanout = true
				tmp, err = writeLooseObject(dir, o.kind, o.content)
			}
		}
		if err != nil {
			return err
		}
		files = append(files, staged{tmp, path})
		dirs[dir] = true
	}
	if sync {
		tmps := make([]string, len(files))
		for i, f := range files {
			tmps[i] = f.tmp
		}
		if err := syncAll(tmps); err != nil {
			return err
		}
	}
	for i, f := range files {
		if err := os.Rename(f.tmp, f.path); err != nil {
			return err
		}
		files[i].tmp = ""
	}
	if !sync {
		return nil
	}
	list := make([]string, 0, len(dirs))
	for d := range dirs {
		list = append(list, d)
	}
	if err := syncAll(list); err != nil {
		return err
	}
	if newFanout {
		// A new objects/xx is named durably after its entries are.
		return syncDir(filepath.Join(w.r.gitDir, "objects"))
	}
	return nil
}

// intactLoose reports whether the loose object file at path holds the
// object h. A file may be there and not hold it: written unsynced (see
// WriteUnsynced) before a power failure, it can come back empty or cut,
// and no commit may name it then.
func intactLoose(path string, h Hash) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return false
	}
	content, err := io.ReadAll(zr)
	if err != nil {
		return false
	}
	sum := sha1.Sum(content) //nolint:gosec // git names objects by SHA-1.
	return Hash(sum) == h
}

// writeLooseObject writes a compressed object to a temporary file in dir.
func writeLooseObject(dir, kind string, content []byte) (string, error) {
	var z bytes.Buffer
	z.Grow(len(content)/2 + 64)
	if err := deflate(&z, kind, fmt.Appendf(nil, "%s %d\x00", kind, len(content)), content); err != nil {
		return "", err
	}
	// Created read-only, as git leaves objects: opening it for writing
	// once, at its creation, is allowed.
	var tmp *os.File
	var err error
	for {
		tmp, err = os.OpenFile(filepath.Join(dir, "tmp_obj_"+strconv.FormatUint(rand.Uint64(), 36)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if !errors.Is(err, os.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(z.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// deflate writes parts, the content of an object of kind, to w as one zlib
// stream. A tree is stored, not compressed: most of it is object names,
// which do not compress, and finding the Huffman codes for the rest cost
// more than all else in writing a group's pack.
func deflate(w io.Writer, kind string, parts ...[]byte) error {
	pool := &zlibWriters
	if kind == "tree" {
		pool = &zlibStorers
	}
	zw := pool.Get().(*zlib.Writer)
	defer pool.Put(zw)
	zw.Reset(w)
	var err error
	for _, p := range parts {
		if _, err = zw.Write(p); err != nil {
			break
		}
	}
	if err == nil {
		err = zw.Close()
	}
	zw.Reset(io.Discard)
	return err
}

// zlibWriters keeps compressors between objects: making one costs more
// than compressing a note. zlibStorers keep zlib streams that store.
var (
	zlibWriters = sync.Pool{New: func() any {
		zw, _ := zlib.NewWriterLevel(nil, zlib.BestSpeed)
		return zw
	}}
	zlibStorers = sync.Pool{New: func() any {
		zw, _ := zlib.NewWriterLevel(nil, zlib.NoCompression)
		return zw
	}}
)

// syncAll fsyncs files or directories concurrently: the file system gathers
// concurrent syncs into one journal commit.
func syncAll(paths []string) error {
	var g errgroup.Group
	for _, p := range paths {
		g.Go(func() error { return syncPath(p) })
	}
	return g.Wait()
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// WriteBlob stores content as a blob and returns its name. Blobs of a commit
// are written before the commit itself; they are durable once that commit is.
func (r *Repo) WriteBlob(content []byte) (Hash, error) {
	w := r.newObjectWriter()
	h, err := w.write("blob", content)
	if err != nil {
		return h, err
	}
	return h, w.flush()
}

// Signature names who made a change and when.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

// CommitRequest describes one commit on top of Parent.
type CommitRequest struct {
	// Parent is the commit the change applies to; zero for a root commit.
	Parent Hash
	// MergeParents are further parents, after Parent: the commit is then a
	// merge, its tree still Parent's with Changes applied.
	MergeParents []Hash
	// Changes maps a slash-separated path to the blob it now holds; a zero
	// hash deletes the path. Directories that end up empty disappear, as in git.
	Changes map[string]Hash
	// Blobs are contents to store as blobs with the commit (their names,
	// from BlobHash, appear in Changes): one batch, made durable together.
	Blobs [][]byte
	// Author of the change; also the committer.
	Author  Signature
	Message string
}

// Commit writes the blobs, the trees on the changed paths and the commit
// object, all durable, and returns the commit's name. It does not move any
// branch: that is UpdateBranch, the commit point.
func (r *Repo) Commit(req CommitRequest) (Hash, error) {
	p, err := r.BuildCommit(req)
	if err != nil {
		return ZeroHash, err
	}
	return p.Hash, p.Write()
}

// PendingCommit is a commit built in memory: its name is known before any
// of its objects is written, so a caller can journal it while they are.
type PendingCommit struct {
	Hash Hash
	w    *objectWriter
}

// Write stores the commit's objects durably.
func (p *PendingCommit) Write() error { return p.w.flush() }

// WriteUnsynced stores the commit's objects without syncing them: they are
// made durable later with others, by SyncCommits, before any ref names them.
func (p *PendingCommit) WriteUnsynced() error { return p.w.flushSynced(false) }

// IsLoose reports whether the object h is stored as a loose file.
func (r *Repo) IsLoose(h Hash) bool { return fileExists(r.loosePath(h)) }

// loosePath is where the object h is stored as a loose file.
func (r *Repo) loosePath(h Hash) string {
	name := h.String()
	return filepath.Join(r.gitDir, "objects", name[:2], name[2:])
}

// SyncCommits makes durable the loose objects that commits (each with the
// paths it changed) added: the commit, its tree, and the trees and blobs on
// each changed path, in one round of syncs, then their directories. Packed
// objects are durable already; nothing is done without durability.
func (r *Repo) SyncCommits(commits map[*CommitInfo][]string) error {
	if !r.sync {
		return nil
	}
	var files []string
	dirs := map[string]bool{filepath.Join(r.gitDir, "objects"): true}
	add := func(h Hash) {
		p := r.loosePath(h)
		if _, err := os.Stat(p); err == nil {
			files = append(files, p)
			dirs[filepath.Dir(p)] = true
		}
	}
	for c, paths := range commits {
		add(c.Hash)
		add(c.Tree)
		for _, p := range paths {
			tree := c.Tree
			for _, name := range strings.Split(p, "/") {
				t, err := r.readTree(tree)
				if err != nil {
					return err
				}
				i := slices.IndexFunc(t.Entries, func(e object.TreeEntry) bool { return e.Name == name })
				if i < 0 {
					break // deleted
				}
				tree = Hash(t.Entries[i].Hash)
				add(tree)
			}
		}
	}
	if len(files) == 0 {
		return nil // all packed, as a group's objects are
	}
	if err := syncAll(files); err != nil {
		return err
	}
	return syncAll(slices.Collect(maps.Keys(dirs)))
}

// BuildCommit computes the blobs, trees and commit of req without writing
// them. Only the trees on a changed path are read and re-encoded.
func (r *Repo) BuildCommit(req CommitRequest) (*PendingCommit, error) {
	var base Hash
	if !req.Parent.IsZero() {
		c, err := r.ReadCommit(req.Parent)
		if err != nil {
			return nil, err
		}
		base = c.Tree
	}
	w := r.newObjectWriter()
	for _, b := range req.Blobs {
		if _, err := w.write("blob", b); err != nil {
			return nil, err
		}
	}
	tree, _, err := r.editTree(w, base, req.Changes)
	if err != nil {
		return nil, err
	}
	if tree.IsZero() {
		tree, err = w.write("tree", nil) // the empty tree
		if err != nil {
			return nil, err
		}
	}
	c := CommitObject{Tree: tree, Author: req.Author, Committer: req.Author, Message: req.Message}
	if !req.Parent.IsZero() {
		c.Parents = append([]Hash{req.Parent}, req.MergeParents...)
	}
	h, err := w.writeCommit(c)
	if err != nil {
		return nil, err
	}
	return &PendingCommit{Hash: h, w: w}, nil
}

// CommitObject is a commit made of a tree that already exists: a commit
// placed on other parents with its tree, authorship and message unchanged,
// or one that puts an older tree back.
type CommitObject struct {
	Tree              Hash
	Parents           []Hash
	Author, Committer Signature
	Message           string
}

// WriteCommit stores c durably and returns its name.
func (r *Repo) WriteCommit(c CommitObject) (Hash, error) {
	w := r.newObjectWriter()
	h, err := w.writeCommit(c)
	if err != nil {
		return ZeroHash, err
	}
	return h, w.flush()
}

func (w *objectWriter) writeCommit(c CommitObject) (Hash, error) {
	sig := func(s Signature) object.Signature {
		return object.Signature{Name: identity(s.Name), Email: identity(s.Email), When: s.When}
	}
	obj := &object.Commit{
		Author:    sig(c.Author),
		Committer: sig(c.Committer),
		Message:   c.Message,
		TreeHash:  plumbing.Hash(c.Tree),
	}
	for _, p := range c.Parents {
		obj.ParentHashes = append(obj.ParentHashes, plumbing.Hash(p))
	}
	mem := &plumbing.MemoryObject{}
	if err := obj.Encode(mem); err != nil {
		return ZeroHash, err
	}
	content, err := memContent(mem)
	if err != nil {
		return ZeroHash, err
	}
	return w.write("commit", content)
}

func memContent(m *plumbing.MemoryObject) ([]byte, error) {
	rd, err := m.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(rd)
	return b.Bytes(), err
}

// editTree applies changes (paths relative to this tree) to the tree base and
// writes the new trees. Only trees on a changed path are read and re-encoded,
// so the cost follows the depth of the path, not the size of the board; in
// a tree, the entries a change leaves alone are copied in order, and only
// the changed ones are sorted in. The trees written are kept in the cache:
// the next write's base is most often this one's result. It returns the
// zero hash for a tree left empty.
func (r *Repo) editTree(w *objectWriter, base Hash, changes map[string]Hash) (Hash, bool, error) {
	sub := map[string]map[string]Hash{}
	files := map[string]Hash{}
	for p, h := range changes {
		if dir, rest, ok := strings.Cut(p, "/"); ok {
			if sub[dir] == nil {
				sub[dir] = map[string]Hash{}
			}
			sub[dir][rest] = h
		} else {
			files[p] = h
		}
	}
	touches := func(name string) bool {
		_, isFile := files[name]
		_, isDir := sub[name]
		return isFile || isDir
	}
	// entries are the base's entries of the names the changes touch, as
	// the changes leave them.
	var old []object.TreeEntry
	entries := map[string]object.TreeEntry{}
	if !base.IsZero() {
		t, err := r.readTree(base)
		if err != nil {
			return ZeroHash, false, err
		}
		old = t.Entries
		for _, e := range old {
			if touches(e.Name) {
				entries[e.Name] = e
			}
		}
	}
	changed := false
	// Deletions of files first, then directories, then new files: a
	// request may replace a file by a directory of the same name, or the
	// other way round.
	for p, h := range files {
		if old, had := entries[p]; had && h.IsZero() && old.Mode != filemode.Dir {
			delete(entries, p)
			changed = true
		}
	}
	for dir, ch := range sub {
		var subBase Hash
		if e, ok := entries[dir]; ok {
			if e.Mode != filemode.Dir {
				return ZeroHash, false, fmt.Errorf("cannot write under %s: a file has that name", dir)
			}
			subBase = Hash(e.Hash)
		}
		h, subChanged, err := r.editTree(w, subBase, ch)
		if err != nil {
			return ZeroHash, false, err
		}
		if !subChanged {
			continue
		}
		changed = true
		if h.IsZero() {
			delete(entries, dir)
		} else {
			entries[dir] = object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: plumbing.Hash(h)}
		}
	}
	for p, h := range files {
		if h.IsZero() {
			continue
		}
		old, had := entries[p]
		if had && old.Mode == filemode.Dir {
			return ZeroHash, false, fmt.Errorf("cannot write file %s: a directory has that name", p)
		}
		if !had || old.Hash != plumbing.Hash(h) || old.Mode != filemode.Regular {
			entries[p] = object.TreeEntry{Name: p, Mode: filemode.Regular, Hash: plumbing.Hash(h)}
			changed = true
		}
	}
	if !changed {
		return base, false, nil
	}
	// The touched names, sorted, merged with the others in their order (a
	// name that turned from file to directory may move).
	touched := make([]object.TreeEntry, 0, len(entries))
	for _, e := range entries {
		touched = append(touched, e)
	}
	slices.SortFunc(touched, entryCompare)
	t := &object.Tree{Entries: make([]object.TreeEntry, 0, len(old)+len(touched))}
	k := 0
	for _, e := range old {
		if touches(e.Name) {
			continue
		}
		for k < len(touched) && entryCompare(touched[k], e) < 0 {
			t.Entries = append(t.Entries, touched[k])
			k++
		}
		t.Entries = append(t.Entries, e)
	}
	t.Entries = append(t.Entries, touched[k:]...)
	if len(t.Entries) == 0 {
		return ZeroHash, true, nil
	}
	content, err := encodeTree(t.Entries)
	if err != nil {
		return ZeroHash, false, err
	}
	h, err := w.write("tree", content)
	if err == nil {
		r.trees.put(h, t)
	}
	return h, true, err
}

// encodeTree is a tree's content as git stores it, of entries in git's
// order: each entry's mode in octal, a space, its name, a NUL, its hash.
// (go-git's Tree.Encode formats each entry with fmt, and copies the whole
// again: a third of a commit's time in a topic of 5,000 notes.)
func encodeTree(entries []object.TreeEntry) ([]byte, error) {
	size := 0
	for _, e := range entries {
		size += 7 + len(e.Name) + 1 + len(e.Hash)
	}
	b := make([]byte, 0, size)
	for _, e := range entries {
		if strings.IndexByte(e.Name, 0) >= 0 {
			return nil, fmt.Errorf("malformed file name %q", e.Name)
		}
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, 0)
		b = append(b, e.Hash[:]...)
	}
	return b, nil
}

// treeCache keeps recently decoded trees. Trees are immutable, and walking
// history reads the same subtrees again and again (each commit's tree is the
// next one's parent tree). Callers must not modify a cached tree.
//
// It is bounded by the entries it holds, not by trees: a board's trees
// range from a handful of entries to thousands, and the memory is the
// entries'. treeCacheEntries keep the trees a walk of history or a write
// comes back to; a board's whole tree at 100,000 notes (about 80 bytes an
// entry, name included) is not kept, which held 20 MB of a server's heap.
type treeCache struct {
	mu      sync.Mutex
	items   map[Hash]*list.Element
	order   *list.List // front: most recently used
	entries int        // of the trees held
}

type cachedTree struct {
	hash Hash
	tree *object.Tree
}

const treeCacheEntries = 32 << 10

func (c *treeCache) get(h Hash) *object.Tree {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[h]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cachedTree).tree
	}
	return nil
}

func (c *treeCache) put(h Hash, t *object.Tree) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items, c.order = map[Hash]*list.Element{}, list.New()
	}
	if _, ok := c.items[h]; ok {
		return
	}
	c.items[h] = c.order.PushFront(&cachedTree{hash: h, tree: t})
	c.entries += len(t.Entries)
	for c.entries > treeCacheEntries && c.order.Len() > 1 {
		last := c.order.Back()
		c.order.Remove(last)
		gone := last.Value.(*cachedTree)
		delete(c.items, gone.hash)
		c.entries -= len(gone.tree.Entries)
	}
}

func (r *Repo) readTree(h Hash) (*object.Tree, error) {
	if t := r.trees.get(h); t != nil {
		return t, nil
	}
	t, err := r.decodeTree(h)
	if err != nil {
		return nil, err
	}
	r.trees.put(h, t)
	return t, nil
}

func (r *Repo) decodeTree(h Hash) (*object.Tree, error) {
	t, content, err := r.readObject(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.TreeObject {
		return nil, fmt.Errorf("object %s is a %s, not a tree", h, t)
	}
	mem := &plumbing.MemoryObject{}
	mem.SetType(plumbing.TreeObject)
	if _, err := mem.Write(content); err != nil {
		return nil, err
	}
	tree := &object.Tree{}
	if err := tree.Decode(mem); err != nil {
		return nil, err
	}
	return tree, nil
}

// CommitInfo is what history readers need of a commit.
type CommitInfo struct {
	Hash      Hash
	Tree      Hash
	Parents   []Hash
	Author    Signature
	Committer Signature
	Message   string
}

// FirstParent is the commit's first parent, zero for a root commit.
func (c *CommitInfo) FirstParent() Hash {
	if len(c.Parents) == 0 {
		return ZeroHash
	}
	return c.Parents[0]
}

// Subject is the first line of the message.
func (c *CommitInfo) Subject() string {
	s, _, _ := strings.Cut(c.Message, "\n")
	return s
}

// ReadCommit reads a commit object. Commits are immutable: the same ones
// are read again and again (a batch walks the chain it builds, the
// catch-up the history it takes in), so recent ones are kept decoded.
func (r *Repo) ReadCommit(h Hash) (*CommitInfo, error) {
	if c, ok := r.commits.get(h); ok {
		return c, nil
	}
	c, err := r.decodeCommit(h)
	if err == nil && !r.isStaged(h) {
		// A staged commit may yet be dropped, unwritten.
		r.commits.put(h, c)
	}
	return c, err
}

// commitCache keeps decoded commits, a copy handed to each caller.
type commitCache struct {
	mu    sync.Mutex
	items map[Hash]CommitInfo
}

const commitCacheSize = 4096

func (c *commitCache) get(h Hash) (*CommitInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info, ok := c.items[h]
	if !ok {
		return nil, false
	}
	info.Parents = slices.Clone(info.Parents)
	return &info, true
}

func (c *commitCache) put(h Hash, info *CommitInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil || len(c.items) >= commitCacheSize {
		c.items = make(map[Hash]CommitInfo, commitCacheSize)
	}
	kept := *info
	kept.Parents = slices.Clone(info.Parents)
	c.items[h] = kept
}

func (r *Repo) decodeCommit(h Hash) (*CommitInfo, error) {
	t, content, err := r.readObject(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.CommitObject {
		return nil, fmt.Errorf("object %s is a %s, not a commit", h, t)
	}
	mem := &plumbing.MemoryObject{}
	mem.SetType(plumbing.CommitObject)
	if _, err := mem.Write(content); err != nil {
		return nil, err
	}
	c := &object.Commit{}
	if err := c.Decode(mem); err != nil {
		return nil, err
	}
	info := &CommitInfo{
		Hash:      h,
		Tree:      Hash(c.TreeHash),
		Author:    Signature{Name: c.Author.Name, Email: c.Author.Email, When: c.Author.When},
		Committer: Signature{Name: c.Committer.Name, Email: c.Committer.Email, When: c.Committer.When},
		Message:   c.Message,
	}
	for _, p := range c.ParentHashes {
		info.Parents = append(info.Parents, Hash(p))
	}
	return info, nil
}

// PathBlob returns the blob at path in commit's tree, or the zero hash when
// the path does not exist there.
func (r *Repo) PathBlob(commit Hash, path string) (Hash, error) {
	if commit.IsZero() {
		return ZeroHash, nil
	}
	c, err := r.ReadCommit(commit)
	if err != nil {
		return ZeroHash, err
	}
	tree := c.Tree
	parts := strings.Split(path, "/")
	for i, name := range parts {
		t, err := r.readTree(tree)
		if err != nil {
			return ZeroHash, err
		}
		var found *object.TreeEntry
		for j := range t.Entries {
			if t.Entries[j].Name == name {
				found = &t.Entries[j]
				break
			}
		}
		if found == nil {
			return ZeroHash, nil
		}
		last := i == len(parts)-1
		if last != (found.Mode != filemode.Dir) {
			return ZeroHash, nil
		}
		tree = Hash(found.Hash)
	}
	return tree, nil
}

// SubTree returns the tree at dir ("" for root itself) under the tree
// root, or the zero hash when root has no directory there.
func (r *Repo) SubTree(root Hash, dir string) (Hash, error) {
	tree := root
	if dir == "" {
		return tree, nil
	}
	for _, name := range strings.Split(dir, "/") {
		if tree.IsZero() {
			return ZeroHash, nil
		}
		t, err := r.readTree(tree)
		if err != nil {
			return ZeroHash, err
		}
		next := ZeroHash
		for _, e := range t.Entries {
			if e.Name == name && e.Mode == filemode.Dir {
				next = Hash(e.Hash)
				break
			}
		}
		tree = next
	}
	return tree, nil
}

// FileBlobs returns the blob of each of the named files directly in tree
// (zero for none), as Changes counts files: a name that is a directory or
// a submodule there is no file, and zero.
func (r *Repo) FileBlobs(tree Hash, names []string) ([]Hash, error) {
	out := make([]Hash, len(names))
	if tree.IsZero() {
		return out, nil
	}
	t, err := r.readTree(tree)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Dir || e.Mode == filemode.Submodule {
			continue
		}
		for i, name := range names {
			if e.Name == name {
				out[i] = Hash(e.Hash)
			}
		}
	}
	return out, nil
}

// identity cleans a name or email for an author line as git does: the
// delimiters <, > and line breaks cannot appear in it, and surrounding
// spaces are dropped. Names come from agents and environment variables.
func identity(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '<', '>', '\n', '\r', 0:
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}
