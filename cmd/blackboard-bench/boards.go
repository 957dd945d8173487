package main

import (
	"fmt"
	"os"
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
