package catchup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// ErrUnavailable: the board cannot answer the call now, and will soon (the
// derived index is being built); the message says how far it has come.
// fsstore gives it to its callers as its own ErrUnavailable.
var ErrUnavailable = errors.New("unavailable")

// InlineCommits is how far the index may be behind the branch for a
// caller to wait for its catch-up: a few tenths of a second of work on a
// slow machine (a catch-up applies about a thousand commits a second).
// Further behind, the catch-up is the background build's.
const InlineCommits = 300

// stepTime bounds the commits one transaction of the background build
// applies; refreshing their notes takes about as long again. Readers see
// each transaction's commits as it ends; other processes' catch-ups and
// people's edits get the index between them. Shorter steps cost the build
// time: each transaction writes its pages and its full-text segments.
const stepTime = 500 * time.Millisecond

// Progress reports a long rebuild: stage is "history", "commits", "notes"
// or "vectors" (total 0: unknown).
type Progress func(stage string, done, total int)

// Catcher brings the derived index to the branch. It is safe for
// concurrent use.
type Catcher struct {
	repo      *gitver.Repo
	idx       *index.DB
	workspace string
	// buildPath is the build's lock (flock) and progress: the process
	// holding the lock builds, and writes there how far it has come.
	buildPath string
	// gone is the error for a branch that no longer exists although the
	// index holds its history.
	gone func(last gitver.Hash) error
	logf func(format string, args ...any)
	// inBackground: CatchUp leaves a long catch-up to the background
	// build (Options.InBackground).
	inBackground bool
	inline       int           // InlineCommits, or the Options'
	step         time.Duration // stepTime, or the Options'

	mu       sync.Mutex
	building bool   // this process builds in the background
	status   Status // of this process's build
	// lastWalk is NoteFromGit's last walk of the commits the index does
	// not hold yet; walking is open while this process's build walks them
	// (its walk becomes lastWalk).
	lastWalk *fromGitWalk
	walking  chan struct{}
	closed   chan struct{}
	wg       sync.WaitGroup
}

// Options configure a Catcher.
type Options struct {
	// Workspace is the name full addresses carry (links are read by it).
	Workspace string
	// BuildPath is the file that locks the background build and holds its
	// progress, beside the index.
	BuildPath string
	// Gone is the error for a branch that no longer exists although the
	// index holds its history.
	Gone func(last gitver.Hash) error
	// Logf, when set, is told what a background build failed at.
	Logf func(format string, args ...any)
	// InBackground makes CatchUp leave a catch-up of more than
	// InlineCommits commits to a build in the background, for a server,
	// whose callers must be answered within a second. Without it, CatchUp
	// always brings the index to the branch itself, however long that
	// takes: for a command run by a person, who sees it finish.
	InBackground bool
	// InlineCommits and Step replace InlineCommits and stepTime when
	// positive (tests build histories of a few commits in steps).
	InlineCommits int
	Step          time.Duration
}

// New returns the catch-up of idx to repo's branch.
func New(repo *gitver.Repo, idx *index.DB, opts Options) *Catcher {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c := &Catcher{repo: repo, idx: idx, workspace: opts.Workspace, buildPath: opts.BuildPath,
		gone: opts.Gone, logf: logf, inBackground: opts.InBackground, inline: InlineCommits, step: stepTime,
		closed: make(chan struct{})}
	if opts.InlineCommits > 0 {
		c.inline = opts.InlineCommits
	}
	if opts.Step > 0 {
		c.step = opts.Step
	}
	return c
}

