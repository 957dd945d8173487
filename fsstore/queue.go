package fsstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The write queue: how a tool write reaches the branch. Writes that come
// to one process while it commits others wait in its queue, and go
// together in the next batch (group commit): each its own commit, checked
// against its own expect_version, none answered before the branch holds
// it. With one engine per board (cmd/internal/engine), every agent's
// writes come to one process, and batch there.
//
// On a board without a remote, a batch runs straight down in one hold of
// the write lock (commitBatch): the upkeep once, the writes built as a
// chain in memory, the branch moved once for them all (move.go), then the
// answers. A write that comes alone is a batch of one.
//
// On a board with a remote, a write counts once a push holds it, and a
// push costs tens of milliseconds (a host's rate limits, seconds). Writes
// made while a push is in flight, by any process of the clone, go out
// together in the next push, in two steps:
//
//  1. Under the write lock, each is built (tx.go) as its own commit,
//     checked against its expect_version, on top of the clone's pending
//     writes (pending.go): those built and not yet pushed, a chain from
//     the branch whose tip a file in .git names. Its commit becomes the
//     new tip. Writes that come to one process together are built in one
//     hold of the lock.
//  2. Under the publish lock (publish.go), one writer at a time pushes the
//     whole chain (never by force) and moves the branch to it, files and
//     all (move.go): every write in it is then acknowledged. A writer
//     that finds its write on the branch already is done. When the remote
//     refuses the push (another clone came first), the clone follows the
//     remote and the chain is rebased on it: each write keeps its changes,
//     and so its expect_version check and its version, unless the other
//     clone's commits counted a version of its note; that write and those
//     after it are dropped, and their writers build them again on what
//     the remote holds, checked again.
//
// Reads never see pending writes: the branch holds only what the remote
// took. A writer killed after step 1 leaves its write to be published by
// the next writer (it counts if it reaches the remote, as a push that went
// through before the kill does). Every answer is what git holds: a write
// whose publish failed is refused only once the pending writes are dropped
// (settleRefused).

// batchLinger is how long a publisher waits for more writes once writers
// are seen writing together: a push costs ten times as much.
const batchLinger = 3 * time.Millisecond

// pipeline is the part for tool writes: the queue, the build of a group
// in one hold of the write lock (tx.go), the pending writes' record
// (pending.go) and their publishing (publish.go). Before a build it has
// people adopt the note's own edits; its commits reach the branch through
// the mover, and the remote through up.
type pipeline struct {
	*board
	lock   *writeLock
	mover  *mover
	people *people
	up     upstream
	// queue holds this process's tool writes waiting to be built; pub
	// publishes them.
	queue writeQueue
	pub   publisher
	// pending is the record of the clone's pending writes (pending.go).
	pending pendingFile
	// pendingDiffs remembers what pending commits changed; guarded by the
	// write lock.
	pendingDiffs map[gitver.Hash][]gitver.PathChange
}

// submit makes one tool write: built on the pending writes, then
// published with them. Writes that come to this process meanwhile wait in
// a queue, and one of them, the leader, builds them all in one hold of the
// write lock and publishes them together. unfinished hears of a failure
// after the write counted (the remote or the branch took it).
func (q *pipeline) submit(writer, op, uri string, attempt func(*writeTx) error, unfinished func(error)) error {
	it := &queuedWrite{op: op, uri: uri, attempt: attempt, unfinished: unfinished,
		done: make(chan struct{}), lead: make(chan struct{})}
	wq := &q.queue
	wq.mu.Lock()
	wq.waiting = append(wq.waiting, it)
	wq.wrote(writer)
	lead := !wq.leading
	wq.leading = true
	select {
	case wq.arrivals() <- struct{}{}:
	default:
	}
	wq.mu.Unlock()
	if !lead {
		select {
		case <-it.done:
			return it.err
		case <-it.lead:
		}
	}
	q.leadWrites()
	<-it.done
	return it.err
}

// queuedWrite is one tool write waiting for a push.
type queuedWrite struct {
	op, uri string
	// attempt builds the write (updateLocked) in the transaction it is
	// given; it runs again when the write is dropped and built again.
	attempt    func(*writeTx) error
	unfinished func(error)
	err        error
	done       chan struct{} // closed when answered
	lead       chan struct{} // closed when it is this write's turn to lead

	mine             *builtWrite // its commit, once built
	blockedByPending bool        // its conflict may be with pending writes
	// inChain says the pending writes hold it, rebased on what another
	// clone pushed: it is published with them, not built again.
	inChain bool
}

