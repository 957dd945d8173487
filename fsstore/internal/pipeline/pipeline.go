// Package pipeline is how a tool write reaches the branch: the queue, the
// batch built in one hold of the write lock, its chain published where
// writes count and moved onto the branch, then the answers.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/batch"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/fail"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/follow"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/mover"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The write queue: how a tool write reaches the branch. Writes that come
// to one process while it commits others wait in its queue
// (fsstore/internal/batch), and go together in the next batch (group
// commit): each its own commit, checked against its own expect_version,
// none answered before the branch holds it. With one engine per board
// (cmd/internal/engine), every agent's writes come to one process, and
// batch there.
//
// A batch runs straight down in one hold of the write lock (commitRound):
// the upkeep once, the writes built as a chain in memory, the branch moved
// once for them all (Mover.CommitChain), then the answers. A write that
// comes alone is a batch of one.
//
// On a board with a remote, a write counts once the remote took it, and a
// push costs tens of milliseconds (a host's rate limits, seconds). The
// round then pushes the chain, never by force, before the branch moves to
// it: the push is the compare-and-swap against every clone's writes.
// Writes that come meanwhile wait in the queue for the next batch. When
// another clone pushed first, the clone fetches and follows the remote,
// and the batch is built again on what it holds, each write checked
// against its expect_version anew (pushBatch). Reads never see a write
// the remote has not taken. Nothing of a batch outlives its round: a
// process killed before the push leaves nothing that counts, and one
// killed after it leaves writes the remote holds, which the clone follows.

// batchLinger is how long a leader waits for more writes once writers
// are seen writing together (batch.Queue.Linger): a commit costs ten
// times as much.
const batchLinger = 3 * time.Millisecond

// Pipeline is the part for tool writes: the queue, and the build of a
// batch in one hold of the write lock (tx.go). Before a build it has
// people adopt the notes' own edits; its commits reach the upstream, and
// what other clones published reaches the branch, through the follower,
// and the branch moves through the mover.
type Pipeline struct {
	repo     Git
	name     string // the workspace's, which addresses carry
	idx      *index.DB
	catch    *catchup.Catcher
	hist     *history.History
	commits  *commits.Builder
	lock     func(fn func() error) error
	mover    *mover.Mover
	people   Preparer
	follower *follow.Follower
	logf     func(format string, args ...any)
	reach    func(step string)
	// queue holds this process's tool writes waiting to be built.
	queue batch.Queue[*queuedWrite]
	// chainDiffs remembers what the commits of a batch's chain changed;
	// guarded by the write lock.
	chainDiffs map[gitver.Hash][]gitver.PathChange
}

// Git is what the pipeline needs of the board's repository: the branch,
// the commits of a batch's chain and their objects, and the packs a batch
// writes its objects in.
type Git interface {
	Head() (gitver.Hash, error)
	ReadCommit(h gitver.Hash) (*gitver.CommitInfo, error)
	ReadBlob(h gitver.Hash) ([]byte, error)
	PathBlob(commit gitver.Hash, path string) (gitver.Hash, error)
	Changes(c *gitver.CommitInfo) ([]gitver.PathChange, error)
	IsAncestor(a, b gitver.Hash) (bool, error)
	WorkTree() gitver.WorkTree
	WriteStaged() (string, error)
	DropStaged()
	PublishPacks(shas []string) ([]string, error)
	ReleasePacks(names []string)
	MergeSmallPacks() error
}

// Preparer readies the board for a batch's writes of the notes keys,
// in the hold of the write lock that builds them (people.People.Prepare).
type Preparer interface {
	Prepare(keys ...string) error
}

// Options are what a Pipeline is handed: the board's parts it works
// through, and the functions it tells the engine through.
type Options struct {
	Git      Git
	Name     string // the workspace's name, which addresses carry
	Index    *index.DB
	Catch    *catchup.Catcher
	History  *history.History
	Commits  *commits.Builder
	Mover    *mover.Mover
	People   Preparer
	Follower *follow.Follower
	// Lock runs fn holding the workspace's write lock.
	Lock func(fn func() error) error
	Logf func(format string, args ...any)
	// Reach marks a step for the crash tests.
	Reach func(step string)
}

