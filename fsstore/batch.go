package fsstore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// On a board with a remote, a write counts once a push holds it, and a push
// costs tens of milliseconds (a host's rate limits, more). Writes that come
// to one process while a push is in flight wait in a queue, and go out
// together in the next push: each is still its own commit, checked against
// its expect_version and built on the one before it, in the order they
// came; one push carries them all, and the branch moves to the last once
// the remote took it. A push the remote refuses (another clone came first)
// fetches and builds them all again on what it holds, each checked again.
//
// A queue of one takes the path of a single write. One writer leads at a
// time: it takes the queue, publishes it, and hands the lead to the first
// write that queued meanwhile.

// queuedWrite is one tool write waiting for a push.
type queuedWrite struct {
	op, uri string
	// attempt builds the write on the branch, or in a batch on the write
	// before it (commitLocked); it may run again when the batch starts over.
	attempt func() error
	// unfinished hears of a failure after the push took the write.
	unfinished func(error)
	err        error
	done       chan struct{} // closed when answered
	lead       chan struct{} // closed when it is this write's turn to lead
}

// writeQueue is this process's queue of writes for the remote.
type writeQueue struct {
	mu      sync.Mutex
	waiting []*queuedWrite
	leading bool // a writer is publishing
	// lastBatch is how many writes the last batch held.
	lastBatch int
}

// batchLinger is how long a batch waits for more writes once writers are
// seen writing together: a push costs ten times as much.
const batchLinger = 3 * time.Millisecond

// writeBatch is what a batch has built so far; commitLocked and noteAt
// read it while it is set.
type writeBatch struct {
	base, tip gitver.Hash
	// notes are the notes the batch wrote, as its writes see them.
	notes map[string]index.Note
	// built is how many writes have a commit in the batch.
	built int
}

// queueWrite runs a tool write through the queue and returns its answer.
func (w *Workspace) queueWrite(op, uri string, attempt func() error, unfinished func(error)) error {
	q := &queuedWrite{op: op, uri: uri, attempt: attempt, unfinished: unfinished,
		done: make(chan struct{}), lead: make(chan struct{})}
	wq := &w.queue
	wq.mu.Lock()
	wq.waiting = append(wq.waiting, q)
	lead := !wq.leading
	wq.leading = true
	wq.mu.Unlock()
	if !lead {
		select {
		case <-q.done:
			return q.err
		case <-q.lead:
		}
	}
	w.leadBatch()
	<-q.done
	return q.err
}

