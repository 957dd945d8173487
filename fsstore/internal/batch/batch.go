// Package batch is group commit: callers that submit work while a batch
// is being run wait in a queue, and go together in the next batch, run by
// one of them, the leader. A caller returns once its batch was run.
package batch

import (
	"slices"
	"sync"
	"time"
)

// ActiveWindow is how recently a writer must have submitted to count as
// writing still: an agent answered submits again within a millisecond or
// two.
const ActiveWindow = 50 * time.Millisecond

// Queue is a queue of items of type T waiting for their batch.
type Queue[T any] struct {
	// Linger is how long a leader waits for more items once writers are
	// seen writing together: a batch should cost much more than that.
	Linger time.Duration

	mu      sync.Mutex
	waiting []*entry[T]
	// running is the batch being run: the entries it began with, and
	// those it took along since (Join).
	running []*entry[T]
	leading bool // a caller is leading
	// lastBatch is how many items the last batch held.
	lastBatch int
	// arrived hears of each item queued, for a leader waiting for the
	// last batch's writers to come back; made by arrivals.
	arrived chan struct{}
	// lastWrote is when each writer (a caller's name) last submitted.
	lastWrote map[string]time.Time
}

type entry[T any] struct {
	item T
	done chan struct{} // closed when its batch was run
	lead chan struct{} // closed when it is this caller's turn to lead
}

// Submit queues item, from writer, and returns once a batch that held it
// was run: by this caller, when it leads, or by another. run is given the
// items waiting, in the order they came, and answers them; the leader
// then hands the lead to a caller that queued meanwhile.
func (q *Queue[T]) Submit(writer string, item T, run func(items []T)) {
	e := &entry[T]{item: item, done: make(chan struct{}), lead: make(chan struct{})}
	q.mu.Lock()
	q.waiting = append(q.waiting, e)
	q.wrote(writer)
	lead := !q.leading
	q.leading = true
	select {
	case q.arrivals() <- struct{}{}:
	default:
	}
	q.mu.Unlock()
	if !lead {
		select {
		case <-e.done:
			return
		case <-e.lead:
		}
	}
	q.runWaiting(run)
	<-e.done
}

// runWaiting runs the items waiting now as one batch, and hands the lead
// on to an item that queued meanwhile.
func (q *Queue[T]) runWaiting(run func(items []T)) {
	q.mu.Lock()
	if n := max(q.lastBatch, q.writing()); n > 1 {
		// Writers are busy: those the last batch answered, and the
		// others writing now, are about to submit again, and join this
		// batch: it waits for them, Linger at most. (Waiting for the
		// last batch's writers alone, batches stayed as small as the
		// first: 4-5 writes of eight agents.)
		q.waitFor(n, q.Linger)
	}
	q.running, q.waiting = q.waiting, nil
	items := itemsOf(q.running)
	q.mu.Unlock()
	run(items)
	q.mu.Lock()
	for _, e := range q.running {
		close(e.done)
	}
	q.lastBatch = len(q.running)
	q.running = nil
	if len(q.waiting) > 0 {
		close(q.waiting[0].lead)
	} else {
		q.leading = false
	}
	q.mu.Unlock()
}

// Join takes the items queued since the running batch began, at most
// limit of them, into that batch, and returns them: a batch that must be
// built again (its push lost a race, or it held back for another clone's
// turn) takes along the writes that came meanwhile, and they are answered
// with it, instead of waiting for a batch of their own after it. Only the
// running batch's run calls it.
func (q *Queue[T]) Join(limit int) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max(limit, 0), len(q.waiting))
	joined := q.waiting[:n:n]
	q.waiting = slices.Clone(q.waiting[n:])
	q.running = append(q.running, joined...)
	return itemsOf(joined)
}

func itemsOf[T any](entries []*entry[T]) []T {
	items := make([]T, len(entries))
	for i, e := range entries {
		items[i] = e.item
	}
	return items
}

// wrote records a submit of writer's. The caller holds mu.
func (q *Queue[T]) wrote(writer string) {
	if q.lastWrote == nil || len(q.lastWrote) > 4096 {
		q.lastWrote = map[string]time.Time{}
	}
	q.lastWrote[writer] = time.Now()
}

// writing is how many writers submitted within ActiveWindow. The caller
// holds mu.
func (q *Queue[T]) writing() int {
	n := 0
	for w, at := range q.lastWrote {
		if time.Since(at) <= ActiveWindow {
			n++
		} else {
			delete(q.lastWrote, w)
		}
	}
	return n
}

// arrivals is the channel that hears of each item queued. The caller
// holds mu.
func (q *Queue[T]) arrivals() chan struct{} {
	if q.arrived == nil {
		q.arrived = make(chan struct{}, 1)
	}
	return q.arrived
}

// waitFor waits until n items are queued, at most for max. The caller
// holds mu, which is let go meanwhile.
func (q *Queue[T]) waitFor(n int, max time.Duration) {
	timeout := time.NewTimer(max)
	defer timeout.Stop()
	for len(q.waiting) < n {
		arrived := q.arrivals()
		q.mu.Unlock()
		select {
		case <-arrived:
			q.mu.Lock()
		case <-timeout.C:
			q.mu.Lock()
			return
		}
	}
}