// writeQueue is this process's queue of tool writes.
type writeQueue struct {
	mu      sync.Mutex
	waiting []*queuedWrite
	leading bool // a writer is leading
	// lastBatch is how many writes the last batch held.
	lastBatch int
	// arrived hears of each write queued, for a leader waiting for the
	// last batch's writers to come back; made by arrivals.
	arrived chan struct{}
	// lastWrote is when each writer (a caller's name) last queued a write.
	lastWrote map[string]time.Time
}

// activeWindow is how recently a writer must have written to count as
// writing still: an agent answered writes again within a millisecond or
// two.
const activeWindow = 50 * time.Millisecond

// wrote records a write of writer's. The caller holds mu.
func (wq *writeQueue) wrote(writer string) {
	now := time.Now()
	if wq.lastWrote == nil || len(wq.lastWrote) > 4096 {
		wq.lastWrote = map[string]time.Time{}
	}
	wq.lastWrote[writer] = now
}

// writing is how many writers wrote within activeWindow. The caller holds
// mu.
func (wq *writeQueue) writing() int {
	n := 0
	for w, at := range wq.lastWrote {
		if time.Since(at) <= activeWindow {
			n++
		} else {
			delete(wq.lastWrote, w)
		}
	}
	return n
}

// arrivals is the channel that hears of each write queued. The caller
// holds mu.
func (wq *writeQueue) arrivals() chan struct{} {
	if wq.arrived == nil {
		wq.arrived = make(chan struct{}, 1)
	}
	return wq.arrived
}

// waitFor waits until n writes are queued, at most for max. The caller
// holds mu, which is let go meanwhile.
func (wq *writeQueue) waitFor(n int, max time.Duration) {
	timeout := time.NewTimer(max)
	defer timeout.Stop()
	for len(wq.waiting) < n {
		arrived := wq.arrivals()
		wq.mu.Unlock()
		select {
		case <-arrived:
			wq.mu.Lock()
		case <-timeout.C:
			wq.mu.Lock()
			return
		}
	}
}

// leadWrites builds and publishes the writes waiting now, answers them,
// and hands the lead on to a write that queued meanwhile.
func (q *pipeline) leadWrites() {
	wq := &q.queue
	wq.mu.Lock()
	if n := max(wq.lastBatch, wq.writing()); n > 1 {
		// Writers are busy: those the last batch answered, and the
		// others writing now, are about to write again, and join this
		// batch: it waits for them, a moment at most. (Waiting for the
		// last batch's writers alone, batches stayed as small as the
		// first: 4-5 writes of eight agents.)
		wq.waitFor(n, batchLinger)
	}
	items := wq.waiting
	wq.waiting = nil
	wq.lastBatch = len(items)
	wq.mu.Unlock()
	q.publishWrites(items)
	for _, it := range items {
		close(it.done)
	}
	wq.mu.Lock()
	if len(wq.waiting) > 0 {
		close(wq.waiting[0].lead)
	} else {
		wq.leading = false
	}
	wq.mu.Unlock()
}

