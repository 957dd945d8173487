package gitver

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// PathChange is one file that a commit changed relative to its first parent.
// Old is zero for a created file, New is zero for a deleted one.
type PathChange struct {
	Path     string
	Old, New Hash
}

// Changes lists the files commit changed relative to its first parent (all
// of its files for a root commit). Subtrees with equal hashes are skipped
// without being read, so the cost follows what changed, not the size of the
// tree. This is what a note's version counts: first-parent commits only.
func (r *Repo) Changes(c *CommitInfo) ([]PathChange, error) {
	var base Hash
	if p := c.FirstParent(); !p.IsZero() {
		pc, err := r.ReadCommit(p)
		if err != nil {
			return nil, err
		}
		base = pc.Tree
	}
	var out []PathChange
	err := r.diffTrees("", base, c.Tree, &out)
	return out, err
}

// DiffTrees lists the files that differ between two trees (either may be
// zero, meaning empty).
func (r *Repo) DiffTrees(a, b Hash) ([]PathChange, error) {
	var out []PathChange
	err := r.diffTrees("", a, b, &out)
	return out, err
}

func (r *Repo) treeEntries(h Hash) (map[string]object.TreeEntry, error) {
	m := map[string]object.TreeEntry{}
	if h.IsZero() {
		return m, nil
	}
	t, err := r.readTree(h)
	if err != nil {
		return nil, err
	}
	for _, e := range t.Entries {
		m[e.Name] = e
	}
	return m, nil
}

func (r *Repo) diffTrees(prefix string, a, b Hash, out *[]PathChange) error {
	if a == b {
		return nil
	}
	ea, err := r.treeEntries(a)
	if err != nil {
		return err
	}
	eb, err := r.treeEntries(b)
	if err != nil {
		return err
	}
	for name, x := range ea {
		y, ok := eb[name]
		if !ok {
			y = object.TreeEntry{}
		}
		if err := r.diffEntry(prefix+name, x, y, out); err != nil {
			return err
		}
	}
	for name, y := range eb {
		if _, ok := ea[name]; !ok {
			if err := r.diffEntry(prefix+name, object.TreeEntry{}, y, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// diffEntry compares one name on both sides; either side may be absent (the
// zero entry), a file, or a directory.
func (r *Repo) diffEntry(path string, x, y object.TreeEntry, out *[]PathChange) error {
	if x.Hash == y.Hash && x.Mode == y.Mode {
		return nil
	}
	xDir, yDir := x.Mode == filemode.Dir, y.Mode == filemode.Dir
	var xTree, yTree Hash
	if xDir {
		xTree = Hash(x.Hash)
	}
	if yDir {
		yTree = Hash(y.Hash)
	}
	if xDir || yDir {
		if err := r.diffTrees(path+"/", xTree, yTree, out); err != nil {
			return err
		}
	}
	xFile := !xDir && x.Hash != plumbing.ZeroHash && x.Mode != filemode.Submodule
	yFile := !yDir && y.Hash != plumbing.ZeroHash && y.Mode != filemode.Submodule
	if xFile || yFile {
		c := PathChange{Path: path}
		if xFile {
			c.Old = Hash(x.Hash)
		}
		if yFile {
			c.New = Hash(y.Hash)
		}
		if c.Old != c.New {
			*out = append(*out, c)
		}
	}
	return nil
}