// Close stops this process's background build, at the end of its current
// transaction, and waits for it.
func (c *Catcher) Close() {
	c.mu.Lock()
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// Status is how far a background build has come.
type Status struct {
	// Done and Total count the commits applied and to apply; Total is 0
	// while the history is still being walked, Walked commits so far.
	Done   int `json:"done"`
	Total  int `json:"total"`
	Walked int `json:"walked"`
	// Started is when the commits began to be applied.
	Started time.Time `json:"started"`
}

// String says how far the build has come, for a caller told to retry and
// for the operator.
func (s Status) String() string {
	if s.Total == 0 {
		if s.Walked == 0 {
			return "the index is being built"
		}
		return fmt.Sprintf("the index is being built: %s commits of history read", thousands(s.Walked))
	}
	msg := fmt.Sprintf("the index is being built: %s of %s commits", thousands(s.Done), thousands(s.Total))
	if s.Done > 0 && !s.Started.IsZero() {
		left := time.Since(s.Started) * time.Duration(s.Total-s.Done) / time.Duration(s.Done)
		msg += fmt.Sprintf(", about %d s", int(left.Seconds())+1)
	}
	return msg
}

// thousands writes n with thousands separated by commas.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Building is the error of a catch-up left to the background build: the
// index is too far behind the branch to wait for. It is ErrUnavailable.
type Building struct{ Status Status }

func (b *Building) Error() string { return b.Status.String() + "; retry" }

// Unwrap makes a Building error ErrUnavailable.
func (b *Building) Unwrap() error { return ErrUnavailable }

// CatchUp brings the index to the branch's current commit and returns that
// commit and its cursor. For a Catcher InBackground, while a build runs
// (in this process or another) or when the index is more than
// InlineCommits behind, it leaves the work to that build (started here
// unless one runs) and returns a *Building error saying how far it has
// come.
//
// It is cheap when nothing moved (one ref read and one query). hint gives
// the changes of commits the caller just made, so they need not be diffed
// again; extra runs in the same index transaction.
func (c *Catcher) CatchUp(hint map[gitver.Hash][]gitver.PathChange, extra func(*index.Tx) error) (gitver.Hash, int, error) {
	head, err := c.repo.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	indexed, seq, err := c.idx.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	if head.IsZero() && !indexed.IsZero() {
		return gitver.ZeroHash, 0, c.gone(indexed)
	}
	if indexed == head && extra == nil {
		return head, seq, nil
	}
	if indexed != head && c.inBackground {
		if st, ok := c.Building(); ok {
			return head, seq, &Building{st}
		}
		far, err := c.far(head)
		if err != nil {
			return gitver.ZeroHash, 0, err
		}
		if far {
			c.startBuild()
			st, _ := c.Building()
			return head, seq, &Building{st}
		}
	}
	return c.FollowMove(hint, extra)
}

// FollowMove brings the index to the branch's current commit in one
// transaction, however far behind it is, and returns that commit and its
// cursor: for the move a writer just made, whose index must follow it.
// It does not look first, as CatchUp does, for after a move the index is
// behind the branch. hint gives the changes of the commits moved onto, so
// they need not be diffed again; extra runs in the same transaction.
func (c *Catcher) FollowMove(hint map[gitver.Hash][]gitver.PathChange, extra func(*index.Tx) error) (head gitver.Hash, seq int, err error) {
	err = c.idx.Update(func(tx *index.Tx) error {
		// The branch is read inside the index's write transaction: another
		// process may have caught up meanwhile, to a newer commit than ours.
		if head, seq, err = c.SyncToBranch(tx, hint); err != nil || extra == nil {
			return err
		}
		return extra(tx)
	})
	return head, seq, err
}

// SyncToBranch brings the index in tx to the branch's current commit,
// however far, and returns that commit and its cursor.
func (c *Catcher) SyncToBranch(tx *index.Tx, hint map[gitver.Hash][]gitver.PathChange) (gitver.Hash, int, error) {
	head, err := c.repo.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	indexed, seq, err := tx.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	if head.IsZero() && !indexed.IsZero() {
		return gitver.ZeroHash, 0, c.gone(indexed)
	}
	if indexed != head {
		seq, err = c.sync(tx, head, hint, nil)
	}
	return head, seq, err
}

// Rebuild makes the index in tx again from git, up to the branch's current
// commit, and returns its cursor.
func (c *Catcher) Rebuild(tx *index.Tx, progress Progress) (int, error) {
	if err := tx.Reset(); err != nil {
		return 0, err
	}
	head, err := c.repo.Head()
	if err != nil {
		return 0, err
	}
	return c.sync(tx, head, nil, progress)
}

// far says whether more than c.inline commits that head reaches are
// missing from the index. It walks at most that many.
func (c *Catcher) far(head gitver.Hash) (bool, error) {
	far := false
	err := c.idx.Read(func(s *index.Snapshot) error {
		missing := 0
		seen := map[gitver.Hash]bool{}
		for stack := []gitver.Hash{head}; len(stack) > 0; {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if h.IsZero() || seen[h] {
				continue
			}
			seen[h] = true
			if _, ok, err := s.CommitOf(h); err != nil || ok {
				if err != nil {
					return err
				}
				continue
			}
			if missing++; missing > c.inline {
				far = true
				return nil
			}
			ci, err := c.repo.ReadCommit(h)
			if err != nil {
				return err
			}
			stack = append(stack, ci.Parents...)
		}
		return nil
	})
	return far, err
}

// Building says whether a background build is under way, in this process
// or in another, and how far it has come. An index at the branch is never
// being built, whoever holds the build's lock for a last look.
func (c *Catcher) Building() (Status, bool) {
	if head, err := c.repo.Head(); err == nil {
		if at, _, err := c.idx.Head(); err == nil && at == head {
			return Status{}, false
		}
	}
	c.mu.Lock()
	building, st := c.building, c.status
	c.mu.Unlock()
	if building && (st.Total > 0 || st.Walked > 0) {
		return st, true
	}
	f, err := os.Open(c.buildPath)
	if err != nil {
		return st, building
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		// No process builds; this one may be about to.
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return st, building
	}
	if raw, err := os.ReadFile(c.buildPath); err == nil {
		_ = json.Unmarshal(raw, &st) // half written: no figures this time
	}
	return st, true
}

// startBuild starts the background build unless this process runs one.
func (c *Catcher) startBuild() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
		return
	default:
	}
	if c.building {
		return
	}
	c.building, c.status = true, Status{}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		err := c.build()
		c.mu.Lock()
		c.building = false
		c.mu.Unlock()
		if err != nil {
			c.logf("the derived index could not be built in the background (the next read tries again): %v", err)
		}
	}()
}

