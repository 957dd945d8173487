package fsstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/watch"
)

// WatchOptions configure Workspace.Watch. The zero value waits 150 ms of
// quiet per file and logs nothing.
type WatchOptions struct {
	// Debounce is how long a file must stay quiet before its change is
	// committed: an editor's save is several events.
	Debounce time.Duration
	// PollEvery is how often the whole work tree is compared when the
	// system cannot watch it (no inotify instance or watch left); 5 s when
	// zero.
	PollEvery time.Duration
	// Logf receives a line for each problem: a watch that failed, edits
	// that wait for git, a commit that failed and will be tried again.
	Logf func(format string, args ...any)
	// FetchEvery is how often a board with a remote fetches it, so that
	// reads follow the other clones; RemoteFetchEvery when zero.
	FetchEvery time.Duration
}

// RemoteFetchEvery is how often a watching server fetches the board's
// remote by default.
const RemoteFetchEvery = 2 * time.Second

// Watching commits people's edits while it runs.
type Watching struct {
	w        *Workspace
	watcher  *watch.Watcher // nil when polling or not started yet; guarded by mu
	kick     chan struct{}
	stop     chan struct{}
	done     sync.WaitGroup
	logf     func(format string, args ...any)
	once     sync.Once
	degraded sync.Once
	told     map[string]bool // skipped files already logged: once is enough
	waiting  string          // why edits wait, as last logged

	mu       sync.Mutex
	stopping bool     // set by Stop: a watcher started later is closed at once
	lease    *os.File // held while this process is the one that watches (watchLease)
}

// startWatcher is watch.Start; the tests make it fail, as a system out of
// inotify instances does.
var startWatcher = watch.Start

// retry bounds how long failed or waiting edits wait before another try.
const (
	firstRetry = time.Second
	maxRetry   = 30 * time.Second
	// unsettledRetry is how often a file being saved is looked at.
	unsettledRetry = 250 * time.Millisecond
)

