package fsstore

import (
	"slices"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// NoteChanges is what changed on the board between two commits of its
// branch, as note keys (topic/key...), each list sorted.
type NoteChanges struct {
	Updated []string // present before and after, with other content
	Added   []string // present only after
	Removed []string // present only before
}

// Empty reports whether no note changed.
func (c NoteChanges) Empty() bool { return len(c.Updated)+len(c.Added)+len(c.Removed) == 0 }

// BranchHead is the commit the board's branch points to now: whoever moved
// it (this process, another, a person's commit or pull). It reads one ref.
func (w *Workspace) BranchHead() (gitver.Hash, error) { return w.repo.Head() }

// ChangesBetween lists the notes whose file or out-of-line content differs
// between the trees of commits from and to (from zero: every note of to).
func (w *Workspace) ChangesBetween(from, to gitver.Hash) (NoteChanges, error) {
	var out NoteChanges
	tree := func(c gitver.Hash) (gitver.Hash, error) {
		if c.IsZero() {
			return gitver.Hash{}, nil
		}
		info, err := w.repo.ReadCommit(c)
		if err != nil {
			return gitver.Hash{}, err
		}
		return info.Tree, nil
	}
	a, err := tree(from)
	if err != nil {
		return out, err
	}
	b, err := tree(to)
	if err != nil {
		return out, err
	}
	changes, err := w.repo.DiffTrees(a, b)
	if err != nil {
		return out, err
	}
	// A note's file and its blob file are one note: it was added or removed
	// when its .md file was, and updated when either changed.
	kinds := map[string]*[]string{}
	for _, ch := range changes {
		key, ok := note.KeyOf(ch.Path)
		if !ok {
			continue
		}
		isNote := ch.Path == key+".md"
		switch {
		case isNote && ch.Old.IsZero():
			kinds[key] = &out.Added
		case isNote && ch.New.IsZero():
			kinds[key] = &out.Removed
		case kinds[key] == nil:
			kinds[key] = &out.Updated
		}
	}
	for key, list := range kinds {
		if _, err := note.ParseAddress(key, w.name); err == nil {
			*list = append(*list, key)
		}
	}
	slices.Sort(out.Updated)
	slices.Sort(out.Added)
	slices.Sort(out.Removed)
	return out, nil
}

// URI is the canonical address of the note key (topic/key...).
func (w *Workspace) URI(key string) string { return w.uri(key) }