// build takes the build's lock, waiting while another process holds it,
// and brings the index to the branch in steps.
func (c *Catcher) build() error {
	f, err := os.OpenFile(c.buildPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return err
		}
		// Another process builds: this one's reads show its progress,
		// and take over should it die.
		select {
		case <-c.closed:
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	defer c.keepWalk(nil) // the build's walk may be the whole history
	err = c.buildSteps(f)
	_ = f.Truncate(0) // no progress to show: the lock says none runs
	return err
}

// buildSteps brings the index to the branch one transaction of about
// stepTime at a time, each ending at a commit where the index is whole,
// until it is at the branch.
func (c *Catcher) buildSteps(f *os.File) error {
	for {
		head, err := c.repo.Head()
		if err != nil {
			return err
		}
		var indexed gitver.Hash
		var plan *syncPlan
		seq := 0
		walked := c.walkBegins()
		err = c.idx.Read(func(s *index.Snapshot) error {
			if indexed, seq, err = s.Head(); err != nil || indexed == head {
				return err
			}
			plan, err = c.planSync(s, head, indexed, 0, func(_ string, walked, _ int) {
				c.report(f, Status{Walked: walked})
			})
			return err
		})
		if err == nil && indexed != head && plan.reachesIndexed {
			// Writes meanwhile count their notes' versions along the
			// same walk (NoteFromGit): they need not walk the history
			// again.
			c.keepWalk(&fromGitWalk{indexed: indexed, seq: seq, head: head, order: plan.order})
		}
		walked()
		if err != nil || indexed == head {
			return err
		}
		if head.IsZero() {
			return c.gone(indexed)
		}
		if !plan.reachesIndexed {
			// A reset or a rewritten history far from the index: cut back
			// and caught up in one transaction, as rare as it is.
			if err := c.idx.Update(func(tx *index.Tx) error {
				_, _, err := c.SyncToBranch(tx, nil)
				return err
			}); err != nil {
				return err
			}
			continue
		}
		st := Status{Total: len(plan.order), Started: time.Now()}
		c.report(f, st)
		for st.Done < len(plan.order) {
			select {
			case <-c.closed:
				return nil
			default:
			}
			moved := false
			next := st.Done
			err := c.idx.Update(func(tx *index.Tx) error {
				at, seq, err := tx.Head()
				if err != nil || at != indexed {
					moved = true // another process caught up meanwhile: plan again
					return err
				}
				if err := tx.Bulk(); err != nil {
					return err
				}
				refresh := map[string]bool{}
				start, told := time.Now(), time.Now()
				for next < len(plan.order) {
					if seq, err = c.apply(tx, plan, next, next+1, seq, nil, refresh, nil); err != nil {
						return err
					}
					next++
					if plan.closed[next-1] && time.Since(start) > c.step {
						break
					}
					if time.Since(told) > c.step {
						// A step can only end where the index is whole:
						// the commits a merge brings are applied in one
						// transaction with it. Its progress is told as
						// it goes, though readers see none of it yet.
						told = time.Now()
						c.report(f, Status{Total: st.Total, Done: next, Started: st.Started})
					}
				}
				if err := c.refreshNotes(tx, refresh, nil); err != nil {
					return err
				}
				return tx.SetHead(plan.order[next-1].Hash)
			})
			if err != nil {
				return err
			}
			if moved {
				break
			}
			indexed = plan.order[next-1].Hash
			st.Done = next
			c.report(f, st)
		}
	}
}

// report records how far the build has come, for this process's callers
// and, in the build's file, for other processes'.
func (c *Catcher) report(f *os.File, st Status) {
	c.mu.Lock()
	c.status = st
	c.mu.Unlock()
	raw, _ := json.Marshal(st)
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(raw, 0)
	}
}
