package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

// TestUsage checks the command line around the verbs: what a maintainer
// sees where, the exit status, and that the worker verb stays hidden.
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string // what stdout and stderr must contain; "-": nothing at all
	}{
		{args: nil, code: 2, out: "blackboard-bench write [--dir DIR]", err: "blackboard-bench: no verb given"},
		{args: []string{"-h"}, code: 0, out: "blackboard-bench generate DIR", err: "-"},
		{args: []string{"bench"}, code: 2, out: "-", err: `blackboard-bench: unknown verb "bench"`},
		{args: []string{"write", "extra"}, code: 2, out: "-", err: "blackboard-bench: write takes no arguments"},
		{args: []string{"path", "extra"}, code: 2, out: "-", err: "blackboard-bench: path takes no arguments"},
		{args: []string{"path", "--count", "("}, code: 2, out: "-", err: "invalid value"},
		{args: []string{"generate"}, code: 2, out: "-", err: "blackboard-bench: generate takes one directory"},
		{args: []string{"generate", "-h"}, code: 0, out: "-", err: "-commits"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), tc.args, strings.NewReader(""), &stdout, &stderr)
		if got := cli.ExitCode("blackboard-bench", err, &stderr); got != tc.code {
			t.Errorf("%q: exit %d (%v), want %d", tc.args, got, err, tc.code)
		}
		for _, s := range []struct {
			name, got, want string
		}{{"stdout", stdout.String(), tc.out}, {"stderr", stderr.String(), tc.err}} {
			if s.want == "-" && s.got != "" || s.want != "-" && !strings.Contains(s.got, s.want) {
				t.Errorf("%q: %s %q, want %q", tc.args, s.name, s.got, s.want)
			}
		}
		if all := stdout.String() + stderr.String(); strings.Contains(all, workerVerb+" ") {
			t.Errorf("%q: the hidden %s verb shows:\n%s", tc.args, workerVerb, all)
		}
	}
}