// leadBatch publishes the writes waiting now, answers them, and hands the
// lead on to a write that queued meanwhile.
func (w *Workspace) leadBatch() {
	w.pacePush()
	wq := &w.queue
	wq.mu.Lock()
	if wq.lastBatch > 1 {
		// Writers are busy: the ones the last batch answered are about
		// to write again. A moment's wait lets them join this batch
		// rather than make a push of their own.
		wq.mu.Unlock()
		time.Sleep(batchLinger)
		wq.mu.Lock()
	}
	items := wq.waiting
	wq.waiting = nil
	wq.lastBatch = len(items)
	wq.mu.Unlock()
	err := w.withWriteLock(func() error {
		w.publishTogether(items)
		return nil
	})
	for _, it := range items {
		if err != nil {
			it.err = err
		}
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

// publishTogether publishes items: alone, as a single write; together, as
// one batch. The caller holds the write lock.
func (w *Workspace) publishTogether(items []*queuedWrite) {
	if len(items) == 1 {
		it := items[0]
		it.err = w.whileBranchMoves(it.op, it.uri, it.attempt)
		return
	}
	keys := make([]string, 0, len(items))
	for _, it := range items {
		if key, ok := w.keyOf(it.uri); ok && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	fetched := false
	var since time.Time
	for moves, lost := 0, 0; ; {
		if moves+lost > 0 {
			if err := w.repair(); err != nil {
				answerAll(items, err)
				return
			}
		}
		// People's edits to the notes go first, each its own commit, as
		// for a single write; then the batch builds on the branch.
		if _, _, err := w.commitEditsLocked(keys); err != nil && !errors.Is(err, ErrWorkTreeBusy) {
			answerAll(items, err)
			return
		}
		head, err := w.repo.Head()
		if err != nil {
			answerAll(items, err)
			return
		}
		b := &writeBatch{base: head, tip: head, notes: map[string]index.Note{}}
		w.batch = b
		moved := false
		for _, it := range items {
			if it.err = it.attempt(); errors.Is(it.err, errBranchMoved) {
				moved = true
				break
			}
		}
		w.batch = nil
		if moved {
			if moves++; moves >= maxMoves {
				answerAll(items, errorf("write", "", ErrConflict,
					"the branch kept moving under the write (someone is committing in a loop); try again"))
				return
			}
			continue
		}
		conflicts := slices.ContainsFunc(items, func(it *queuedWrite) bool { return errors.Is(it.err, ErrConflict) })
		if b.built == 0 {
			// Nothing to push. A conflict is answered against what the
			// remote holds now: this clone may be behind it.
			if conflicts && !fetched {
				fetched = true
				if moved, err := w.refreshFromRemoteLocked(); err == nil && moved {
					moves++
					continue
				}
			}
			return
		}
		err = w.publish(b.tip)
		switch {
		case err == nil:
			// The remote holds the writes: they stand, whatever happens
			// here. A person's commit that moved the local branch
			// meanwhile is rebuilt on them by the next fetch.
			_, err := w.moveBranchWithFiles(b.base, b.tip, fmt.Sprintf("%spublish %d writes", ownMove, b.built))
			if err != nil {
				for _, it := range items {
					if it.err == nil {
						it.unfinished(err)
					}
				}
			}
			return
		case errors.Is(err, errRemoteMoved):
			// Another clone pushed first: every write is checked again
			// against what it pushed, and built on it.
			lost++
			if lost == 1 {
				since = time.Now()
			}
			if time.Since(since) > maxRemoteRace {
				answerAll(items, errorf("write", "", ErrConflict, "other clones kept pushing first (%d times in %s); try again",
					lost, maxRemoteRace))
				return
			}
			time.Sleep(time.Duration(rand.Int64N(int64(5*time.Millisecond) << min(lost-1, 4))))
			w.pacePush() // a refused push counts against a host's limit too
		default:
			// Nothing was pushed: the writes built did not happen.
			for _, it := range items {
				if it.err == nil {
					it.err = err
				}
			}
			return
		}
	}
}

func answerAll(items []*queuedWrite, err error) {
	for _, it := range items {
		it.err = err
	}
}

// keyOf is the note key a tool write's address names.
func (w *Workspace) keyOf(uri string) (string, bool) {
	a, err := w.parseAddress(uri)
	if err != nil {
		return "", false
	}
	return a.Short(), true
}

// addToBatch builds one write's commit on the batch's tip and writes its
// objects; the branch moves once the whole batch is pushed. The caller holds
// the write lock.
func (w *Workspace) addToBatch(parent gitver.Hash, changes []fileChange, author gitver.Signature, message string) (gitver.Hash, error) {
	b := w.batch
	if parent != b.tip {
		return gitver.ZeroHash, errBranchMoved
	}
	if wt := w.repo.WorkTree(); wt.Operation != "" {
		return gitver.ZeroHash, busyWithGit(wt)
	}
	blobs := make(map[string]gitver.Hash, len(changes))
	var contents [][]byte
	for _, c := range changes {
		var h gitver.Hash
		if !c.deleted {
			h = gitver.BlobHash(c.content)
			contents = append(contents, c.content)
		}
		blobs[c.path] = h
	}
	pending, err := w.repo.BuildCommit(gitver.CommitRequest{Parent: parent, Changes: blobs, Blobs: contents, Author: author, Message: message})
	if err != nil {
		return gitver.ZeroHash, err
	}
	if err := pending.Write(); err != nil {
		return gitver.ZeroHash, err
	}
	b.tip = pending.Hash
	b.built++
	return pending.Hash, nil
}

// pushPacing is the least time between two pushes to the board's remote:
// git config blackboard.pushInterval (a duration, "10s"), else 10 seconds
// for a host that asks for at most 6 pushes a minute to one repository,
// else none.
func (w *Workspace) pushPacing() time.Duration {
	if w.remote == "" {
		return 0
	}
	if d, ok := w.repo.ConfigDuration("blackboard", "pushInterval"); ok {
		return d
	}
	if gitver.HostPacesPushes(w.repo.RemoteURL(w.remote)) {
		return 10 * time.Second
	}
	return 0
}

// pacePush waits, before a batch is taken, until the pacing allows the
// next push; writes that come meanwhile join the batch.
func (w *Workspace) pacePush() {
	pace := w.pushPacing()
	if pace <= 0 {
		return
	}
	if wait := time.Until(w.repo.LastPush().Add(pace)); wait > 0 {
		time.Sleep(wait)
	}
}