// publishWrites builds items on the pending writes and publishes them,
// again for those dropped, until each has its answer. On a board whose
// branch is where writes count, they are committed at once (commitBatch).
func (q *pipeline) publishWrites(items []*queuedWrite) {
	if q.up.onBranch() {
		q.commitBatch(items)
		return
	}
	race := remoteRace{op: "write"}
	open := items
	for waits := 0; len(open) > 0; {
		// Build every open write, in one hold of the write lock, and
		// record the pending writes' tip once for them all.
		unbuilding := q.pub.announceBuilding()
		err := q.lock.with(func() error {
			// A killed writer's journal is finished before the builds
			// compare the work tree (people.prepare).
			if err := q.mover.recover(); err != nil {
				return err
			}
			var built builtTip
			defer q.repo.DropStaged()
			for _, it := range open {
				if it.inChain {
					continue
				}
				it.mine, it.blockedByPending, it.err = q.buildPending(it.op, it.uri, it.attempt, &built)
			}
			if built.tip.IsZero() {
				return nil
			}
			// The group's objects, as one pending pack, unsynced: the
			// publisher syncs it with the chain's other packs, and makes
			// them git's, before the branch names them.
			sha, err := q.repo.WriteStaged()
			if err != nil {
				return err
			}
			packs := q.repo.StillPending(q.pending.packs())
			if sha != "" {
				packs = append(packs, sha)
			}
			return q.pending.save(built.tip, packs...)
		})
		unbuilding()
		if err != nil {
			answerAll(open, err)
			return
		}
		var last *builtWrite
		var blocked []*queuedWrite
		for _, it := range open {
			switch {
			case it.mine != nil:
				last = it.mine
			case it.blockedByPending && waits < maxMoves:
				blocked = append(blocked, it)
			}
		}
		if last == nil && len(blocked) == 0 {
			return // each has its answer (an error)
		}
		if last != nil {
			reach("built")
		}
		// Publish: the chain holds every write built above.
		acked, finishErr, err := q.publishPending(last)
		if err != nil {
			for _, it := range open {
				if slices.Contains(blocked, it) {
					it.err = err
				}
			}
			q.settleRefused(open, err)
			return
		}
		head, err := q.repo.Head()
		if err != nil {
			answerAll(open, err)
			return
		}
		next := blocked
		if len(blocked) > 0 {
			waits++ // a conflict with pending writes: answered once they are pushed
		}
		for _, it := range open {
			if it.mine == nil {
				continue
			}
			// This round built its writes in one chain, each on the one
			// before, last at its tip: when last counted, they all did,
			// even if the branch no longer holds them (a person's reset
			// dropped them a moment after; the next write brings them
			// back, and one built again would be answered conflict
			// against its own commit). All, that is, that were built on
			// the branch last was built on: a person's edit committed
			// before a later write's build moves the branch, and the
			// writes built before it are not in last's chain.
			found := acked && it.mine.head == last.head
			if !found {
				if found, err = q.landed(head, it.mine); err != nil {
					it.err = err
					continue
				}
			}
			if !found {
				// Another process may have published it, and a person's
				// reset dropped it a moment after: the repairs bring it
				// back before it is looked for again, or it would be
				// built again and answered conflict against its own
				// commit.
				if found, err = q.landedAfterRepairs(it.mine); err != nil {
					it.err = err
					continue
				}
			}
			if found {
				if finishErr != nil {
					it.unfinished(finishErr)
				}
				continue
			}
			// Not on the branch, but maybe still pending: a repair that
			// followed the remote (the watcher's, between this round's
			// publish and its look) rebased the chain on another clone's
			// push. Built again, the write would be answered conflict
			// against its own pending commit.
			if it.inChain, err = q.pendingHolds(it.mine); err != nil {
				it.err = err
				continue
			}
			next = append(next, it) // dropped, or pending: built again, or published, on what holds now
		}
		if len(next) > len(blocked) {
			race.lose()
			if err := race.over(); err != nil {
				answerAll(next, err)
				return
			}
		}
		open = next
	}
}

// pendingHolds reports whether the pending writes hold the write, as
// built or rebased.
func (q *pipeline) pendingHolds(mine *builtWrite) (held bool, err error) {
	err = q.lock.with(func() error {
		head, err := q.repo.Head()
		if err != nil {
			return err
		}
		tip, chain, _, err := q.readPending(head)
		if err != nil || len(chain) == 0 {
			return err
		}
		held, err = q.findWrite(tip, head, mine)
		return err
	})
	return held, err
}

