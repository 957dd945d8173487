package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// A board whose git runs gc (a detached `git gc --auto` its writes
// started) is copied once the gc is over: the gc packs loose objects and
// removes them while cp lists them. A lock a killed gc left behind holds
// nothing up.
func TestCopyQuietBoardWaitsForGitsGC(t *testing.T) {
	board := filepath.Join(t.TempDir(), "board")
	if err := os.MkdirAll(filepath.Join(board, ".git", "objects", "ab"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(board, ".git", "objects", "ab", "cdef"), []byte("object"), 0o444); err != nil {
		t.Fatal(err)
	}
	gcPid := filepath.Join(board, ".git", "gc.pid")

	gc := exec.Command("sleep", "1")
	if err := gc.Start(); err != nil {
		t.Fatal(err)
	}
	gcDone := make(chan struct{})
	go func() { _ = gc.Wait(); close(gcDone) }()
	if err := os.WriteFile(gcPid, fmt.Appendf(nil, "%d localhost", gc.Process.Pid), 0o644); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "copy")
	if err := copyQuietBoard(context.Background(), board, copied); err != nil {
		t.Fatal(err)
	}
	select {
	case <-gcDone:
	default:
		t.Fatal("the board was copied while its gc ran")
	}
	if b, err := os.ReadFile(filepath.Join(copied, ".git", "objects", "ab", "cdef")); err != nil || string(b) != "object" {
		t.Fatalf("the copy holds %q (%v), want the board's object", b, err)
	}

	// gc.pid now names a process that is gone: the copy is made while a
	// witness started after it still runs.
	witness := exec.Command("sleep", "30")
	if err := witness.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = witness.Process.Kill(); _ = witness.Wait() }()
	again := filepath.Join(t.TempDir(), "copy")
	if err := copyQuietBoard(context.Background(), board, again); err != nil {
		t.Fatal(err)
	}
	if err := witness.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the copy waited for a gc that was gone: %v", err)
	}
	if _, err := os.Stat(filepath.Join(again, ".git", "objects", "ab", "cdef")); err != nil {
		t.Fatal(err)
	}
}
