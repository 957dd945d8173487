package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// benchBinary and mcpBinary are the real blackboard-bench and blackboard-mcp
// binaries, built once for the package's tests: the bench runs as a
// maintainer runs it, in separate processes, and blackboard-mcp makes and
// reads the workspaces it is checked against.
var benchBinary, mcpBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "blackboard-bench-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	benchBinary = filepath.Join(dir, "blackboard-bench")
	mcpBinary = filepath.Join(dir, "blackboard-mcp")
	for bin, pkg := range map[string]string{benchBinary: ".", mcpBinary: "../blackboard-mcp"} {
		build := exec.Command("go", "build", "-o", bin, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", filepath.Base(bin), err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
