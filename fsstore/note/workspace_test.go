package note

import (
	"strings"
	"testing"
)

func TestConfig(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Config
		bad  string // a substring of the error, "" for success
	}{
		{ConfigText(Config{Workspace: "acme", Branch: "main"}), Config{Workspace: "acme", Branch: "main"}, ""},
		{"workspace: acme\nbranch: team/board-1\n", Config{Workspace: "acme", Branch: "team/board-1"}, ""},
		{"workspace: ACME\n", Config{Workspace: "acme"}, ""}, // made before the branch was recorded
		{"workspace: acme\nbranch: ../x\n", Config{}, "branch"},
		{"workspace: acme\nbranch: a b\n", Config{}, "branch"},
		{"workspace: acme\nbranch: x.lock\n", Config{}, "branch"},
		{"workspace: con\n", Config{}, "workspace name"},
		{"workspace: [\n", Config{}, "config.yaml"},
	} {
		got, err := ParseConfig([]byte(tt.in))
		switch {
		case tt.bad != "" && (err == nil || !strings.Contains(err.Error(), tt.bad)):
			t.Errorf("ParseConfig(%q) = %+v, %v; want an error about %s", tt.in, got, err, tt.bad)
		case tt.bad == "" && (err != nil || got != tt.want):
			t.Errorf("ParseConfig(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}
