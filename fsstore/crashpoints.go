//go:build crashpoints

package fsstore

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// A binary built with the crashpoints tag kills itself at a named step of a
// write, as a power cut or a kill -9 would stop it there: the tests of the
// real binary (the board's engine killed at every step of a write) set it
// through the environment. A release build has no such hook.
//
//	BLACKBOARD_CRASH_AT=STEP     the step (see reach)
//	BLACKBOARD_CRASH_AFTER=N     let the step pass N times first
//	BLACKBOARD_CRASH_ONCE=FILE   crash only if FILE can be created: of all
//	                             the processes that inherit the setting,
//	                             only the first to reach the step dies
func init() {
	step := os.Getenv("BLACKBOARD_CRASH_AT")
	if step == "" {
		return
	}
	after, _ := strconv.Atoi(os.Getenv("BLACKBOARD_CRASH_AFTER"))
	once := os.Getenv("BLACKBOARD_CRASH_ONCE")
	var passed atomic.Int64
	crashPoint = func(s string) {
		if s != step || passed.Add(1) <= int64(after) {
			return
		}
		if once != "" {
			f, err := os.OpenFile(once, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return
			}
			f.Close()
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
}
