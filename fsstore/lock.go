package fsstore

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// writeLock serializes writes: mu this process's goroutines (go-git and
// our caches are not goroutine-safe), an exclusive flock on file
// (.blackboard/write.lock) the processes sharing the workspace. It runs
// nothing of its own in a hold: the upkeep is the parts' (Mover.Recover,
// People.Repair), where they need it.
type writeLock struct {
	mu   sync.Mutex
	file *os.File
	// holds counts the holds taken, guarded by mu: a part that did its
	// upkeep in this hold (Mover.Recover) knows not to do it again.
	holds uint64
}

// with runs fn holding the workspace's write lock: the in-process
// mutex (go-git and our caches are not goroutine-safe) and an exclusive flock
// on .blackboard/write.lock (other processes). The kernel releases the flock
// when a process dies, so a killed writer never blocks the next one; what it
// left half-done is the mover's to finish (Mover.Recover), before the next
// move of the branch and before anyone compares the work tree.
func (l *writeLock) with(fn func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		err := unix.Flock(int(l.file.Fd()), unix.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("lock %s: %w", note.LockFile, err)
		}
	}
	defer unix.Flock(int(l.file.Fd()), unix.LOCK_UN)
	l.holds++
	return fn()
}

// count is how many holds were taken so far. The caller holds the lock.
func (l *writeLock) count() uint64 { return l.holds }

// flock is unix.Flock on f, again when a signal interrupts it.
func flock(f *os.File, how int) error {
	for {
		if err := unix.Flock(int(f.Fd()), how); !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
