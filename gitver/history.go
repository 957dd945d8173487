package gitver

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// PathChange is one file that a commit changed. Old is the first parent's
// blob (zero for a created file), New the commit's (zero for a deleted one);
// a merge's file that only differs from another parent has Old == New.
type PathChange struct {
	Path     string
	Old, New Hash
}

// Changes lists the files whose content in commit c differs from at least
// one parent's (all of its files for a root commit): what a note's version
// counts. On a linear history that is what each commit changed; a merge
// counts for every file either side changed, so that a version is the same
// number whichever side a merge has first. Subtrees with equal hashes are
// skipped without being read, so the cost follows what changed, not the
// size of the tree.
func (r *Repo) Changes(c *CommitInfo) ([]PathChange, error) {
	var out []PathChange
	if len(c.Parents) == 0 {
		err := r.diffTrees("", ZeroHash, c.Tree, &out)
		return out, err
	}
	var seen map[string]bool // the paths listed, once a merge needs them
	for i, p := range c.Parents {
		pc, err := r.ReadCommit(p)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			if err := r.diffTrees("", pc.Tree, c.Tree, &out); err != nil {
				return nil, err
			}
			continue
		}
		var other []PathChange
		if err := r.diffTrees("", pc.Tree, c.Tree, &other); err != nil {
			return nil, err
		}
		if seen == nil {
			seen = make(map[string]bool, len(out))
			for _, o := range out {
				seen[o.Path] = true
			}
		}
		for _, ch := range other {
			if !seen[ch.Path] {
				seen[ch.Path] = true
				out = append(out, PathChange{Path: ch.Path, Old: ch.New, New: ch.New})
			}
		}
	}
	return out, nil
}

// DiffTrees lists the files that differ between two trees (either may be
// zero, meaning empty).
func (r *Repo) DiffTrees(a, b Hash) ([]PathChange, error) {
	var out []PathChange
	err := r.diffTrees("", a, b, &out)
	return out, err
}

func (r *Repo) treeEntries(h Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	t, err := r.readTree(h)
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
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
	return r.diffEntries(prefix, ea, eb, out)
}

// diffEntries compares two trees' entries. Git keeps a tree's entries in
// its order (entryCompare), so the two lists are merged in one pass without
// a map: a board's topic tree holds thousands of entries, and a history walk
// compares two of them per commit. A tree out of that order (written by
// some other tool) is compared by name instead.
func (r *Repo) diffEntries(prefix string, ea, eb []object.TreeEntry, out *[]PathChange) error {
	if !inGitOrder(ea) || !inGitOrder(eb) {
		return r.diffEntriesByName(prefix, ea, eb, out)
	}
	var none object.TreeEntry
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var err error
		switch {
		case j == len(eb) || i < len(ea) && entryCompare(ea[i], eb[j]) < 0:
			err = r.diffEntry(prefix+ea[i].Name, ea[i], none, out)
			i++
		case i == len(ea) || entryCompare(ea[i], eb[j]) > 0:
			err = r.diffEntry(prefix+eb[j].Name, none, eb[j], out)
			j++
		default:
			err = r.diffEntry(prefix+ea[i].Name, ea[i], eb[j], out)
			i, j = i+1, j+1
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// diffEntriesByName is diffEntries for trees out of git's order.
func (r *Repo) diffEntriesByName(prefix string, ea, eb []object.TreeEntry, out *[]PathChange) error {
	ma := make(map[string]object.TreeEntry, len(ea))
	for _, e := range ea {
		ma[e.Name] = e
	}
	mb := make(map[string]object.TreeEntry, len(eb))
	for _, e := range eb {
		mb[e.Name] = e
	}
	for name, x := range ma {
		if err := r.diffEntry(prefix+name, x, mb[name], out); err != nil {
			return err
		}
	}
	for name, y := range mb {
		if _, ok := ma[name]; !ok {
			if err := r.diffEntry(prefix+name, object.TreeEntry{}, y, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// entryCompare orders tree entries as git does: by name, a directory's
// name compared as if it ended in "/".
func entryCompare(x, y object.TreeEntry) int {
	a, b := x.Name, y.Name
	n := min(len(a), len(b))
	for k := range n {
		if a[k] != b[k] {
			return int(a[k]) - int(b[k])
		}
	}
	next := func(name string, e object.TreeEntry) int {
		switch {
		case len(name) > n:
			return int(name[n])
		case e.Mode == filemode.Dir:
			return '/'
		}
		return 0
	}
	return next(a, x) - next(b, y)
}

// inGitOrder reports whether entries are strictly in git's order (no name
// twice).
func inGitOrder(entries []object.TreeEntry) bool {
	for k := 1; k < len(entries); k++ {
		if entryCompare(entries[k-1], entries[k]) >= 0 {
			return false
		}
	}
	return true
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
