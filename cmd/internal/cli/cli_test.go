package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"testing"
)

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{Usagef("get takes one address"), 2, "prog: get takes one address\n"},
		{fmt.Errorf("put: %w", Usagef("bad")), 2, "prog: bad\n"},
		{ErrSilent, 1, ""},
		{errors.New("no such note"), 1, "prog: no such note\n"},
	} {
		var stderr bytes.Buffer
		if got := ExitCode("prog", tc.err, &stderr); got != tc.code || stderr.String() != tc.stderr {
			t.Errorf("ExitCode(%v) = %d, stderr %q; want %d, %q", tc.err, got, stderr.String(), tc.code, tc.stderr)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		full bool
		code int // ExitCode of Parse's error
	}{
		{args: []string{"a", "--full"}, pos: []string{"a"}, full: true},
		{args: []string{"--full", "a", "b"}, pos: []string{"a", "b"}, full: true},
		{args: []string{"a", "--", "--full"}, pos: []string{"a", "--full"}},
		{args: []string{"a", "--nope"}, code: 2},
		{args: []string{"a", "-h"}, code: 0},
	} {
		fs := NewFlagSet("get", io.Discard, &WorkspaceFlags{})
		full := fs.Bool("full", false, "")
		pos, err := Parse(fs, tc.args)
		if code := ExitCode("prog", err, io.Discard); code != tc.code || err == nil && (!slices.Equal(pos, tc.pos) || *full != tc.full) {
			t.Errorf("Parse(%q) = %q, --full %v, exit %d (%v); want %q, %v, exit %d", tc.args, pos, *full, code, err, tc.pos, tc.full, tc.code)
		}
	}
}

func TestDir(t *testing.T) {
	for _, tc := range []struct{ flag, env, want string }{
		{"", "", "."},
		{"", "from-env", "from-env"},
		{"from-flag", "from-env", "from-flag"},
	} {
		t.Setenv("BLACKBOARD_DIR", tc.env)
		var ws WorkspaceFlags
		fs := NewFlagSet("ls", io.Discard, &ws)
		if _, err := Parse(fs, []string{"--dir", tc.flag}); err != nil {
			t.Fatal(err)
		}
		if got := ws.Dir(); got != tc.want {
			t.Errorf("--dir %q, $BLACKBOARD_DIR %q: Dir() = %q, want %q", tc.flag, tc.env, got, tc.want)
		}
	}
}
