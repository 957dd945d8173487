package gitver_test

import (
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// HostPacesPushes knows GitHub in every form a remote URL takes, and no
// other host or a local path.
func TestHostPacesPushes(t *testing.T) {
	for url, want := range map[string]bool{
		"https://github.com/acme/board.git":           true,
		"https://token:x-oauth@GitHub.com/acme/board": true,
		"git@github.com:acme/board.git":               true,
		"ssh://git@github.com:22/acme/board.git":      true,
		"https://gitlab.com/acme/board.git":           false,
		"git@example.org:github.com/board.git":        false,
		"file:///srv/github.com/board.git":            false,
		"/srv/git/board.git":                          false,
		"./github.com:board":                          false,
	} {
		if got := gitver.HostPacesPushes(url); got != want {
			t.Errorf("HostPacesPushes(%q) = %v, want %v", url, got, want)
		}
	}
}

// ConfigDuration reads a duration or a number of seconds from git's config,
// and says when the key is unset or unreadable.
func TestConfigDuration(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	if _, ok := r.ConfigDuration("blackboard", "pushInterval"); ok {
		t.Fatal("an unset key reads as set")
	}
	for value, want := range map[string]time.Duration{"10s": 10 * time.Second, "2": 2 * time.Second, "0": 0, "1m30s": 90 * time.Second} {
		fixtures.Git(t, dir, "config", "blackboard.pushInterval", value)
		if got, ok := r.ConfigDuration("blackboard", "pushInterval"); !ok || got != want {
			t.Errorf("blackboard.pushInterval=%s reads as %v (%v), want %v", value, got, ok, want)
		}
	}
	fixtures.Git(t, dir, "config", "blackboard.pushInterval", "soon")
	if _, ok := r.ConfigDuration("blackboard", "pushInterval"); ok {
		t.Error("an unreadable value reads as set")
	}
}
