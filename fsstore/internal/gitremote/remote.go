// Package gitremote is the upstream of a board whose branch follows a git
// remote (branch.<board>.remote in git's config, as `git clone` and
// `blackboard-mcp remote set` leave it): a write counts once the remote
// took it. It publishes a chain of commits, never by force, and learns
// what the other clones published; bringing the local branch to that is
// the caller's. It also keeps this clone's part in taking turns with the
// other clones (turns.go) and the pacing a host asks for, which no caller
// needs to know of: they show only as Await holding a publish back.
package gitremote

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Git is what the remote needs of the board's repository: its refs for
// the remote, the push and the fetch, and the turns ref beside the branch.
type Git interface {
	Tracking(remote string) (gitver.Hash, error)
	IsAncestor(a, b gitver.Hash) (bool, error)
	Push(ctx context.Context, remote string, commit gitver.Hash) error
	PushTaking(ctx context.Context, remote string, commit gitver.Hash, t gitver.Turn) error
	Fetch(ctx context.Context, remote string) error
	LastPush() time.Time
	RemoteURL(remote string) string
	ConfigDuration(section, key string) (time.Duration, bool)
	CloneID() (string, error)
	AnnounceTurn(ctx context.Context, remote string, t gitver.Turn) error
	RecentTurns(remote string, max int) ([]gitver.AnnouncedTurn, error)
	KnownRefs(remote string) (branch, turns gitver.Hash, err error)
	RemoteRefs(ctx context.Context, remote string) (branch, turns gitver.Hash, err error)
}

// Remote is the board's git remote as the place where writes count.
type Remote struct {
	git  Git
	name string // the remote's name in git's config
	logf func(format string, args ...any)
	// reach marks a step of a write for the crash tests.
	reach func(step string)

	mu    sync.Mutex // guards turns, and the announcement's fields
	turns turns
	// announceDue: the clone lost long enough that it announces its turn
	// after the next fetch (Learn).
	announceDue bool
	// announced is closed once the announcement in flight is made; nil
	// for none.
	announced chan struct{}
}

// New is the remote named name of git's repository. logf logs what does
// not fail a write; reach marks the step "pushed".
func New(git Git, name string, logf func(string, ...any), reach func(string)) *Remote {
	return &Remote{git: git, name: name, logf: logf, reach: reach}
}

// OnBranch is false: a write counts once the remote took it.
func (r *Remote) OnBranch() bool { return false }

// Name is the remote's name in git's config.
func (r *Remote) Name() string { return r.name }

// Published is the remote's branch as this clone last learned it.
func (r *Remote) Published() (gitver.Hash, error) { return r.git.Tracking(r.name) }

// Await waits until this clone may publish: for its announcement to be
// made, for the pacing a host asks for (first: the write's first try),
// and while other clones take their turns. held says it held the publish
// back for another clone, which has likely published meanwhile.
func (r *Remote) Await(first bool) (held bool) {
	r.mu.Lock()
	announced := r.announced
	r.mu.Unlock()
	if announced != nil {
		<-announced
	}
	if first {
		r.pace()
	}
	return r.yield()
}

// Publish makes tip the remote's branch: a chain of commits built on what
// this clone last learned the remote holds (Published), its objects
// written. gitver.ErrRemoteMoved: another clone published first (or tip
// is not built on what the remote holds), or announced that it waits for
// its turn (gitver.ErrOthersWaiting); Learn then learns what it holds.
// Any other error is the push's: whether the remote took tip can then be
// told only by learning what it holds.
func (r *Remote) Publish(tip gitver.Hash) error {
	if holds, err := r.holdsPublished(tip); err != nil || !holds {
		if err != nil {
			return err
		}
		return gitver.ErrRemoteMoved
	}
	r.mu.Lock()
	r.turns.pushing()
	taking, lost, needs := r.turns.losses > 0, r.turns.losses, r.turns.needs
	r.mu.Unlock()
	var err error
	if taking {
		err = r.pushTaking(tip, lost, needs)
	} else {
		err = r.git.Push(context.Background(), r.name, tip)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.turns.won()
		r.reach("pushed")
	case errors.Is(err, gitver.ErrOthersWaiting) && !r.turns.held:
		// Refused for another clone's turn, which this one had not seen:
		// no race lost, this clone holds back now.
	case errors.Is(err, gitver.ErrRemoteMoved):
		// A clone refused again after it held back counts it a race
		// lost: else one that always holds back for the others' turns,
		// and so is never refused for the branch, would never have a
		// turn of its own.
		r.turns.lost()
		r.announceDue = r.turns.starved()
	}
	return err
}

// pushTaking pushes tip saying that this clone took its turn.
func (r *Remote) pushTaking(tip gitver.Hash, lost int, needs time.Duration) error {
	id, err := r.git.CloneID()
	if err != nil {
		return err
	}
	return r.git.PushTaking(context.Background(), r.name, tip, gitver.Turn{Clone: id, Lost: lost, Needs: needs})
}

// holdsPublished reports whether commit holds what this clone last knew of
// the remote's branch: then pushing it only moves the remote forward.
func (r *Remote) holdsPublished(commit gitver.Hash) (bool, error) {
	theirs, err := r.git.Tracking(r.name)
	if err != nil || theirs.IsZero() || theirs == commit {
		return err == nil, err
	}
	return r.git.IsAncestor(theirs, commit)
}

// Learn fetches what the remote holds now. A clone that lost long enough
// announces its turn right after, while the caller follows what it
// learned: after the fetch, so that its turn follows the last one
// announced; Await waits for it.
func (r *Remote) Learn(ctx context.Context) error {
	if err := r.git.Fetch(ctx, r.name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.announceDue {
		return nil
	}
	r.announceDue = false
	done := make(chan struct{})
	r.announced = done
	turn := gitver.Turn{Lost: r.turns.losses, Needs: r.turns.needs}
	go func() {
		defer close(done)
		r.announce(turn)
	}()
	return nil
}

// announce announces this clone's turn on the remote. A failed
// announcement is no failure of the write: the push itself says whether
// the remote can be reached.
func (r *Remote) announce(turn gitver.Turn) {
	id, err := r.git.CloneID()
	if err == nil {
		turn.Clone = id
		err = r.git.AnnounceTurn(context.Background(), r.name, turn)
	}
	if err != nil {
		r.logf("announce this clone's turn to push on %s: %v", r.name, err)
	}
}

// pacing is the least time between two pushes to the remote: git config
// blackboard.pushInterval (a duration, "10s"), else 10 seconds for a host
// that asks for at most 6 pushes a minute to one repository, else none.
func (r *Remote) pacing() time.Duration {
	if d, ok := r.git.ConfigDuration("blackboard", "pushInterval"); ok {
		return d
	}
	if gitver.HostPacesPushes(r.git.RemoteURL(r.name)) {
		return 10 * time.Second
	}
	return 0
}

// pace waits until the pacing allows the next push; writes that come
// meanwhile join it.
func (r *Remote) pace() {
	pace := r.pacing()
	if pace <= 0 {
		return
	}
	if wait := time.Until(r.git.LastPush().Add(pace)); wait > 0 {
		time.Sleep(wait)
	}
}
