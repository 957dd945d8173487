package watch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults for the zero values of Options.
const (
	DefaultDebounce = 150 * time.Millisecond
	DefaultMaxDelay = 2 * time.Second
)

// ErrClosed is returned by Flush once the Watcher is closed: the pending
// paths were not delivered and never will be by this Watcher.
var ErrClosed = errors.New("watch: the watcher is closed")

// Options configure a Watcher. The zero value is ready to use.
type Options struct {
	// Debounce is how long a path must stay quiet before it is reported (default 150ms).
	Debounce time.Duration
	// MaxDelay bounds how long a path that keeps changing waits (default 2s).
	MaxDelay time.Duration
	// Logf, when set, receives one line per watch problem (a directory that cannot be watched, an overflow).
	// It is called from Start and from the Watcher's own goroutine, never concurrently.
	Logf func(format string, args ...any)
}

// Batch is what changed since the last batch.
type Batch struct {
	// Paths are slash-separated, relative to the root, sorted, each once: files created, written,
	// removed or renamed (either name), including every file already inside a directory that appeared.
	//
	// A tool that saves through a temporary file whose name is not one of the ignored ones (sed -i
	// writes "sedXXXXXX" beside the file, then renames it over) has that name reported too, although
	// it no longer exists: the receiver finds nothing there and nothing to commit.
	Paths []string
	// Rescan says events may have been lost (queue overflow, a watch error, a watched directory moved or
	// removed): the receiver must compare the whole tree, not only Paths.
	Rescan bool
	// Incomplete says some directory could not be watched (the system's limit of watches, permissions):
	// changes inside it send no events, so from now on the receiver must also compare the whole tree
	// from time to time. It stays set in every later batch.
	Incomplete bool
}

// Watcher reports changes below one root. Create it with Start.
type Watcher struct {
	root   string // absolute and clean: event names are this plus a relative path
	opts   Options
	notify *fsnotify.Watcher

	// The fields up to stop are owned by the collecting goroutine once Start
	// has returned; nothing else touches them, so they need no lock.
	watched map[string]bool    // absolute directory path -> a watch was added for it
	pending map[string]*window // relative path -> its debounce window, not yet due
	rescan  *window            // non-nil while a rescan waits for its burst of events to end
	ready   handoff            // due, waiting for fn to be free
	timer   *time.Timer        // fires at timerAt, the earliest deadline it was armed for
	timerAt time.Time          // zero while the timer is stopped
	// incomplete is set once a directory could not be watched.
	incomplete bool

	handoffs  chan handoff    // collector -> deliverer; closed when the collector returns
	flushes   chan chan error // Flush -> collector
	stop      chan struct{}   // closed by Close
	collected chan struct{}   // closed when the collector has returned
	delivered chan struct{}   // closed when fn has returned for the last time

	closeOnce sync.Once
	closeErr  error
}

// window is the debounce state of one path: it is reported at due, which each
// new event pushes back, but never later than first+MaxDelay.
type window struct {
	first, due time.Time
}

// handoff is what the collector gives the deliverer in one go. Flush requests
// ride along so that their reply is sent after fn has handled the paths that
// were pending when they were asked.
type handoff struct {
	paths      map[string]struct{}
	rescan     bool
	incomplete bool
	flushed    []chan error
}

func (h *handoff) empty() bool {
	return len(h.paths) == 0 && !h.rescan && len(h.flushed) == 0
}

func (h *handoff) add(rel string) {
	if h.paths == nil {
		h.paths = make(map[string]struct{})
	}
	h.paths[rel] = struct{}{}
}