// settleRefused answers the built writes of items whose publish failed
// with err, so that each answer is what git holds: a write the branch holds
// by now (another writer published it) is acknowledged, with the failure
// as a warning; the others are refused, and the pending writes are dropped
// first, so that no writer publishes a refused write later (their own
// writers find them dropped and build them again). It takes the write lock
// without finishing or repairing anything first: on a full disk that work
// may be what fails, and the answer must not wait for it.
func (q *pipeline) settleRefused(items []*queuedWrite, err error) {
	settle := func() error {
		head, herr := q.repo.Head()
		if herr != nil {
			return herr
		}
		// With a remote, that is where a write counts: a push that went
		// through counts, whether or not the branch followed.
		if theirs, terr := q.up.tracking(); terr != nil {
			return terr
		} else if !theirs.IsZero() {
			head = theirs
		}
		refused := false
		for _, it := range items {
			if it.mine == nil {
				continue
			}
			held, ferr := q.findWrite(head, it.mine.head, it.mine)
			switch {
			case ferr != nil:
				return ferr
			case held:
				it.unfinished(err)
			default:
				it.err, refused = err, true
			}
		}
		if refused {
			return q.pending.drop()
		}
		return nil
	}
	// The publish lock first, as a publisher takes them: no push or move
	// of the branch is half made while the writes are looked for.
	unlock, serr := q.pub.lockPublish()
	if serr == nil {
		serr = q.lock.with(settle)
		unlock()
	}
	if serr != nil {
		// Whether the writes are held cannot be told: none is answered
		// as refused while it may still be published.
		q.logf("after a failed publish, the pending writes could not be dropped: %v", serr)
		for _, it := range items {
			if it.mine != nil {
				it.err = fmt.Errorf("%w: %w", ErrOutcomeUnknown, errors.Join(err, serr))
			}
		}
	}
}

// landedAfterRepairs is landed, looked for on the branch once the repairs
// have brought back what a person's reset dropped from it.
func (q *pipeline) landedAfterRepairs(mine *builtWrite) (found bool, err error) {
	err = q.lock.with(func() error {
		// Each look repairs first, so none is wanted between them.
		noRepair := func() error { return nil }
		return whileBranchMoves("write", "", noRepair, q.up, func() error {
			if err := q.people.repair(); err != nil {
				return err
			}
			head, err := q.repo.Head()
			if err != nil {
				return err
			}
			found, err = q.landed(head, mine)
			return err
		})
	})
	return found, err
}

// ErrOutcomeUnknown means a write failed at a point where whether git
// holds it cannot be told (it may still be published): the writer reads
// the note before writing it again. Every other failure of a write means
// git does not hold it.
var ErrOutcomeUnknown = errors.New("whether the write was committed cannot be told")

// lastBatchSize is how many of this process's writes the last batch held.
func (q *pipeline) lastBatchSize() int {
	q.queue.mu.Lock()
	defer q.queue.mu.Unlock()
	return q.queue.lastBatch
}

func answerAll(items []*queuedWrite, err error) {
	for _, it := range items {
		it.err = err
	}
}

// commitBatch commits items, the writes waiting in this process, on a
// board whose branch is where writes count (no remote), straight down in
// one hold of the write lock: the upkeep once for them all (people.prepare:
// a killed writer's journal finished, the repairs, people's edits to their
// notes committed); each write built on the one before as its own commit,
// checked against its own expect_version, its objects in memory
// (buildWrite); the chain moved onto the branch once (mover.commitChain),
// its objects made durable in the same round as the journal and the files;
// then every write answered. A write that came alone is a batch of one,
// its objects written loose. When a person's commit moves the branch
// before the chain does, the batch starts over from the upkeep, every
// write built again on it; a write that changed nothing on a note another
// write of the batch changed waits for that one, and is built again after
// the move.
func (q *pipeline) commitBatch(items []*queuedWrite) {
	open := items
	err := q.lock.with(func() error {
		for moves := 0; len(open) > 0; {
			if moves >= maxMoves {
				return errorf("write", "", ErrConflict, "the branch kept moving under the write (someone is committing in a loop); try again")
			}
			next, moved, err := q.commitRound(open)
			switch {
			case err != nil:
				open = next // those the failure leaves without an answer
				return err
			case !moved:
				moves++ // a person's commit came first: built again on it
			default:
				open = next
			}
		}
		return nil
	})
	if err != nil {
		answerAll(open, err)
	}
}

