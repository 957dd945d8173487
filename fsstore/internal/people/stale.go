package people

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A note's file that holds an earlier version of the note is rarely a
// person's edit. More often something left it behind:
//
//   - a `git reset --hard HEAD` or `git stash` that resolved HEAD before
//     agents' writes and wrote its files after them, and then had its ref
//     update refused because a write moved the branch in between (git reads
//     HEAD again just before it moves it): it exits with an error, no line
//     of the reflog tells of it, and the older files stay, git's index
//     agreeing with them (rescue.go handles the reset whose move lands);
//   - the same with a `git merge` or `git pull` whose ref update a write
//     beat;
//   - a write whose branch moved and whose files were never put in place.
//
// Committed as the person's, such a file reverts acknowledged writes. So a
// changed file whose content is an earlier version of the note's file is
// judged by when it appeared (its inode's change time, which no editor or
// `cp -p` can set back) against when the branch here moved past that
// version (the move that brought the commit that superseded it, by the
// branch's reflog; a pulled commit was made earlier, on another clone):
//
//   - before: it was in place when the branch moved on, and the move's own
//     file never replaced it. The branch's version goes back in place.
//   - within staleWindow after: a git command that resolved the branch
//     before the move, or a person restoring the old text on purpose; the
//     program cannot tell which. The branch's version goes back in place
//     and the file's text is kept as a sibling note linked `contradicts`
//     (as a remote's conflicting side is, fsstore/internal/follow), never as the note's
//     next version.
//   - later: the person brought the old text back; it is their edit.
//
// A version superseded by a person's `git commit` is not judged: git
// commit builds its tree from git's index and writes no file, so a file
// still holding the version before it is a change that commit left out,
// not a file its move failed to replace. (A commit racing an agent's write
// can take its tree from the index as it was just before the write, and
// so put the note back under the write's file: that file is the write's
// text, and committing it again is what restores the write.)
//
// Deleted files are not judged: a reset that resolved the branch before a
// note was created removes its file, and that is still taken for a delete.

// staleWindow is how long after the branch moved past a version a file
// holding it is not taken for a person's edit: longer than a git command
// that resolved the branch before the move takes to write its files, on a
// loaded machine.
const staleWindow = 5 * time.Second

// maxStaleWalk bounds the commits looked at for the version a file holds.
const maxStaleWalk = 2000

// staleVerdict is what a changed file holding an earlier version is taken
// for.
type staleVerdict int

const (
	// notStale: not an earlier version superseded within staleWindow
	// before the file appeared; a person's edit like any other.
	notStale staleVerdict = iota
	// leftBehind: the file was there before the branch moved past it.
	leftBehind
	// unclear: it appeared within staleWindow after the branch moved past
	// it.
	unclear
	// undoneByCommit: a person's `git commit` moved the branch past it.
	// git commit writes no file, so this is no leftover of a git command:
	// it is the text of the write the commit undid (see above), and is
	// committed again like any person's edit.
	undoneByCommit
)

// staleLook judges changed files against the branch's recent history,
// read from head back, once for the whole comparison.
type staleLook struct {
	p    *People
	head gitver.Hash
	// chain is the first-parent history of head read so far, newest first.
	chain []*gitver.CommitInfo
	ended bool // the walk reached the root or maxStaleWalk
	// arrivals is when the branch's recent moves brought each commit,
	// read once (readArrivals).
	arrivals map[gitver.Hash]time.Time
	// committed holds the commits a person's `git commit` made, by the
	// same reflog.
	committed map[gitver.Hash]bool
}

// verdict judges the file at p, holding blob, with the stat fi.
func (l *staleLook) verdict(p string, blob gitver.Hash, fi fs.FileInfo) (staleVerdict, error) {
	appeared, ok := changeTime(fi)
	if !ok {
		return notStale, nil
	}
	// From the head back: the newest commit whose parent held blob at p is
	// where the branch moved past that version.
	child := gitver.ZeroHash
	var childTime time.Time
	for i := 0; ; i++ {
		c, err := l.at(i)
		if err != nil || c == nil {
			return notStale, err
		}
		if !child.IsZero() {
			had, err := l.p.repo.PathBlob(c.Hash, p)
			if err != nil {
				return notStale, err
			}
			if had == blob {
				switch {
				case l.committed[child]:
					return undoneByCommit, nil // git commit writes no file: not its leftover
				case appeared.Before(childTime):
					return leftBehind, nil // commit and reflog times keep whole seconds: the move came later still
				case appeared.Before(childTime.Add(staleWindow + time.Second)):
					return unclear, nil
				}
				return notStale, nil
			}
		}
		reached, err := l.reached(c)
		if err != nil {
			return notStale, err
		}
		if reached.Add(staleWindow + time.Second).Before(appeared) {
			return notStale, nil // superseded, if ever, long before the file appeared
		}
		child, childTime = c.Hash, reached
	}
}

