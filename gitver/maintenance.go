package gitver

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// looseObjectLimit mirrors git's gc.auto (6,700 loose objects), estimated as
// git does from one fan-out directory, objects/17, holding 1/256th of them.
const looseObjectLimit = 6700

// maintenanceRunning keeps one process from starting a second gc while its
// first still runs; git's own gc.pid lock covers other processes.
var maintenanceRunning atomic.Bool

// MaybeMaintain starts `git gc --auto --quiet` in the background when the
// repository holds more loose objects, or more packs, than git itself
// tolerates. Every commit the program makes alone adds about five loose
// objects, every group of commits a pack, and go-git never packs them. It never runs on the write path, never waits, and does nothing when
// the C git CLI is not installed. Concurrent writes stay safe: gc moves the
// branch only through git's own lock files, and readers reopen their object
// storage when objects move into a pack.
func (r *Repo) MaybeMaintain() {
	if maintenanceRunning.Load() || r.looseObjectsEstimate() <= looseObjectLimit && r.packCount() <= packLimit {
		return
	}
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return
	}
	if !maintenanceRunning.CompareAndSwap(false, true) {
		return
	}
	cmd := exec.Command(gitPath, "gc", "--auto", "--quiet")
	cmd.Dir = r.dir
	if err := cmd.Start(); err != nil {
		maintenanceRunning.Store(false)
		return
	}
	yieldToWrites(cmd.Process.Pid)
	go func() {
		_ = cmd.Wait()
		maintenanceRunning.Store(false)
	}()
}

// packLimit mirrors git's gc.autoPackLimit: past 50 packs, `git gc --auto`
// packs them all into one. Grouped writes leave a pack each; the program
// merges the small ones (MergeSmallPacks), and git the rest.
const packLimit = 50

func (r *Repo) packCount() int {
	shas, _ := packSHAs(filepath.Join(r.gitDir, "objects", "pack"), false)
	return len(shas)
}

func (r *Repo) looseObjectsEstimate() int {
	d, err := os.Open(filepath.Join(r.gitDir, "objects", "17"))
	if err != nil {
		return 0
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	return len(names) * 256
}

// yieldToWrites lowers a background process's share of the processor and
// of the disk to the least (nice 19, the idle I/O class), so that writes,
// which wait on both, do not wait for it: a gc repacks the whole board,
// seconds of work on two cores. The git processes it starts inherit both.
// Best effort: a process may have exited already.
func yieldToWrites(pid int) {
	_ = unix.Setpriority(unix.PRIO_PROCESS, pid, 19)
	const ioprioWhoProcess, ioprioClassIdle, ioprioClassShift = 1, 3, 13
	_, _, _ = unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(pid), ioprioClassIdle<<ioprioClassShift)
}
