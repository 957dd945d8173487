package people

import (
	"fmt"
	"io/fs"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// CommitLocked makes one commit of changes the program did not build as a
// tool write: a person's edits found in the work tree (onDisk: their files
// are in place already), the board's first commit, the access file. Tool
// writes are built in a pipeline.Tx. Both are built by commits.Builder,
// and reach the branch through the one branch-move step (Mover.Move),
// which makes a crash at any point recoverable.
//
// A person's edits are the branch's only while the files are: while
// another branch is checked out, or a git command is in the middle of
// something, they wait (fail.ErrWorkTreeBusy). While a person is in the middle
// of a merge or a rebase, the program's own commits are refused. With a
// remote, the commit is pushed first: it counts once the remote took it,
// and the local branch follows.
//
// Files parent holds as changes would leave them are no change; when none
// is left, nothing is committed and parent is returned.
//
// The caller holds the write lock. It returns fail.ErrBranchMoved when the
// branch was not at parent, or the work tree changed hands meanwhile;
// nothing then changed. A failure past the commit point is an
// fail.Unfinished: the commit stands, and the next hold of the write lock
// finishes it.
func (p *People) CommitLocked(parent gitver.Hash, changes []commits.Change, author gitver.Signature,
	message string, onDisk bool) (commit gitver.Hash, err error) {
	// A reset may have dropped the program's commits from the branch since
	// the repairs ran, before parent was read: put that right first, or
	// this commit would give a version they had to other content.
	if err := p.bringBackDropped(); err != nil {
		return gitver.ZeroHash, err
	}
	if head, err := p.repo.Head(); err != nil || head != parent {
		if err != nil {
			return gitver.ZeroHash, err
		}
		return gitver.ZeroHash, fail.ErrBranchMoved
	}
	wt := p.repo.WorkTree()
	if !onDisk && wt.Operation != "" {
		return gitver.ZeroHash, fail.BusyWithGit(wt)
	}
	if why := wt.Busy(); onDisk && why != "" {
		// A person's edits are the branch's only while the files are: a
		// checkout since the comparison makes them another's.
		return gitver.ZeroHash, fmt.Errorf("%w: %s", fail.ErrWorkTreeBusy, why)
	}
	built, err := p.commits.Build(parent, changes, author, message)
	if err != nil {
		return gitver.ZeroHash, err
	}
	if built == nil {
		return parent, nil // git holds every file as it is: no commit, no version
	}
	defer p.repo.DropStaged()
	var infos map[string]fs.FileInfo
	for _, c := range built.Changes {
		if onDisk && c.Info != nil {
			if infos == nil {
				infos = map[string]fs.FileInfo{}
			}
			infos[c.Path] = c.Info
		}
	}
	commit = built.Hash
	objects := built.Write
	// With a remote, that is where the commit counts: the local branch
	// moves only once it took it, and from then on it stands, whatever
	// happens here.
	took, err := p.follower.Offer(built.PendingCommit)
	if err != nil {
		return gitver.ZeroHash, err
	}
	if took {
		objects = nil
	}
	moved, err := p.mover.Move(mover.Move{From: parent, To: commit, Reason: history.OwnMove + subject(message),
		Alongside: objects, Changes: built.Diff, OnDisk: onDisk, Infos: infos, Fresh: true})
	switch {
	case moved && err != nil:
		return commit, &fail.Unfinished{Commit: commit, Err: err}
	case moved:
		p.mover.Counted(1)
		return commit, nil
	case took && err == nil:
		// The remote took the commit, and the local branch moved or the
		// work tree changed hands since: the next fetch brings the
		// branch to it (fsstore/internal/follow), and its files with it.
		return commit, nil
	case err != nil:
		return gitver.ZeroHash, err
	}
	return gitver.ZeroHash, fail.ErrBranchMoved
}

// CommittedBlobs returns the blobs paths hold at the indexed head (zero for
// none), read at one point of history.
func (p *People) CommittedBlobs(paths []string) ([]gitver.Hash, error) {
	out := make([]gitver.Hash, len(paths))
	err := p.idx.Read(func(snap *index.Snapshot) error {
		for i, p := range paths {
			var err error
			if out[i], err = snap.FileBlob(p); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