// commitRound is one pass of commitBatch over open: it returns the writes
// left for the next (those that waited for another of the batch), and
// moved is false when the branch moved under the round, which then
// changed nothing and answered none. On a failure, next is the writes it
// leaves without an answer. The caller holds the write lock.
func (q *pipeline) commitRound(open []*queuedWrite) (next []*queuedWrite, moved bool, err error) {
	defer q.repo.DropStaged()
	uris := make([]string, len(open))
	for i, it := range open {
		uris[i] = it.uri
	}
	if err := q.people.prepare(uris...); errors.Is(err, errBranchMoved) {
		return open, false, nil
	} else if err != nil {
		return open, false, err
	}
	head, err := q.repo.Head()
	if err != nil {
		return open, false, err
	}
	built := builtTip{head: head, tip: head}
	var chain []*queuedWrite
	for _, it := range open {
		it.mine, it.err = nil, nil
		mine, waits, err := q.buildWrite(it.uri, it.attempt, &built, true)
		switch {
		case errors.Is(err, errBranchMoved):
			return open, false, nil
		case waits:
			next = append(next, it) // built again once the write it waits for is on the branch
		case mine != nil:
			it.mine = mine
			chain = append(chain, it)
		default:
			it.err = err // answered: refused, or without a commit
		}
	}
	if len(chain) == 0 {
		return next, true, nil
	}
	reach("built")
	last := chain[len(chain)-1].mine
	bm := branchMove{from: head, to: last.commit, reason: ownMove + subject(last.info.Message),
		alongside: last.pending.Write, changes: last.diff, fresh: true}
	var published []string
	if len(chain) > 1 {
		// One pack for the batch's objects, synced with the journal and
		// the files; each commit's changes are known from its build, and
		// the batch's are theirs, added up.
		bm.reason = fmt.Sprintf("%scommit %d writes", ownMove, len(chain))
		bm.commits = map[gitver.Hash][]gitver.PathChange{}
		diffs := make([][]gitver.PathChange, len(chain))
		for i, it := range chain {
			bm.commits[it.mine.commit], diffs[i] = it.mine.diff, it.mine.diff
		}
		bm.changes = addedUp(diffs)
		bm.alongside = func() error {
			sha, err := q.repo.WriteStaged()
			if err != nil || sha == "" {
				return err
			}
			published, err = q.repo.PublishPacks([]string{sha})
			return err
		}
	}
	moved, err = q.mover.commitChain(bm, len(chain))
	if len(published) > 0 {
		// The branch names their objects, or nothing does: git may pack
		// them, or drop them.
		q.repo.ReleasePacks(published)
		if err := q.repo.MergeSmallPacks(); err != nil {
			q.logf("merge the small packs of grouped writes: %v", err)
		}
	}
	switch {
	case !moved && err == nil:
		return open, false, nil // a person's commit came first: built again on it
	case !moved:
		return append(chain, next...), false, err
	case err != nil:
		// Past the commit point: acknowledged, with a warning.
		for _, it := range chain {
			it.unfinished(err)
		}
	}
	return next, true, nil
}

// addedUp is what a chain of commits changed, from each commit's changes
// from the one before, in order: each file's blob before the first that
// changed it and after the last, by path; a file brought back to what it
// was is no change.
func addedUp(diffs [][]gitver.PathChange) []gitver.PathChange {
	byPath := map[string]*gitver.PathChange{}
	for _, diff := range diffs {
		for _, d := range diff {
			if c, ok := byPath[d.Path]; ok {
				c.New = d.New
			} else {
				byPath[d.Path] = &gitver.PathChange{Path: d.Path, Old: d.Old, New: d.New}
			}
		}
	}
	changes := make([]gitver.PathChange, 0, len(byPath))
	for _, c := range byPath {
		if c.Old != c.New {
			changes = append(changes, *c)
		}
	}
	slices.SortFunc(changes, func(x, y gitver.PathChange) int { return strings.Compare(x.Path, y.Path) })
	return changes
}

// unfinishedError is a failure past a write's commit point (the disk full
// while git's index or the derived index was written, say): the commit is
// on the branch, so the write happened and is acknowledged; what did not
// finish is finished from the journal by the next write, or by the next
// process that opens the workspace.
type unfinishedError struct {
	commit gitver.Hash
	err    error
}

func (e *unfinishedError) Error() string {
	return fmt.Sprintf("commit %s is on the branch, but finishing the write failed: %v", e.commit.Short(), e.err)
}

func (e *unfinishedError) Unwrap() error { return e.err }

// unfinished reports whether err is a failure past the commit point, and
// says so to the writer in a warning.
func unfinished(err error, version int) (warning string, ok bool) {
	var u *unfinishedError
	if !errors.As(err, &u) {
		return "", false
	}
	return fmt.Sprintf("version %d is committed, but putting it in place did not finish (the server's log says why); "+
		"the next write finishes it, so do not write it again", version), true
}