// Watch commits every change people make to the work tree while the
// process runs: it watches every directory (fsnotify), and after a file has
// been quiet for a moment compares it with git and commits what differs, as
// the person's version. It also compares the whole work tree once, right
// away and in the background: changes made while no server ran are
// committed too. When the system cannot watch (inotify limits), it compares
// the whole tree every PollEvery and before every write instead, and says
// so through Logf.
func (w *Workspace) Watch(opts WatchOptions) *Watching {
	if opts.PollEvery <= 0 {
		opts.PollEvery = 5 * time.Second
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ws := &Watching{w: w, kick: make(chan struct{}, 1), stop: make(chan struct{}), logf: logf, told: map[string]bool{}}
	// Watching a large tree takes a while (a watch per directory), and so
	// does comparing it: both happen in the background, so that a server
	// answers at once. A write meanwhile adopts the edits to its own notes
	// only, as with a watcher up: the whole tree is the watcher's to
	// compare, once it is up (start), and its comparison finds whatever
	// changed before. (Comparing it on the write's path made the first
	// write of a server on 100,000 notes wait 2.5-3.4 s.) Should the
	// system refuse to watch, writes compare the whole tree again (poll).
	w.SetWatched(true)
	ws.done.Go(ws.loop)
	ws.done.Go(func() {
		if ws.awaitLease() {
			ws.start(opts)
		}
	})
	ws.done.Go(ws.embedLoop)
	if !w.follower.Up().OnBranch() {
		if opts.FetchEvery <= 0 {
			opts.FetchEvery = RemoteFetchEvery
		}
		ws.done.Go(func() { ws.fetchLoop(opts.FetchEvery) })
	}
	return ws
}

// embedEvery is how often a watching server makes the vectors of notes
// that changed (EmbedPending).
const embedEvery = time.Second

// embedLoop makes the vectors of new and changed notes in the background,
// off the write path: a search meanwhile finds them by their words.
func (ws *Watching) embedLoop() {
	tick := time.NewTicker(embedEvery)
	defer tick.Stop()
	failing := failureLog{logf: ws.logf, what: "search by meaning",
		meanwhile: "notes are found by their words meanwhile", again: "working again"}
	for {
		select {
		case <-ws.stop:
			return
		case <-tick.C:
		}
		_, err := ws.w.vectors.EmbedPending(false, nil)
		if err == nil {
			// Held in memory before a search needs them: loading a large
			// board's takes longer than a search may.
			err = ws.w.idx.Read(ws.w.vectors.Refresh)
		}
		failing.note(err)
	}
}

// failureLog logs a background task's failure when it first happens and
// when it ends, not every time.
type failureLog struct {
	logf                   func(format string, args ...any)
	what, meanwhile, again string
	last                   string // the failure now, "" for none
}

func (f *failureLog) note(err error) {
	switch {
	case err != nil && err.Error() != f.last:
		f.last = err.Error()
		f.logf("%s: %v; %s", f.what, err, f.meanwhile)
	case err == nil && f.last != "":
		f.last = ""
		f.logf("%s: %s", f.what, f.again)
	}
}

// fetchLoop fetches the board's remote every period and brings the local
// branch to it. A failure is logged when it first happens and when it
// ends, not every time.
func (ws *Watching) fetchLoop(every time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-ws.stop
		cancel()
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	failing := failureLog{logf: ws.logf, what: "remote",
		meanwhile: "reads are served from this clone as it is, and writes wait for the remote", again: "reachable again"}
	for {
		select {
		case <-ws.stop:
			return
		case <-tick.C:
		}
		if last := ws.w.repo.LastSync(); !last.IsZero() && time.Since(last) < every {
			// Another process of the clone fetched, or a push went
			// through (which the remote takes only from a clone that
			// holds all it has): the branch is as current as a fetch
			// would make it. Sixteen servers on one clone fetch as one.
			continue
		}
		err := ws.w.FetchRemote(ctx)
		if ctx.Err() != nil {
			return
		}
		failing.note(err)
	}
}

// watchLease names the file whose lock (flock) the one watching server of
// a board holds, in .git. Every MCP client starts a server of its own, and
// each watched the whole tree: eight servers on one board each took every
// write's file events, read the files and compared them with git, eight
// times over, and with them the kernel's work of queuing the events; the
// writes went a fifth slower than with one watcher (172 writes/s against
// 214, eight writer processes). One server watches; the others stand by,
// and one of them takes over within leaseRetry when it stops or dies (the
// kernel lets a dead process's lock go). Their writes meanwhile adopt the
// edits to their own notes, as any write does, and leave the rest of the
// tree to the watching server.
const watchLease = "blackboard-watcher"

// leaseRetry is how often a server that stands by tries to take the lease.
const leaseRetry = time.Second

// awaitLease waits until this process holds the watch lease, and reports
// whether it does: false once Stop was called first.
func (ws *Watching) awaitLease() bool {
	var tick *time.Ticker
	for {
		if ws.takeLease() {
			return true
		}
		if tick == nil {
			tick = time.NewTicker(leaseRetry)
			defer tick.Stop()
		}
		select {
		case <-ws.stop:
			return false
		case <-tick.C:
		}
	}
}

// takeLease tries once to take the watch lease. A lease that cannot be
// made at all (a read-only .git) is taken as held: the process watches,
// as every server did before there was a lease.
func (ws *Watching) takeLease() bool {
	f, err := os.OpenFile(filepath.Join(ws.w.repo.GitDir(), watchLease), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return true
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return !errors.Is(err, unix.EWOULDBLOCK)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.stopping {
		f.Close()
		return false
	}
	ws.lease = f
	return true
}

// start starts the watcher (or polling) and asks for a comparison of the
// whole tree: changes made while no server was watching, or since the
// server that watched before stopped.
func (ws *Watching) start(opts WatchOptions) {
	w := ws.w
	watcher, err := startWatcher(w.dir, watch.Options{Debounce: opts.Debounce, Logf: ws.logf}, func(b watch.Batch) {
		if b.Incomplete {
			ws.degrade(opts.PollEvery)
		}
		w.FilesChanged(b.Paths, b.Rescan)
		ws.poke()
	})
	if err != nil {
		ws.logf("people's edits: cannot watch the work tree (%v); comparing it every %s and before every write instead", err, opts.PollEvery)
		ws.poll(opts.PollEvery)
	} else {
		ws.mu.Lock()
		if ws.stopping {
			ws.mu.Unlock()
			watcher.Close()
			return
		}
		ws.watcher = watcher
		ws.mu.Unlock()
		w.SetWatched(true)
	}
	w.FilesChanged(nil, true)
	ws.poke()
}

// poll compares the whole tree every period from now on, and before every
// write: what a watcher cannot do is done by comparing.
func (ws *Watching) poll(every time.Duration) {
	ws.w.SetWatched(false)
	ws.done.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ws.stop:
				return
			case <-t.C:
				ws.w.FilesChanged(nil, true)
				ws.poke()
			}
		}
	})
}

// degrade switches to polling, once, when part of the tree cannot be
// watched.
func (ws *Watching) degrade(every time.Duration) {
	ws.degraded.Do(func() {
		ws.logf("people's edits: some folders cannot be watched (see above); also comparing the whole tree every %s and before every write", every)
		ws.poll(every)
	})
}

func (ws *Watching) poke() {
	select {
	case ws.kick <- struct{}{}:
	default:
	}
}

// loop commits after every batch, and tries failed commits again later.
func (ws *Watching) loop() {
	var retry <-chan time.Time
	wait := firstRetry
	// What a person's git leaves for the workspace to put right makes no
	// event (a write into a replaced file, a checkout racing a write): it
	// is looked at every second while there may be some.
	repair := time.NewTicker(time.Second)
	defer repair.Stop()
	for {
		select {
		case <-ws.stop:
			return
		case <-ws.kick:
		case <-retry:
		case <-repair.C:
			if ws.w.edits.Waiting() {
				// A write compared a file while it was being saved (a
				// `>>` not closed yet) and left it to be compared again;
				// no event may come once its writer lets it go.
				break
			}
			if !ws.w.NeedsRepair() {
				continue
			}
			if err := ws.w.Repair(); err != nil {
				ws.logf("people's edits: %v; trying again", err)
			}
			continue
		}
		switch ws.commit() {
		case committed:
			retry, wait = nil, firstRetry
		case unsettled:
			// A save in progress: looked at again soon, however long it
			// takes, so that it is committed right after its writer lets
			// the file go.
			retry, wait = time.After(unsettledRetry), firstRetry
		default:
			retry = time.After(wait)
			wait = min(2*wait, maxRetry)
		}
	}
}

