package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
)

// removeBoards removes dir, a directory of boards this tool made (copies
// of a board, the board of a collection), once their engines are gone. An
// engine leaves by itself when its board's directory goes, but one that
// writes its log or its index while the directory is being removed leaves
// part of it behind; so each engine is stopped first (SIGTERM), and waited
// for. What cannot be removed is said on stderr.
func removeBoards(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			stopEngine(filepath.Join(dir, e.Name()))
		}
	}
	for try := 1; ; try++ {
		err := os.RemoveAll(dir)
		if err == nil {
			return
		}
		if try == 10 {
			fmt.Fprintf(os.Stderr, "blackboard-bench: %v\n", err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopEngine stops the engine serving the board at dir, if one does, and
// waits for it to leave, 10 s at most.
func stopEngine(dir string) {
	place, err := engine.Locate(dir)
	if err != nil {
		return
	}
	pid := place.Engine()
	if pid == 0 || syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); place.Running() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// copyQuietBoard copies board to dir as a restore or a move does (cp -a:
// new inodes, the same times), once nothing changes it: its engine stopped
// (one that served the measurement before goes on tidying its index, and
// a copy of it taken meanwhile may be torn) and git's gc done (one that the
// board's writes started, detached, packs loose objects and removes them
// while cp lists them). Anything else that moved the board's files under
// the copy makes it again, a second apart, ten times at most.
func copyQuietBoard(ctx context.Context, board, dir string) error {
	stopEngine(board)
	for try := 1; ; try++ {
		waitForGC(ctx, board)
		out, err := exec.CommandContext(ctx, "cp", "-a", board, dir).CombinedOutput()
		if err == nil {
			return nil
		}
		if try == 10 || ctx.Err() != nil {
			return fmt.Errorf("cp -a: %w: %s", err, out)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}

// waitForGC waits while git's gc runs in the board at dir: its gc.pid
// (git's lock, "PID HOST") names a process that is alive. Ten minutes at
// most: a repack of a large board takes minutes on a slow disk.
func waitForGC(ctx context.Context, dir string) {
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; {
		b, err := os.ReadFile(filepath.Join(dir, ".git", "gc.pid"))
		if err != nil {
			return
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
			return // a lock its gc left behind when it was killed
		}
		time.Sleep(100 * time.Millisecond)
	}
}
