package fsstore

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// upstream is where a write counts, chosen once (at Open, and again by
// SetRemote): the local branch (localOnly), or the board's git remote,
// which the local branch follows (gitRemote, remote.go). Every difference
// between a board with a remote and one without is a method here, so that
// the write path asks it once instead of testing for a remote.
type upstream interface {
	// onBranch reports that a write counts once the local branch holds
	// it: no remote. With a remote, a write counts once the remote took
	// it: a batch pushes its chain before the branch moves (pushBatch).
	onBranch() bool
	// offer makes commit, built on the local branch, count before the
	// branch moves to it. took says the remote took it: it stands from
	// now on, whatever happens here, and its objects are written. Another
	// clone's push that came first is errRemoteMoved, with the local
	// branch brought to it. The caller holds the write lock.
	offer(commit *gitver.PendingCommit) (took bool, err error)
	// push publishes tip, a chain of commits built on the local branch,
	// their objects written. gitver.ErrRemoteMoved: the remote moved on,
	// or another clone announced that it waits for its turn
	// (gitver.ErrOthersWaiting).
	push(tip gitver.Hash) error
	// awaitTurn waits before a push: until pacing allows it (first), and
	// while another clone takes its turn; yielded says it held back.
	awaitTurn(first bool) (yielded bool)
	// pushed records how a push went: won, or lost to another clone
	// (then this clone announces that it waits for its turn, with
	// announce, unless others wait: they go first).
	pushed(err error, othersWait bool) (announce func())
	// tracking is the commit where writes count as this clone last saw
	// it, when that is not the local branch; zero without a remote.
	tracking() (gitver.Hash, error)
	// fetch learns what the remote holds now.
	fetch(ctx context.Context) error
	// follow brings the local branch to the remote's, as last fetched.
	// The caller holds the write lock.
	follow() error
	// refresh fetches and follows; moved says the local branch moved.
	// The caller holds the write lock.
	refresh() (moved bool, err error)
	// failure words a failed push or fetch for the writer.
	failure(err error) error
}

// localOnly is a board without a remote: a write counts on the local
// branch, and there is nothing to push, fetch or follow.
type localOnly struct{}

func (localOnly) onBranch() bool                            { return true }
func (localOnly) offer(*gitver.PendingCommit) (bool, error) { return false, nil }
func (localOnly) push(gitver.Hash) error                    { return nil }
func (localOnly) awaitTurn(bool) bool                       { return false }
func (localOnly) pushed(error, bool) func()                 { return nil }
func (localOnly) tracking() (gitver.Hash, error)            { return gitver.ZeroHash, nil }
func (localOnly) fetch(context.Context) error               { return nil }
func (localOnly) follow() error                             { return nil }
func (localOnly) refresh() (bool, error)                    { return false, nil }
func (localOnly) failure(err error) error                   { return err }

// remoteRace bounds how long a write keeps starting over because other
// clones' pushes came first, or it held back for their turns: the one
// back-off of every loop that pushes.
type remoteRace struct {
	op, uri string
	lost    int       // races lost
	since   time.Time // when the write first lost, or held back
}

// begin starts the clock, once.
func (r *remoteRace) begin() {
	if r.since.IsZero() {
		r.since = time.Now()
	}
}

// lose counts a race lost.
func (r *remoteRace) lose() {
	r.lost++
	r.begin()
}

// over refuses the write as a conflict once it has raced for longer than
// maxRemoteRace.
func (r *remoteRace) over() error {
	if r.since.IsZero() || time.Since(r.since) <= maxRemoteRace {
		return nil
	}
	return errorf(r.op, r.uri, ErrConflict, "other clones kept pushing first (%d times in %s); try again", r.lost, maxRemoteRace)
}

// pause is a random wait that grows with each race lost, so that clones
// racing for the remote do not meet again: up to 5 ms after the first
// loss, 80 ms after the fifth and later.
func (r *remoteRace) pause() {
	time.Sleep(time.Duration(rand.Int64N(int64(5*time.Millisecond) << min(r.lost-1, 4))))
}