// New is the pipeline of the board opts describe.
func New(opts Options) *Pipeline {
	q := &Pipeline{repo: opts.Git, name: opts.Name, idx: opts.Index, catch: opts.Catch, hist: opts.History,
		commits: opts.Commits, lock: opts.Lock, mover: opts.Mover, people: opts.People, follower: opts.Follower,
		logf: opts.Logf, reach: opts.Reach}
	q.queue.Linger = batchLinger
	return q
}

// maxChain bounds a batch's chain, as far as a write built on it reads.
const maxChain = 1000

// submit makes one tool write. Writes that come to this process meanwhile
// wait in the queue, and one of their callers, the leader, commits them
// all as one batch (publishWrites). unfinished hears of a failure after
// the write counted (the remote or the branch took it).
func (q *Pipeline) Submit(writer, op, uri string, attempt func(*Tx) error, unfinished func(error)) error {
	it := &queuedWrite{op: op, uri: uri, attempt: attempt, unfinished: unfinished}
	q.queue.Submit(writer, it, q.publishWrites)
	return it.err
}

// queuedWrite is one tool write waiting for its batch.
type queuedWrite struct {
	op, uri string
	// attempt builds the write (updateLocked) in the transaction it is
	// given; it runs again when the batch is built again.
	attempt    func(*Tx) error
	unfinished func(error)
	err        error // the answer, once its batch ran

	mine *builtWrite // its commit, once built
}

// publishWrites commits items and answers them: on a board whose branch
// is where writes count, in one hold of the write lock (commitBatch); with
// a remote, in rounds that each push the batch's chain before the branch
// moves to it (pushBatch).
func (q *Pipeline) publishWrites(items []*queuedWrite) {
	if q.follower.Up().OnBranch() {
		q.commitBatch(items)
		return
	}
	q.pushBatch(items)
}

// pushBatch commits items on a board with a remote. Each round is
// commitBatch's, in one hold of the write lock, with the chain published
// before the branch moves (commitRound). Between rounds, outside the lock,
// the clone waits until it may publish (upstream.Await) and learns what
// other clones published: when one came first, the batch is built again on
// it, every write checked against its expect_version anew, with the writes
// that came meanwhile.
func (q *Pipeline) pushBatch(items []*queuedWrite) {
	race := follow.NewRace("write", "")
	fetched := false // this batch fetched to answer a conflict
	moves := 0       // rounds a person's commit made start over
	open := items
	for len(open) > 0 {
		if err := race.Over(); err != nil {
			answerAll(open, err)
			return
		}
		if q.follower.Up().Await(race.Lost() == 0) {
			race.Begin()
			// The clone that waited has likely pushed meanwhile: what it
			// pushed is learned now, rather than from a refusal.
			if _, err := q.followRemote(); err != nil {
				answerAll(open, err)
				return
			}
			continue
		}
		// The writes that came while this batch waited (for the pacing,
		// for another clone's turn, or to build again on a race it lost)
		// go with it, not in a push after it: a push that lands then
		// carries every write waiting on the clone.
		open = append(open, q.queue.Join(maxChain-len(open))...)
		var r round
		err := q.lock(func() error {
			var err error
			r, err = q.commitRound(open)
			return err
		})
		switch {
		case errors.Is(err, fail.ErrRemoteMoved):
			// A person's edit, pushed on its own before the batch, lost
			// a race: the clone follows the remote already.
			race.Lose()
		case errors.Is(err, gitver.ErrRemoteMoved):
			// Another clone pushed first, or announced that it waits for
			// its turn: the batch is built again on what the remote holds.
			if _, ferr := q.followRemote(); ferr != nil {
				answerAll(r.next, ferr)
				return
			}
			if race.Begin(); !errors.Is(err, gitver.ErrOthersWaiting) {
				race.Lose()
			}
		case err != nil:
			answerAll(r.next, err)
			return
		case !r.moved:
			if moves++; moves >= follow.MaxMoves {
				answerAll(r.next, fail.Errorf("write", "", fail.ErrConflict,
					"the branch kept moving under the write (someone is committing in a loop); try again"))
				return
			}
		}
		if !fetched {
			// This clone may be behind the remote, where the writes count:
			// a conflict is answered against what it holds now.
			conflicts := slices.DeleteFunc(slices.Clone(open), func(it *queuedWrite) bool {
				return !errors.Is(it.err, fail.ErrConflict) || slices.Contains(r.next, it)
			})
			if len(conflicts) > 0 {
				fetched = true
				if moved, err := q.followRemote(); err == nil && moved {
					r.next = append(r.next, conflicts...)
				}
			}
		}
		open = r.next
	}
}

