package gitremote

import (
	"context"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Taking turns with the other clones of the board's remote. A clone that
// lost a race to push must fetch, rebuild its writes on what won and push
// again; the clone that won pushes its next writes at once, and where that
// round takes the loser longer than the winner's push (a slow disk, a busy
// host) the loser never gets a write through. So a clone that keeps losing
// (starved) announces a turn on the remote (gitver's turns.go), saying how
// many races in a row it lost and how long it needs from losing to pushing
// again; every push of the branch is refused while a turn this clone has
// not seen is announced, and a clone then holds its next push back for
// that long (doubled for each race in a row the waiting clone lost, so a
// waiter whose estimate was short gets through the next time), while its
// writes gather for that push; a clone that waits itself holds back for
// the clones whose turns came before its own (yield). The waiting clone
// pushes meanwhile; had it lost once more, it announces again. A waiting
// clone whose writes all conflicted when built again keeps its turn: its
// agents read again and write within the hold. (Given up at once, the turn
// went to the clone that won, whose agents read what they just pushed:
// on three shared counters it then took most increments.)

const (
	// announceAfter and starveAfter say when a clone that keeps losing
	// announces its turn: after so many races lost in a row, or so long
	// since the first.
	announceAfter = 3
	starveAfter   = 300 * time.Millisecond
	// firstNeeds is how long a clone that lost its first race is thought
	// to need before it pushes again, until it measured it.
	firstNeeds = 200 * time.Millisecond
	// maxYield bounds how long a clone holds its push back for another
	// that says it needs longer (or died waiting): then it goes anyway.
	maxYield = 10 * time.Second
)

// turns is this process's part in taking turns; guarded by Remote.mu.
type turns struct {
	losses int       // races lost in a row
	lostAt time.Time // when the last was lost
	// firstLostAt is when the first of the races lost in a row was.
	firstLostAt time.Time
	needs       time.Duration // how long, the last time, from a lost race to pushing again
	// held: the clone held a push back for another's turn since its last
	// push went through.
	held bool
	// seen is when this process first saw each turn it holds back for.
	seen map[gitver.Hash]time.Time
}

// lost records a race lost to another clone's push.
func (t *turns) lost() {
	t.losses++
	t.lostAt = time.Now()
	if t.losses == 1 {
		t.firstLostAt = t.lostAt
	}
}

// starved reports whether the clone has lost long enough to announce its
// turn: an announcement costs a push of its own and refuses every other
// clone's next push, while a clone that lost once or twice most often
// gets its next push through.
func (t *turns) starved() bool {
	return t.losses >= announceAfter || time.Since(t.firstLostAt) >= starveAfter
}

// pushing records that the clone pushes now: how long it needed since it
// lost.
func (t *turns) pushing() {
	if !t.lostAt.IsZero() {
		t.needs = time.Since(t.lostAt)
		t.lostAt = time.Time{}
	}
}

// won records a push the remote took.
func (t *turns) won() { t.losses, t.held = 0, false }

// yield holds the clone's next push back while other clones wait for
// their turn: each from when this process first saw its announcement, for
// the hold its announcement asks (holdFor). A clone that waits itself holds
// back only for the clones that announced before it, so that the waiting
// clones push one at a time, in the order of the turns chain, instead of
// racing again all at once (three of four clones then lost every race,
// and paid a push, a fetch and an announcement for each). The hold ends
// early once the remote's branch or turns move (a waiting clone, or
// another, pushed): the remote is asked every so often meanwhile, and the
// caller then fetches and asks again, for the clones still waiting. It
// reports whether it held the push back.
func (r *Remote) yield() bool {
	r.mu.Lock()
	until, every := r.turns.waiting(r.git, r.name)
	r.mu.Unlock()
	if time.Until(until) <= 0 {
		return false
	}
	branch, turns, err := r.git.KnownRefs(r.name)
	if err != nil {
		return false
	}
	r.mu.Lock()
	r.turns.held = true
	r.mu.Unlock()
	for wait := time.Until(until); wait > 0; wait = time.Until(until) {
		time.Sleep(min(wait, every))
		nowBranch, nowTurns, err := r.git.RemoteRefs(context.Background(), r.name)
		if err != nil || nowBranch != branch || nowTurns != turns {
			break // someone pushed, or a clone's turn changed: look again
		}
	}
	return true
}

const (
	// recentTurns is how many of the last turns are read to find the
	// clones that wait.
	recentTurns = 32
	// staleTurn: a turn announced longer ago than this (by the clocks of
	// the two machines) is no longer waited for.
	staleTurn = 10 * time.Second
)

// waiting returns until when this clone holds its pushes back for the
// other clones that wait for their turn (zero when none does), and how
// often to ask the remote meanwhile. A clone that waits itself, with its
// turn on the chain, holds back for those whose turns came before it.
func (t *turns) waiting(git Git, remote string) (until time.Time, every time.Duration) {
	announced, err := git.RecentTurns(remote, recentTurns)
	if err != nil || len(announced) == 0 {
		return time.Time{}, 0
	}
	me, err := git.CloneID()
	if err != nil {
		return time.Time{}, 0
	}
	now := time.Now()
	if t.seen == nil {
		t.seen = map[gitver.Hash]time.Time{}
	}
	for h, at := range t.seen {
		if now.Sub(at) > staleTurn {
			delete(t.seen, h)
		}
	}
	every = 250 * time.Millisecond
	decided := map[string]bool{}
	for _, a := range announced { // newest first: a clone's last word counts
		if decided[a.Clone] {
			continue
		}
		decided[a.Clone] = true
		if a.Taken || now.Sub(a.When).Abs() > staleTurn {
			continue
		}
		if a.Clone == me {
			if t.losses > 0 {
				// This clone's own turn: the clones before it go first,
				// those after it wait for it.
				until, every = time.Time{}, 250*time.Millisecond
			}
			continue
		}
		first, ok := t.seen[a.Hash]
		if !ok {
			first, t.seen[a.Hash] = now, now
		}
		if u := first.Add(holdFor(a.Turn)); u.After(until) {
			until = u
		}
		// Asked often enough to lose little of the hold, seldom enough not
		// to load the remote: every ask is a git process, and on a busy
		// machine asking every 20 ms took CPU from the clones' pushes
		// (four clones of four writers: 27-32 writes/s, against 30-36
		// asking every 40 ms, side by side).
		every = min(every, max(a.Needs/2, 40*time.Millisecond))
	}
	return until, every
}

// holdFor is how long a clone holds its pushes back for a turn: twice
// what the waiting clone needs, and twice that again for each race it lost
// in a row since (its estimate was short, or others did not hold back),
// maxYield at most.
func holdFor(turn gitver.Turn) time.Duration {
	hold := turn.Needs
	if hold <= 0 {
		hold = firstNeeds
	}
	return min(hold<<(1+min(max(turn.Lost-1, 0), 4)), maxYield)
}
