// Package commits builds the engine's commits: every commit the program
// makes, a tool write's and a person's edits alike, is built here from the
// files it changes, so that a note's version means the same whoever made
// it. A commit is built in memory (its objects staged, readable at once);
// the mover writes them and moves the branch.
package commits

import (
	"io/fs"
	"slices"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Change is one file of a commit: its new content, or Deleted.
type Change struct {
	Path    string
	Content []byte
	Deleted bool
	// Info is the stat of a person's file, taken before Content was read:
	// recorded in git's index, a later save never looks committed.
	Info fs.FileInfo
	// Base is the earlier version a person's save was made from, and
	// merged with what the branch got since; zero for a save made from
	// the branch's version.
	Base gitver.Hash
	// Saved is the person's save as they made it, when it was merged: git
	// holds it, and the commit names it (note.TrailerSaved).
	Saved gitver.Hash
}

// Git is what building a commit needs of the board's repository.
type Git interface {
	PathBlob(commit gitver.Hash, path string) (gitver.Hash, error)
	BuildCommit(req gitver.CommitRequest) (*gitver.PendingCommit, error)
	Stage(c *gitver.PendingCommit)
}

// Builder builds commits on the board's git, reading the files' blobs
// before from the derived index where it can.
type Builder struct {
	git Git
	idx *index.DB
}

// New is the builder of git's commits, idx the board's derived index.
func New(git Git, idx *index.DB) *Builder { return &Builder{git: git, idx: idx} }

// Built is a commit as built: its objects staged in memory, until the
// mover writes them (gitver.Repo.Stage).
type Built struct {
	*gitver.PendingCommit
	// Changes are the changes that change a file, Diff the same listed
	// as gitver.Repo.Changes would list the commit's: each file's blob
	// before and after, by path.
	Changes []Change
	Diff    []gitver.PathChange
}

// Build builds the commit of changes on parent, and stages its objects.
// It is nil, and nothing is built, when parent holds every file as changes
// would leave them: a note's version counts the commits whose content at
// its files differs from a parent's, so a commit that changes nothing
// would be acknowledged at a version that no reader of git counts.
func (b *Builder) Build(parent gitver.Hash, changes []Change, author gitver.Signature, message string) (*Built, error) {
	real, diff, err := b.changesAt(parent, changes)
	if err != nil || len(real) == 0 {
		return nil, err
	}
	req := gitver.CommitRequest{Parent: parent, Changes: make(map[string]gitver.Hash, len(real)), Author: author, Message: message}
	for _, c := range real {
		var h gitver.Hash
		if !c.Deleted {
			h = gitver.BlobHash(c.Content)
			req.Blobs = append(req.Blobs, c.Content)
		}
		req.Changes[c.Path] = h
	}
	pending, err := b.git.BuildCommit(req)
	if err != nil {
		return nil, err
	}
	b.git.Stage(pending)
	return &Built{PendingCommit: pending, Changes: real, Diff: diff}, nil
}

// changesAt keeps the changes that change a file from what parent holds,
// and lists them as gitver.Repo.Changes would list their commit's. The
// blobs before come from the derived index when it is at parent (a commit
// on the branch), else from git (a write on a batch's chain).
func (b *Builder) changesAt(parent gitver.Hash, changes []Change) ([]Change, []gitver.PathChange, error) {
	olds := make([]gitver.Hash, len(changes))
	indexed := false
	err := b.idx.Read(func(s *index.Snapshot) error {
		at, _, err := s.Head()
		if err != nil || at != parent {
			return err
		}
		indexed = true
		for i, c := range changes {
			if olds[i], err = s.FileBlob(c.Path); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var real []Change
	var diff []gitver.PathChange
	for i, c := range changes {
		if !indexed {
			if olds[i], err = b.git.PathBlob(parent, c.Path); err != nil {
				return nil, nil, err
			}
		}
		now := gitver.ZeroHash
		if !c.Deleted {
			now = gitver.BlobHash(c.Content)
		}
		if olds[i] != now {
			real = append(real, c)
			diff = append(diff, gitver.PathChange{Path: c.Path, Old: olds[i], New: now})
		}
	}
	slices.SortFunc(diff, func(x, y gitver.PathChange) int { return strings.Compare(x.Path, y.Path) })
	return real, diff, nil
}
