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
// nothing of its own in a hold: the upkeep is the parts' (mover.recover,
// people.repair), where they need it.
type writeLock struct {
	mu   sync.Mutex
	file *os.File
}

// with runs fn holding the workspace's write lock: the in-process
// mutex (go-git and our caches are not goroutine-safe) and an exclusive flock
// on .blackboard/write.lock (other processes). The kernel releases the flock
// when a process dies, so a killed writer never blocks the next one; what it
// left half-done is the mover's to finish (mover.recover), before the next
// move of the branch and before anyone compares the work tree.
func (l *writeLock) with(fn func() error) error {
	_, err := l.hold(unix.LOCK_EX, func() (bool, error) { return true, fn() })
	return err
}

// withFree is with when no other process holds the lock: then fn runs and
// says whether it did the work (took). took is false when the lock was held
// elsewhere.
func (l *writeLock) withFree(fn func() (took bool, err error)) (took bool, err error) {
	return l.hold(unix.LOCK_EX|unix.LOCK_NB, fn)
}

// hold takes the write lock by flock(how) and runs fn. took is false, and
// fn not run, when how does not block and another process holds the lock.
func (l *writeLock) hold(how int, fn func() (took bool, err error)) (took bool, err error) {
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
