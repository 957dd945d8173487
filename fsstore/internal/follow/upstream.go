package follow

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Upstream is where a write counts, chosen once (at Open, and again by
// SetRemote): the local branch (localboard), or the board's git remote,
// which the local branch follows (gitremote). Every difference between a
// board with a remote and one without is a method here, so that the write
// path asks it once instead of testing for a remote. Bringing the local
// branch to what the upstream holds is the Follower's (follow.go).
type Upstream interface {
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

// Race bounds how long a write keeps starting over because other
// clones' pushes came first, or it held back for their turns: the one
// back-off of every loop that pushes.
type Race struct {
	op, uri string
	lost    int       // races lost
	since   time.Time // when the write first lost, or held back
}

// NewRace is the race of a write, op on uri ("" for a batch).
func NewRace(op, uri string) *Race { return &Race{op: op, uri: uri} }

// Lost is how many races the write lost so far.
func (r *Race) Lost() int { return r.lost }

// Begin starts the clock, once.
func (r *Race) Begin() {
	if r.since.IsZero() {
		r.since = time.Now()
	}
}

// Lose counts a race lost.
func (r *Race) Lose() {
	r.lost++
	r.Begin()
}

// Over refuses the write as a conflict once it has raced for longer than
// MaxRemoteRace.
func (r *Race) Over() error {
	if r.since.IsZero() || time.Since(r.since) <= MaxRemoteRace {
		return nil
	}
	return fail.Errorf(r.op, r.uri, fail.ErrConflict, "other clones kept pushing first (%d times in %s); try again", r.lost, MaxRemoteRace)
}

// Pause is a random wait that grows with each race lost, so that clones
// racing for the remote do not meet again: up to 5 ms after the first
// loss, 80 ms after the fifth and later.
func (r *Race) Pause() {
	time.Sleep(time.Duration(rand.Int64N(int64(5*time.Millisecond) << min(r.lost-1, 4))))
}

const (
	// MaxRemoteRace bounds how long a write keeps starting over because
	// other clones' pushes came first. A write that lost must fetch before
	// it pushes again, while a writer that keeps winning need not: one
	// clone writing in a loop can hold another off for as long as it
	// writes (until pushes are batched), so the bound is generous.
	MaxRemoteRace = 30 * time.Second
	// MaxMoves bounds how often a write starts over because a person's
	// git commit moved the branch under it.
	MaxMoves = 20
)
