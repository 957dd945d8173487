package gitver

import (
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMaintenanceYieldsToWrites: a background gc runs at the lowest
// processor priority and in the idle I/O class.
func TestMaintenanceYieldsToWrites(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	yieldToWrites(cmd.Process.Pid)
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if nice := 20 - prio; nice != 19 { // the raw syscall returns 20 - nice
		t.Errorf("nice %d, want 19", nice)
	}
	const ioprioWhoProcess, ioprioClassShift = 1, 13
	class, _, errno := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(cmd.Process.Pid), 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	if class>>ioprioClassShift != 3 {
		t.Errorf("I/O priority %#x, want the idle class (3)", class)
	}
}
