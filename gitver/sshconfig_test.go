package gitver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// Over ssh, git runs ssh in batch mode unless the person's config names an
// ssh command of their own; the answer is kept between operations, and a
// change to the config is seen by the next one.
func TestSSHCommandFollowsTheConfig(t *testing.T) {
	fixtures.RequireGit(t)
	bin := t.TempDir()
	log := filepath.Join(bin, "calls")
	script := func(name, tag string) string {
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho \""+tag+" $*\" >> '"+log+"'\nexit 255\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	script("ssh", "default")
	mine := script("my-ssh", "mine")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, name := range []string{"GIT_SSH_COMMAND", "GIT_SSH"} {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)  // git takes an empty one for a command
	}

	r, dir := newRepo(t)
	fixtures.Git(t, dir, "remote", "add", "origin", "ssh://git@board.invalid/board.git")
	lastCall := func() string {
		t.Helper()
		if err := r.Fetch(context.Background(), "origin"); err == nil {
			t.Fatal("a fetch through a failing ssh succeeded")
		}
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		return lines[len(lines)-1]
	}
	if got := lastCall(); !strings.HasPrefix(got, "default ") || !strings.Contains(got, "BatchMode=yes") {
		t.Fatalf("without a configured ssh command, git ran %q; want ssh in batch mode", got)
	}
	fixtures.Git(t, dir, "config", "core.sshCommand", mine)
	if got := lastCall(); !strings.HasPrefix(got, "mine ") {
		t.Fatalf("with core.sshCommand set, git ran %q; want the person's command", got)
	}
	if got := lastCall(); !strings.HasPrefix(got, "mine ") {
		t.Fatalf("the second time, git ran %q; want the person's command", got)
	}
	fixtures.Git(t, dir, "config", "--unset", "core.sshCommand")
	if got := lastCall(); !strings.HasPrefix(got, "default ") {
		t.Fatalf("with core.sshCommand unset again, git ran %q; want ssh in batch mode", got)
	}
}
