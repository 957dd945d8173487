package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// testBinary is the real blackboard-mcp binary, built once for the package's
// tests: they drive it as users do, in separate processes. It is built with
// the crashpoints tag, which adds only what kills it at a step of a write
// when its environment names one (fsstore/crashpoints.go).
var testBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "blackboard-mcp-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testBinary = filepath.Join(dir, "blackboard-mcp")
	if other := os.Getenv("BLACKBOARD_TEST_BINARY"); other != "" {
		// Another build under the same tests: an earlier one, to compare.
		testBinary = other
	} else {
		build := exec.Command("go", "build", "-tags", "crashpoints", "-o", testBinary, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build blackboard-mcp:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