// Start watches root and every directory below it, except directories whose name starts with "."
// (.git, .blackboard, editors' hidden folders), and calls fn with each batch, from one goroutine, never
// concurrently. fn may take long (it commits); events keep being collected meanwhile and come in the next batch.
//
// Start fails when the system cannot give an inotify instance or a watch for every directory; a caller
// then falls back to scanning the tree. Files that exist at Start are not reported.
func Start(root string, opts Options, fn func(Batch)) (*Watcher, error) {
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = DefaultMaxDelay
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", root, err)
	}
	notify, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: cannot get an inotify instance (each watcher is one; the per-user limit is fs.inotify.max_user_instances): %w", root, err)
	}
	w := &Watcher{
		root:      abs,
		opts:      opts,
		notify:    notify,
		watched:   make(map[string]bool),
		pending:   make(map[string]*window),
		timer:     time.NewTimer(time.Hour),
		handoffs:  make(chan handoff),
		flushes:   make(chan chan error),
		stop:      make(chan struct{}),
		collected: make(chan struct{}),
		delivered: make(chan struct{}),
	}
	w.timer.Stop()
	if err := w.watchTree(abs, nil); err != nil {
		notify.Close()
		return nil, err
	}
	if w.incomplete {
		w.markRescan(time.Now()) // tell the receiver soon, not at the first event
	}
	go w.collect()
	go w.deliver(fn)
	return w, nil
}

// Close stops watching and waits until fn has returned for the last time. It is safe to call twice.
// Paths still waiting for their debounce are dropped: call Flush first to have them delivered.
// Close must not be called from fn, which it would wait for.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.stop)
		w.closeErr = w.notify.Close()
		<-w.collected
		<-w.delivered
	})
	return w.closeErr
}

// Flush reports every pending path now, without waiting for the debounce, and returns after fn has
// handled them (or after an fn already running has returned, when nothing is pending). It covers the
// events the Watcher has received; a change made a moment ago may still be on its way from the kernel.
// It returns ErrClosed when the Watcher was closed first, and must not be called from fn.
func (w *Watcher) Flush(ctx context.Context) error {
	done := make(chan error, 1) // buffered: whoever answers never waits for a Flush that gave up
	select {
	case w.flushes <- done:
	case <-w.collected:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deliver calls fn, one handoff at a time, until the collector is gone.
func (w *Watcher) deliver(fn func(Batch)) {
	defer close(w.delivered)
	for h := range w.handoffs {
		if len(h.paths) > 0 || h.rescan {
			fn(Batch{Paths: slices.Sorted(maps.Keys(h.paths)), Rescan: h.rescan, Incomplete: h.incomplete})
		}
		for _, done := range h.flushed {
			done <- nil
		}
	}
}

// collect is the Watcher's one owner of its state: it reads events, keeps the
// debounce windows and hands due paths to the deliverer whenever it is free.
func (w *Watcher) collect() {
	defer func() {
		w.timer.Stop()
		for _, done := range w.ready.flushed {
			done <- ErrClosed
		}
		close(w.handoffs)
		close(w.collected)
	}()
	for {
		var handoffs chan<- handoff // nil, so never chosen, while there is nothing to hand off
		if !w.ready.empty() {
			handoffs = w.handoffs
		}
		select {
		case <-w.stop:
			return
		case ev, ok := <-w.notify.Events:
			if !ok {
				return
			}
			w.handle(ev, time.Now())
		case err, ok := <-w.notify.Errors:
			if !ok {
				return
			}
			w.logf("watch %s: %v; watching the whole tree again and asking for a full comparison", w.root, err)
			w.rewatch()
			w.markRescan(time.Now())
		case <-w.timer.C:
			w.timerAt = time.Time{}
			w.takeDue(time.Now())
		case done := <-w.flushes:
			w.takeAll()
			w.ready.flushed = append(w.ready.flushed, done)
		case handoffs <- w.withState(w.ready):
			w.ready = handoff{}
		}
	}
}

func (w *Watcher) handle(ev fsnotify.Event, now time.Time) {
	if ev.Op&^fsnotify.Chmod == 0 {
		return // permissions and times only: the content is unchanged
	}
	rel, err := filepath.Rel(w.root, ev.Name)
	if err != nil {
		return
	}
	if rel == "." {
		if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
			w.logf("watch %s: the watched folder itself was removed or moved; nothing in it is watched any more", w.root)
			w.unwatchTree(w.root)
			w.markRescan(now)
		}
		return
	}
	rel = filepath.ToSlash(rel)
	if hiddenPath(rel) {
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		w.created(ev.Name, rel, now)
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		if w.watched[ev.Name] {
			// inotify keeps a moved directory's watches under their old
			// names, so they are dropped; the new name arrives as a Create.
			// What the folder held moved or vanished: only a full comparison
			// finds every note that did.
			w.unwatchTree(ev.Name)
			w.markRescan(now)
			return
		}
		if !ignoredFile(filepath.Base(ev.Name)) {
			w.touch(rel, now)
		}
	case ev.Has(fsnotify.Write):
		if !ignoredFile(filepath.Base(ev.Name)) {
			w.touch(rel, now)
		}
	}
}

// created handles a new name, made or moved in: a directory is watched and
// every file already in it reported, since those made before its watch was
// added sent no event.
func (w *Watcher) created(abs, rel string, now time.Time) {
	info, err := os.Lstat(abs)
	if err == nil && info.IsDir() { // Lstat: a link to a directory is a file here, never followed
		if w.watched[abs] {
			return // already found by the scan of its parent
		}
		err := w.watchTree(abs, func(rel string) { w.touch(rel, now) })
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // gone already: its removal is an event too
			w.logf("%v", err)
			w.incomplete = true
			w.markRescan(now)
		}
		return
	}
	// A name that vanished before Lstat is reported anyway: if it was a file,
	// its removal is the receiver's business.
	if !ignoredFile(filepath.Base(abs)) {
		w.touch(rel, now)
	}
}

