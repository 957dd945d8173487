package main

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// The floor is what a durable commit of one note must cost on this disk,
// whatever program makes it: the note's blob, a tree for each directory on
// its path and a commit, as loose objects; a ref moved through its lock
// file; the note's file written beside its old one and renamed over it; each
// file fsynced and each directory that changed synced, as the product does
// with durability on. Nothing else: no journal, no index, no check of what
// is there. The probe keeps the trees it made in memory, as the cheapest
// writer would, and moves a ref of its own (refBenchFloor), so the board is
// not changed but for objects nothing reaches, which gc removes. Its note
// files lie beside the notes, in the note's directory as the product's
// do, under a name that marks a temporary file of the program (git and the
// watcher pass over them): a file system allocates a new file near its
// directory, and how much that costs differs from one part of a disk to
// another.

// floorFile is the suffix of the probe's note files.
const floorFile = ".bb-tmp-floor"

// refBenchFloor is the ref the probe moves.
const refBenchFloor = "refs/bench/floor"

// floorProbe makes floor commits on a repository.
type floorProbe struct {
	dir, gitDir string
	sync        bool
	objects     *filesystem.Storage
	parent      plumbing.Hash
	// trees are the directories the probe rewrote, by path ("" the root),
	// as entries sorted the way git sorts them.
	trees map[string][]object.TreeEntry
	// files are the note files the probe wrote, removed by close.
	files   []string
	started time.Time
}

// newFloorProbe starts a probe on the repository of the work tree dir, at
// its HEAD.
func newFloorProbe(dir string, sync bool) (*floorProbe, error) {
	gitDir := filepath.Join(dir, ".git")
	objects := filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault())
	head, err := storer.ResolveReference(objects, plumbing.HEAD)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(gitDir, refBenchFloor)), 0o755); err != nil {
		return nil, err
	}
	return &floorProbe{dir: dir, gitDir: gitDir, sync: sync, objects: objects, parent: head.Hash(), started: time.Now(),
		trees: map[string][]object.TreeEntry{}}, nil
}

// close removes the probe's ref and files.
func (p *floorProbe) close() error {
	var err error
	for _, f := range p.files {
		if rerr := os.Remove(f); rerr != nil && !os.IsNotExist(rerr) {
			err = rerr
		}
	}
	if rerr := os.Remove(filepath.Join(p.gitDir, refBenchFloor)); rerr != nil && !os.IsNotExist(rerr) {
		err = rerr
	}
	return err
}

// commit makes one durable commit of the note at key with content.
func (p *floorProbe) commit(key string, content []byte) error {
	blob, err := p.writeObject(plumbing.BlobObject, content)
	if err != nil {
		return err
	}
	// The trees on the path, deepest first, each naming the one below.
	notePath := key + ".md"
	child, name, mode := blob, path.Base(notePath), filemode.Regular
	for dir := path.Dir(notePath); ; dir = path.Dir(dir) {
		if dir == "." {
			dir = ""
		}
		entries, err := p.tree(dir)
		if err != nil {
			return err
		}
		entries = setEntry(entries, object.TreeEntry{Name: name, Mode: mode, Hash: child})
		p.trees[dir] = entries
		if child, err = p.writeTree(entries); err != nil {
			return err
		}
		if dir == "" {
			break
		}
		name, mode = path.Base(dir), filemode.Dir
	}
	now := time.Now()
	who := fmt.Sprintf("bench <bench@example.com> %d +0000", now.Unix())
	c := fmt.Sprintf("tree %s\nparent %s\nauthor %s\ncommitter %s\n\nfloor: %s\n", child, p.parent, who, who, key)
	commit, err := p.writeObject(plumbing.CommitObject, []byte(c))
	if err != nil {
		return err
	}
	if err := p.replaceFile(filepath.Join(p.gitDir, refBenchFloor), []byte(commit.String()+"\n"), ".lock"); err != nil {
		return err
	}
	p.parent = commit
	file := filepath.Join(p.dir, filepath.FromSlash(path.Dir(notePath)), "."+path.Base(notePath)+floorFile)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if !slices.Contains(p.files, file) {
		p.files = append(p.files, file)
	}
	return p.replaceFile(file, content, "-new")
}

// tree is the directory at dir as the probe left it, else as the branch has
// it.
func (p *floorProbe) tree(dir string) ([]object.TreeEntry, error) {
	if entries, ok := p.trees[dir]; ok {
		return entries, nil
	}
	c, err := object.GetCommit(p.objects, p.parent)
	if err != nil {
		return nil, err
	}
	root, err := c.Tree()
	if err != nil {
		return nil, err
	}
	t := root
	if dir != "" {
		if t, err = root.Tree(dir); err != nil {
			return nil, nil // a new directory
		}
	}
	return slices.Clone(t.Entries), nil
}

// setEntry puts e into entries, in git's order (a directory sorts as if its
// name ended in "/").
func setEntry(entries []object.TreeEntry, e object.TreeEntry) []object.TreeEntry {
	entries = slices.DeleteFunc(entries, func(x object.TreeEntry) bool { return x.Name == e.Name })
	entries = append(entries, e)
	sortKey := func(x object.TreeEntry) string {
		if x.Mode == filemode.Dir {
			return x.Name + "/"
		}
		return x.Name
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(sortKey(a), sortKey(b)) })
	return entries
}

func (p *floorProbe) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	var b bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&b, "%o %s\x00", uint32(e.Mode), e.Name)
		b.Write(e.Hash[:])
	}
	return p.writeObject(plumbing.TreeObject, b.Bytes())
}

// writeObject writes a loose object, as git does: compressed into a
// temporary file in its fan-out directory, then renamed to its name.
func (p *floorProbe) writeObject(t plumbing.ObjectType, content []byte) (plumbing.Hash, error) {
	header := fmt.Sprintf("%s %d\x00", t, len(content))
	sum := sha1.New()
	sum.Write([]byte(header))
	sum.Write(content)
	var h plumbing.Hash
	copy(h[:], sum.Sum(nil))
	name := hex.EncodeToString(h[:])
	dir := filepath.Join(p.gitDir, "objects", name[:2])
	if _, err := os.Stat(filepath.Join(dir, name[2:])); err == nil {
		return h, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return h, err
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, err := zw.Write([]byte(header))
	if err == nil {
		_, err = zw.Write(content)
	}
	if err = errors.Join(err, zw.Close()); err != nil {
		return h, err
	}
	return h, p.replaceFile(filepath.Join(dir, name[2:]), z.Bytes(), ".tmp")
}

// replaceFile writes data beside path (path+suffix), syncs it, renames it
// over path and syncs the directory.
func (p *floorProbe) replaceFile(path string, data []byte, suffix string) error {
	tmp := path + suffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && p.sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil || !p.sync {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// probeNotes makes floor commits of notes, round-robin, numbered from
// first as writeNotes numbers its writes, of the size the product writes.
func probeNotes(p *floorProbe, notes []string, first, writes int) (result, error) {
	res := result{lat: make([]time.Duration, 0, writes), start: time.Now()}
	// Named by the probe's start, its notes are new to the board: a probe
	// that ran on it before left objects, which would not be written again.
	by := fmt.Sprintf("floor %d", p.started.UnixNano())
	for k := first; k < first+writes; k++ {
		content := fmt.Appendf(nil, "---\ndigest: "+benchDigest+"\nkind: finding\n---\n"+noteBody, k+1, by, k+1, by)
		t := time.Now()
		if err := p.commit(notes[k%len(notes)], content); err != nil {
			return res, err
		}
		res.lat = append(res.lat, time.Since(t))
		res.end = time.Now()
	}
	return res, nil
}
