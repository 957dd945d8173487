package people

import (
	"errors"
	"slices"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The record of writes' files that wait to be placed is the mover's
// (fsstore/internal/mover/unplaced.go); people put them in place.

// placeUnplaced puts the branch's version of each recorded path in the work
// tree where the file still holds an older one, and git's index in step,
// once the work tree is the branch's again. The caller holds the write
// lock.
func (p *People) placeUnplaced() error {
	u, err := p.mover.LoadUnplaced()
	if err != nil || len(u.Paths) == 0 {
		return err
	}
	if p.repo.WorkTree().Busy() != "" {
		return nil // not yet: the files are someone else's
	}
	if _, _, err := p.catch.CatchUp(nil, nil); errors.Is(err, fail.ErrUnavailable) {
		return nil // once the index is built
	} else if err != nil {
		return err
	}
	paths := make([]string, 0, len(u.Paths))
	for rel := range u.Paths {
		paths = append(paths, rel)
	}
	slices.Sort(paths)
	want, err := p.CommittedBlobs(paths)
	if err != nil {
		return err
	}
	var entries []gitver.IndexEntry
	for i, rel := range paths {
		content, _, exists, err := p.files.ReadFile(rel)
		if err != nil {
			return err
		}
		var disk gitver.Hash
		if exists {
			disk = gitver.BlobHash(content)
		}
		entry := gitver.IndexEntry{Path: rel}
		switch {
		case disk == want[i]:
		case slices.Contains(u.Paths[rel], disk):
			// An older version of the branch's file: put the branch's in.
			if err := p.mover.PutBlob(rel, want[i]); err != nil {
				return err
			}
		default:
			// A person's change made since: theirs, to be committed on top.
			if !want[i].IsZero() {
				entry.Blob, entry.Info = want[i], worktree.StaleInfo{}
			}
			entries = append(entries, entry)
			p.edits.Add([]string{rel}, false)
			continue
		}
		if !want[i].IsZero() {
			fi, err := p.root.Lstat(rel)
			if err != nil {
				return err
			}
			entry.Blob, entry.Info = want[i], fi
		}
		entries = append(entries, entry)
	}
	if err := p.repo.UpdateIndex(entries); err != nil {
		return err
	}
	return p.mover.SaveUnplaced(&mover.Unplaced{})
}

// takeBackLeaked repairs a checkout of another branch that a racing
// `git checkout -b` left holding writes' files: git read HEAD before the
// writes and wrote its index after them, so HEAD names a commit behind the
// board's branch while files (and maybe git's index) hold the branch's
// newer versions, and git refuses to check the branch out again over what
// looks like the person's changes. The caller holds the write lock.
func (p *People) takeBackLeaked() error {
	wt := p.repo.WorkTree()
	if wt.Elsewhere == "" || wt.Operation != "" || wt.Locked != "" {
		return nil
	}
	head, err := p.repo.Head()
	if err != nil {
		return err
	}
	entries, n, err := p.mover.TakeBack(head)
	if err != nil || n == 0 {
		return err
	}
	p.logf("a `git checkout -b` raced with writes and left %d of the board's files in another branch's checkout (%s); "+
		"they hold that checkout's versions again, and the board's come back when its branch is checked out", n, wt.Elsewhere)
	return p.repo.UpdateIndex(entries)
}