// watchTree adds a watch on dir and on every directory below it that is not
// hidden, and calls found with each file it sees, when found is not nil. The
// watch goes on before a directory is listed, so a file made in between is
// seen either by the listing or as an event. It returns an error when dir
// itself cannot be watched or listed, or when the system is out of watches;
// the other directories that fail are logged and skipped.
func (w *Watcher) watchTree(dir string, found func(rel string)) error {
	if err := w.notify.Add(dir); err != nil {
		return watchError(w.root, dir, err)
	}
	w.watched[dir] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("watch %s: cannot list %s: %w", w.root, w.relative(dir), err)
	}
	for _, entry := range entries {
		name := entry.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		if entry.IsDir() { // a symbolic link is not a directory here, so it is not followed
			err := w.watchTree(path, found)
			switch {
			case err == nil, errors.Is(err, fs.ErrNotExist):
				// Gone already: its removal comes as an event of dir.
			case errors.Is(err, syscall.ENOSPC):
				return err // every further directory would fail the same way
			default:
				w.logf("%v", err)
				w.incomplete = true
			}
			continue
		}
		if found != nil && !ignoredFile(name) {
			found(w.relative(path))
		}
	}
	return nil
}

// watchError explains a failure to add a watch, saying what to do when the
// system is out of watches.
func watchError(root, dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("watch %s: cannot watch %s: the system's limit of inotify watches is reached; "+
			"raise it with sysctl fs.inotify.max_user_watches (one watch is needed per folder): %w", root, dir, err)
	}
	return fmt.Errorf("watch %s: cannot watch %s: %w", root, dir, err)
}

// unwatchTree drops the watches of dir and of every directory below it.
func (w *Watcher) unwatchTree(dir string) {
	for path := range w.watched {
		if path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) {
			// The kernel may have dropped it already (a removed directory):
			// nothing is left to do then.
			_ = w.notify.Remove(path)
			delete(w.watched, path)
		}
	}
}

// rewatch drops every watch and adds them all again from a fresh walk, after
// events were lost. Keeping the old ones would keep a moved directory's watch
// under its old name, and inotify would hand that same watch back for the new
// name. Whatever changes while no watch is on is found by the full comparison
// the receiver makes after this rescan.
func (w *Watcher) rewatch() {
	w.unwatchTree(w.root)
	if err := w.watchTree(w.root, nil); err != nil {
		w.logf("%v", err)
		w.incomplete = true
	}
}

