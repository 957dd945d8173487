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
// (.blackboard/write.lock) the processes sharing the workspace.
type writeLock struct {
	mu   sync.Mutex
	file *os.File
	// upkeep runs first in every hold but a bare one: a killed writer's
	// journal finished (mover.recover), a person's git repaired
	// (people.repair).
	upkeep func() error
}

// with runs fn holding the workspace's write lock: the in-process
// mutex (go-git and our caches are not goroutine-safe) and an exclusive flock
// on .blackboard/write.lock (other processes). The kernel releases the flock
// when a process dies, so a killed writer never blocks the next one; what it
// left half-done is finished first, from its journal.
func (l *writeLock) with(fn func() error) error {
	_, err := l.hold(unix.LOCK_EX, func() (bool, error) { return true, fn() })
	return err
}

// withFree is with when no other process holds the lock:
// then fn runs and says whether it did the work (took). took is false when
// the lock was held elsewhere.
func (l *writeLock) withFree(fn func() (took bool, err error)) (took bool, err error) {
	return l.hold(unix.LOCK_EX|unix.LOCK_NB, fn)
}

// hold takes the write lock by flock(how), runs the upkeep (finishing what
// a killed writer left, the repairs) and then fn. took is false, and fn not run,
// when how does not block and another process holds the lock.
func (l *writeLock) hold(how int, fn func() (took bool, err error)) (took bool, err error) {
	return l.holdBare(how, func() (bool, error) {
		if err := l.upkeep(); err != nil {
			return true, err
		}
		return fn()
	})
}

// withBare runs fn under the write lock without finishing or
// repairing anything first: for a decision that must not wait for work
// that may be what fails (on a full disk, say).
func (l *writeLock) withBare(fn func() error) error {
	_, err := l.holdBare(unix.LOCK_EX, func() (bool, error) { return true, fn() })
	return err
}

// holdBare takes the write lock by flock(how) and runs fn.
func (l *writeLock) holdBare(how int, fn func() (took bool, err error)) (took bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		err := unix.Flock(int(l.file.Fd()), how)
		if err == nil {
			break
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		if !errors.Is(err, unix.EINTR) {
			return true, fmt.Errorf("lock %s: %w", note.LockFile, err)
		}
	}
	defer unix.Flock(int(l.file.Fd()), unix.LOCK_UN)
	return fn()
}