// commitOutcome is what a commit of the pending edits left.
type commitOutcome int

const (
	committed commitOutcome = iota // nothing is left
	unsettled                      // files being saved, to be compared again soon
	failed                         // tried again later, after a growing wait
)

// commit commits what is pending and says what is left.
func (ws *Watching) commit() commitOutcome {
	rep, err := ws.w.CommitEdits()
	for _, s := range rep.Skipped {
		if !ws.told[s] {
			if len(ws.told) > 10000 {
				clear(ws.told) // a bound; an old message may then come again
			}
			ws.told[s] = true
			ws.logf("people's edits: not committed: %s", s)
		}
	}
	switch {
	case err == nil && len(rep.Unsettled) > 0:
		return unsettled
	case err == nil:
		if ws.waiting != "" {
			ws.logf("people's edits: git is done; committing again")
			ws.waiting = ""
		}
		return committed
	case errors.Is(err, ErrUnavailable):
		if ws.waiting != "index" {
			ws.waiting = "index"
			ws.logf("people's edits wait: %v", err)
		}
	case errors.Is(err, ErrWorkTreeBusy):
		if err.Error() != ws.waiting { // once per reason, not at every try
			ws.waiting = err.Error()
			ws.logf("people's edits wait: %v", err)
		}
	default:
		ws.logf("people's edits: %v; trying again", err)
	}
	return failed
}

// Stop commits what the watcher has seen and stops watching. A save it had
// not seen yet stays on disk and is committed by the next comparison of the
// whole tree: the next server's start, or a write of a process that does
// not watch.
func (ws *Watching) Stop() {
	ws.once.Do(func() {
		ws.mu.Lock()
		ws.stopping = true
		watcher := ws.watcher
		ws.mu.Unlock()
		if watcher != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = watcher.Flush(ctx)
			cancel()
			watcher.Close()
		}
		close(ws.stop)
		ws.done.Wait()
		ws.commit()
		ws.w.SetWatched(false)
		ws.mu.Lock()
		if ws.lease != nil {
			ws.lease.Close() // another server takes over
			ws.lease = nil
		}
		ws.mu.Unlock()
	})
}

// Repair runs the repairs and commits what they turned up (text taken from
// a replaced file, say) as people's edits. A watching server calls it every
// second while NeedsRepair.
func (w *Workspace) Repair() error {
	return w.lock.with(func() error {
		if err := w.people.Repair(); err != nil && !errors.Is(err, errBranchMoved) {
			return err
		}
		if err := w.people.MergeRecentCommittedSaves(); err != nil && !errors.Is(err, errBranchMoved) {
			return err
		}
		_, _, err := w.people.CommitEditsLocked(nil)
		if errors.Is(err, ErrWorkTreeBusy) {
			return nil
		}
		return err
	})
}

// NeedsRepair reports whether there may be something to repair that no
// event announces: files kept for a person who may still write into them,
// or another branch checked out.
func (w *Workspace) NeedsRepair() bool {
	return w.displaced.Kept.Load() || w.repo.WorkTree().Elsewhere != "" || w.people.ToLookAt()
}

// FilesChanged tells the workspace that these work-tree paths (relative,
// slash-separated) changed on disk; rescan that events may have been lost,
// so the whole work tree must be compared. The change is committed by the
// next CommitEdits or tool write.
func (w *Workspace) FilesChanged(paths []string, rescan bool) {
	w.edits.Add(paths, rescan)
}

// SetWatched says whether a watcher reports this workspace's changes. While
// none does, every write first compares the whole work tree.
func (w *Workspace) SetWatched(on bool) {
	w.edits.SetWatched(on)
}

// CommitEdits commits what people changed since the last time: the paths
// reported by FilesChanged, or the whole work tree after a rescan or without
// a watcher. It returns ErrWorkTreeBusy (with the reason) while git is in
// the middle of an operation; the edits stay pending.
func (w *Workspace) CommitEdits() (*EditReport, error) {
	paths, all := w.edits.Take()
	var misnamed []string
	for _, p := range paths {
		if why := w.people.MisnamedNote(p); why != "" {
			misnamed = append(misnamed, why)
		}
	}
	rep, err := w.people.CommitEdits(paths, all)
	rep.Skipped = append(rep.Skipped, misnamed...)
	if err == nil && w.people.ToLookAt() {
		// A person's commit may hold a save of theirs to merge (saves.go),
		// though no file differs from the branch.
		err = w.Repair()
	}
	return rep, err
}