// withState adds what the receiver must know about the watches to h.
func (w *Watcher) withState(h handoff) handoff {
	if w.incomplete {
		h.incomplete = true
		h.rescan = true // a full comparison covers what no watch sees
	}
	return h
}

// touch starts or extends the debounce window of rel.
func (w *Watcher) touch(rel string, now time.Time) {
	win := w.pending[rel]
	if win == nil {
		win = &window{first: now}
		w.pending[rel] = win
	}
	w.extend(win, now)
}

// markRescan asks for a batch with Rescan, debounced like a path so that the
// burst of events of one removal or move ends in one batch.
func (w *Watcher) markRescan(now time.Time) {
	if w.rescan == nil {
		w.rescan = &window{first: now}
	}
	w.extend(w.rescan, now)
}

func (w *Watcher) extend(win *window, now time.Time) {
	win.due = now.Add(w.opts.Debounce)
	if limit := win.first.Add(w.opts.MaxDelay); limit.Before(win.due) {
		win.due = limit
	}
	w.arm(win.due, now)
}

// arm makes the one timer fire no later than due. Windows only ever move
// later, so a timer armed for an earlier deadline may fire with nothing due;
// takeDue then arms it again for what is left.
func (w *Watcher) arm(due, now time.Time) {
	if !w.timerAt.IsZero() && !due.Before(w.timerAt) {
		return
	}
	w.timer.Reset(due.Sub(now))
	w.timerAt = due
}

// takeDue moves every path whose window has passed to ready, and everything
// when a rescan is due, since the receiver compares the whole tree then anyway.
func (w *Watcher) takeDue(now time.Time) {
	if w.rescan != nil && !w.rescan.due.After(now) {
		w.takeAll()
		return
	}
	var next time.Time
	for rel, win := range w.pending {
		if !win.due.After(now) {
			w.ready.add(rel)
			delete(w.pending, rel)
		} else if next.IsZero() || win.due.Before(next) {
			next = win.due
		}
	}
	if w.rescan != nil && (next.IsZero() || w.rescan.due.Before(next)) {
		next = w.rescan.due
	}
	if !next.IsZero() {
		w.arm(next, now)
	}
}

// takeAll moves every pending path, and a pending rescan, to ready.
func (w *Watcher) takeAll() {
	for rel := range w.pending {
		w.ready.add(rel)
	}
	clear(w.pending)
	if w.rescan != nil {
		w.ready.rescan = true
		w.rescan = nil
	}
	w.timer.Stop()
	w.timerAt = time.Time{}
}

// relative is path's name in a Batch.
func (w *Watcher) relative(path string) string {
	rel, err := filepath.Rel(w.root, path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}

func (w *Watcher) logf(format string, args ...any) {
	if w.opts.Logf != nil {
		w.opts.Logf(format, args...)
	}
}

// hiddenPath reports whether any element of the slash-separated rel starts
// with a dot: such folders (.git, .blackboard) are not watched, and such files
// are editors' and the program's own temporary files.
func hiddenPath(rel string) bool {
	for elem := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(elem, ".") {
			return true
		}
	}
	return false
}

// ignoredFile reports whether a file name is an editor's temporary or backup
// file, whose changes are never reported. Directories are not judged by it: a
// folder may well be called 4913.
func ignoredFile(name string) bool {
	switch {
	case strings.HasPrefix(name, "."): // .note.md.swp, .#note.md, the program's own temporary files
		return true
	case strings.HasSuffix(name, "~"): // backups: vim's note.md~, emacs's
		return true
	case name == "4913": // vim's probe for whether it may write in the folder
		return true
	}
	for _, suffix := range []string{".tmp", ".swp", ".swx"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}