// reached is when the branch here reached commit c: the time of the move
// that brought it, by the branch's recent reflog, or the commit's own time
// when that is later or the reflog does not tell. A commit pulled from
// another clone was made there, maybe long before this clone's branch
// moved to it; of two times the later is the safer, for it makes more
// files count as left behind or unclear, and fewer as a person's edit.
func (l *staleLook) reached(c *gitver.CommitInfo) (time.Time, error) {
	if l.arrivals == nil {
		if err := l.readArrivals(); err != nil {
			return time.Time{}, err
		}
	}
	if at := l.arrivals[c.Hash]; at.After(c.Committer.When) {
		return at, nil
	}
	return c.Committer.When, nil
}

// maxArrivalWalk bounds the commits one move of the branch is taken to
// have brought (a group of writes, a pull).
const maxArrivalWalk = 256

// readArrivals reads, from the branch's recent reflog, when each commit
// that a move brought arrived: the commits from the move's new value back
// along first parents to its old one. A commit brought more than once (the
// branch moved back and forward) keeps the latest.
func (l *staleLook) readArrivals() error {
	moves, err := l.p.repo.RecentBranchMoves()
	if err != nil {
		return err
	}
	l.arrivals = map[gitver.Hash]time.Time{}
	l.committed = map[gitver.Hash]bool{}
	for i := len(moves) - 1; i >= 0; i-- { // newest first
		m := moves[i]
		if _, ok := l.arrivals[m.New]; !ok && byGitCommit(m.Message) {
			l.committed[m.New] = true
		}
		for at, n := m.New, 0; !at.IsZero() && at != m.Old && n < maxArrivalWalk; n++ {
			if _, ok := l.arrivals[at]; ok {
				break
			}
			l.arrivals[at] = m.Who.When
			c, err := l.p.repo.ReadCommit(at)
			if err != nil {
				return err
			}
			at = c.FirstParent()
		}
	}
	return nil
}

// byGitCommit reports whether a reflog message is that of a move made by
// `git commit` ("commit: ...", "commit (amend): ...", "commit (merge):
// ...", "commit (initial): ...").
func byGitCommit(message string) bool {
	return strings.HasPrefix(message, "commit: ") || strings.HasPrefix(message, "commit (")
}

// at returns the i-th commit of head's first-parent history, nil past its
// end or past maxStaleWalk.
func (l *staleLook) at(i int) (*gitver.CommitInfo, error) {
	for len(l.chain) <= i && !l.ended {
		next := l.head
		if n := len(l.chain); n > 0 {
			next = l.chain[n-1].FirstParent()
		}
		if next.IsZero() || len(l.chain) == maxStaleWalk {
			l.ended = true
			break
		}
		c, err := l.p.repo.ReadCommit(next)
		if err != nil {
			return nil, err
		}
		l.chain = append(l.chain, c)
	}
	if i < len(l.chain) {
		return l.chain[i], nil
	}
	return nil, nil
}

// keep writes a sibling note of key holding text, found in key's file and
// not to be its next version (an earlier version left in its place, a
// person's save that conflicts with the agents' writes), linked
// `contradicts` to key, and returns it as a change to commit: a person's
// note, made of their file. A sibling that holds this already is used
// again (a comparison cut short before its commit). The caller holds the
// write lock.
func (l *staleLook) keep(key string, text []byte) (commits.Change, error) {
	w := l.p
	sibling, content, err := note.Contradicting(key, text, l.head.Short())
	if err != nil {
		return commits.Change{}, err
	}
	want := gitver.BlobHash(content)
	base := strings.TrimSuffix(sibling, ".md")
	for n := 1; n <= maxSiblingNames; n++ {
		p := sibling
		if n > 1 {
			p = fmt.Sprintf("%s-%d.md", base, n)
		}
		committed, err := w.repo.PathBlob(l.head, p)
		if err != nil {
			return commits.Change{}, err
		}
		if !committed.IsZero() && committed != want {
			continue // another note has that name
		}
		if _, err := w.root.Lstat(p); errors.Is(err, fs.ErrNotExist) {
			tmp, info, err := w.files.Stage(p, content)
			if err != nil {
				return commits.Change{}, err
			}
			if _, err := w.mover.Place(worktree.Staged{Tmp: tmp, Info: info}, p, gitver.ZeroHash, want); err != nil {
				return commits.Change{}, err
			}
			if err := w.files.SyncDir(path.Dir(p)); err != nil {
				return commits.Change{}, err
			}
		}
		if !w.files.Holds(p, want) {
			continue // a file of someone else's is there
		}
		fi, err := w.root.Lstat(p)
		if err != nil {
			return commits.Change{}, err
		}
		return commits.Change{Path: p, Content: content, Info: fi}, nil
	}
	return commits.Change{}, fmt.Errorf("no free name for a sibling note of %s: %s and %d more are taken", key, sibling, maxSiblingNames-1)
}

// maxSiblingNames bounds the names tried for a sibling note.
const maxSiblingNames = 100

// keptAs tells where stale files' text was kept, for the log.
func keptAs(siblings []string) string {
	if len(siblings) == 0 {
		return ""
	}
	return ", and what they held is kept, in case a person meant it, as sibling notes linked `contradicts`: " +
		strings.Join(siblings, ", ")
}
