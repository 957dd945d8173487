package fsstore

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// upstream is where a write counts, chosen once (at Open, and again by
// SetRemote): the local branch (localboard), or the board's git remote,
// which the local branch follows (gitremote). Every difference between a
// board with a remote and one without is a method here, so that the write
// path asks it once instead of testing for a remote. Bringing the local
// branch to what the upstream holds is the follower's (follow.go).
type upstream interface {
	// OnBranch reports that a write counts once the local branch holds
	// it: no remote. With a remote, a write counts once the remote took
	// it: a batch publishes its chain before the branch moves (pushBatch).
	OnBranch() bool
	// Name is the remote's name in git's config, "" for none.
	Name() string
	// Await waits until this clone may publish (a host's pacing, other
	// clones' turns); held says it held back for another clone, which
	// has likely published meanwhile.
	Await(first bool) (held bool)
	// Publish publishes tip, a chain of commits built on the local
	// branch, their objects written. gitver.ErrRemoteMoved: another
	// clone published first, or waits for its turn
	// (gitver.ErrOthersWaiting). Another error leaves untold whether the
	// remote took tip.
	Publish(tip gitver.Hash) error
	// Learn learns what the upstream holds now.
	Learn(ctx context.Context) error
	// Published is where writes count as this clone last learned it,
	// when that is not the local branch; zero without a remote.
	Published() (gitver.Hash, error)
}

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