// followRemote learns what the upstream holds now and brings the local
// branch to it; moved says the branch moved.
func (q *Pipeline) followRemote() (moved bool, err error) {
	if err := q.follower.Up().Learn(context.Background()); err != nil {
		return false, q.follower.Failure(err)
	}
	err = q.lock(func() error {
		moved, err = q.follower.FollowMoved()
		return err
	})
	return moved, err
}

func answerAll(items []*queuedWrite, err error) {
	for _, it := range items {
		it.err = err
	}
}

// commitBatch commits items, the writes waiting in this process, on a
// board whose branch is where writes count (no remote), straight down in
// one hold of the write lock: the upkeep once for them all (People.Prepare:
// a killed writer's journal finished, the repairs, people's edits to their
// notes committed); each write built on the one before as its own commit,
// checked against its own expect_version, its objects in memory
// (buildWrite); the chain moved onto the branch once (Mover.CommitChain),
// its objects made durable in the same round as the journal and the files;
// then every write answered. A write that came alone is a batch of one,
// its objects written loose. When a person's commit moves the branch
// before the chain does, the batch starts over from the upkeep, every
// write built again on it; a write that changed nothing on a note another
// write of the batch changed waits for that one, and is built again after
// the move.
func (q *Pipeline) commitBatch(items []*queuedWrite) {
	open := items
	err := q.lock(func() error {
		for moves := 0; len(open) > 0; {
			if moves >= follow.MaxMoves {
				return fail.Errorf("write", "", fail.ErrConflict, "the branch kept moving under the write (someone is committing in a loop); try again")
			}
			r, err := q.commitRound(open)
			open = r.next
			switch {
			case err != nil:
				return err
			case !r.moved:
				moves++ // a person's commit came first: built again on it
			}
		}
		return nil
	})
	if err != nil {
		answerAll(open, err)
	}
}

// round is what one commitRound left.
type round struct {
	// next is the writes left for the next round: those that waited for
	// another of the batch, all of them when the round started over, and
	// those a failure leaves without an answer.
	next []*queuedWrite
	// moved is false when the branch moved under the round (a person's
	// commit), which then changed nothing and answered none.
	moved bool
	// pushed says the round pushed its chain to the remote.
	pushed bool
}

// commitRound is one pass of a batch over open, in one hold of the write
// lock: the upkeep, the writes built as a chain, the chain pushed (with a
// remote), the branch moved to it, the writes answered. A push the remote
// refused is gitver.ErrRemoteMoved, with every write left for the next
// round. The caller holds the write lock.
func (q *Pipeline) commitRound(open []*queuedWrite) (r round, err error) {
	defer q.repo.DropStaged()
	var keys []string
	for _, it := range open {
		if key, ok := q.keyOf(it.uri); ok {
			keys = append(keys, key)
		}
	}
	if err := q.people.Prepare(keys...); errors.Is(err, fail.ErrBranchMoved) {
		return round{next: open}, nil
	} else if err != nil {
		return round{next: open}, err // fail.ErrRemoteMoved: a person's edit lost a race to another clone
	}
	head, err := q.repo.Head()
	if err != nil {
		return round{next: open}, err
	}
	built := builtTip{head: head, tip: head}
	var chain []*queuedWrite
	for _, it := range open {
		it.mine, it.err = nil, nil
		mine, waits, err := q.buildWrite(it.uri, it.attempt, &built)
		switch {
		case errors.Is(err, fail.ErrBranchMoved):
			return round{next: open}, nil
		case waits:
			r.next = append(r.next, it) // built again once the write it waits for is on the branch
		case mine != nil:
			it.mine = mine
			chain = append(chain, it)
		default:
			it.err = err // answered: refused, or without a commit
		}
	}
	r.moved = true
	if len(chain) == 0 {
		return r, nil
	}
	q.reach("built")
	last := chain[len(chain)-1].mine
	bm := mover.Move{From: head, To: last.commit, Reason: history.OwnMove + subject(last.info.Message),
		Alongside: last.pending.Write, Changes: last.diff, Fresh: true}
	var published []string
	if len(chain) > 1 {
		// One pack for the batch's objects, synced with the journal and
		// the files; each commit's changes are known from its build, and
		// the batch's are theirs, added up.
		bm.Reason = fmt.Sprintf("%scommit %d writes", history.OwnMove, len(chain))
		bm.Commits = map[gitver.Hash][]gitver.PathChange{}
		diffs := make([][]gitver.PathChange, len(chain))
		for i, it := range chain {
			bm.Commits[it.mine.commit], diffs[i] = it.mine.diff, it.mine.diff
		}
		bm.Changes = AddedUp(diffs)
		bm.Alongside = func() error {
			sha, err := q.repo.WriteStaged()
			if err != nil || sha == "" {
				return err
			}
			published, err = q.repo.PublishPacks([]string{sha})
			return err
		}
	}
	defer func() {
		if len(published) > 0 {
			// The branch names their objects, or nothing does: git may
			// pack them, or drop them.
			q.repo.ReleasePacks(published)
			if err := q.repo.MergeSmallPacks(); err != nil {
				q.logf("merge the small packs of grouped writes: %v", err)
			}
		}
	}()
	if !q.follower.Up().OnBranch() {
		// The chain counts once the remote took it: its objects are
		// written where git's push finds them, and it is pushed before
		// the branch moves.
		err := q.pushChain(&bm, chain)
		switch {
		case errors.Is(err, gitver.ErrRemoteMoved):
			// Nothing of the round landed, and a write refused in it was
			// judged against the chain before it (a conflict with a
			// write of the batch): every write is built again on what
			// the remote holds. A write sent again after its engine
			// died may have landed by that engine's push, which only
			// what the remote holds shows (writtenAs).
			return round{next: open}, err
		case err != nil:
			return round{next: append(chain, r.next...)}, err
		}
		r.pushed = true
	}
	moved, err := q.mover.CommitChain(bm, len(chain))
	switch {
	case r.pushed && !moved:
		// The remote holds the chain: the writes stand. A person's
		// commit moved the branch before it could (or what kept it from
		// moving is said in err): the branch follows the remote.
		err = errors.Join(err, q.follower.Follow())
		if err != nil {
			for _, it := range chain {
				it.unfinished(err)
			}
		}
	case !moved && err == nil:
		return round{next: open}, nil // a person's commit came first: built again on it
	case !moved:
		return round{next: append(chain, r.next...)}, err
	case err != nil:
		// Past the commit point: acknowledged, with a warning.
		for _, it := range chain {
			it.unfinished(err)
		}
	}
	return r, nil
}

// pushChain writes the objects of bm's chain and pushes it. A push that
// broke off is looked for on the remote: when the remote took it, the
// writes stand; when it cannot be told, the writes are answered
// fail.ErrOutcomeUnknown. The caller holds the write lock.
func (q *Pipeline) pushChain(bm *mover.Move, chain []*queuedWrite) error {
	if err := bm.Alongside(); err != nil {
		return err
	}
	bm.Alongside = nil
	up := q.follower.Up()
	err := up.Publish(bm.To)
	if err == nil || errors.Is(err, gitver.ErrRemoteMoved) {
		return err
	}
	if ferr := up.Learn(context.Background()); ferr != nil {
		return fmt.Errorf("%w: %w", fail.ErrOutcomeUnknown, q.follower.Failure(err))
	}
	theirs, terr := up.Published()
	if terr != nil {
		return fmt.Errorf("%w: %w", fail.ErrOutcomeUnknown, errors.Join(q.follower.Failure(err), terr))
	}
	if took, terr := q.repo.IsAncestor(bm.To, theirs); terr == nil && took {
		q.logf("a push that failed (%v) reached the remote: its %d writes stand", err, len(chain))
		return nil
	}
	return q.follower.Failure(err)
}

// AddedUp is what a chain of commits changed, from each commit's changes
// from the one before, in order: each file's blob before the first that
// changed it and after the last, by path; a file brought back to what it
// was is no change.
func AddedUp(diffs [][]gitver.PathChange) []gitver.PathChange {
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
