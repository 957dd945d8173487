package note

import (
	"strings"
	"testing"
)

func TestMessages(t *testing.T) {
	a, err := ParseAddress("research/cache/latency", "acme")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", 150)
	tests := []struct {
		name string
		got  Message
		want string
	}{
		{"update", WriteMessage("update", a, 3, "Hit rate fell", "researcher"),
			"update research/cache/latency v3: Hit rate fell\n\nBlackboard-Uri: bb://acme/research/cache/latency\n" +
				"Blackboard-Version: 3\nBlackboard-Agent: researcher\n"},
		{"long digest", WriteMessage("append", a, 1, long, "a"),
			"append research/cache/latency v1: " + strings.Repeat("é", 99) + "…\n\nBlackboard-Uri: bb://acme/research/cache/latency\n" +
				"Blackboard-Version: 1\nBlackboard-Agent: a\n"},
		{"init", InitMessage("acme"),
			"init workspace acme\n\nBlackboard-Uri: bb://acme/run/state/current\nBlackboard-Version: 1\nBlackboard-Agent: blackboard-mcp\n"},
		{"several notes", Message{Subject: "edit 2 notes by hand", Lines: []string{"edit a/b v2 by hand", "delete a/c by hand"}, Agent: "Ada"},
			"edit 2 notes by hand\n\nedit a/b v2 by hand\ndelete a/c by hand\n\nBlackboard-Agent: Ada\n"},
	}
	for _, tt := range tests {
		if got := tt.got.String(); got != tt.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tt.name, got, tt.want)
		}
		if !ByProgram(tt.got.String()) {
			t.Errorf("%s: ByProgram is false for the program's own message", tt.name)
		}
	}
	for _, msg := range []string{"fix typo\n", "Blackboard-Agent: x\n", "mention Blackboard-Agent in the body\n"} {
		if ByProgram(msg) {
			t.Errorf("ByProgram(%q) = true for a person's message", msg)
		}
	}
}

func TestWrittenAt(t *testing.T) {
	a, err := ParseAddress("research/cache/latency", "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		msg     string
		uri     string
		version int
		ok      bool
	}{
		{WriteMessage("update", a, 7, "digest", "researcher").String(), "bb://acme/research/cache/latency", 7, true},
		{WriteMessage("link", a, 1, "cites bb://acme/x", "agent").String(), "bb://acme/research/cache/latency", 1, true},
		{"a person's commit\n", "", 0, false},
		{Message{Subject: "edit two notes", Agent: "Ada"}.String(), "", 0, false},
		{"x\n\nBlackboard-Uri: bb://acme/a\nBlackboard-Version: zero\n", "", 0, false},
	} {
		uri, version, ok := WrittenAt(tc.msg)
		if uri != tc.uri || version != tc.version || ok != tc.ok {
			t.Errorf("WrittenAt(%q) = %q, %d, %t; want %q, %d, %t", tc.msg, uri, version, ok, tc.uri, tc.version, tc.ok)
		}
	}
}

// The saves a commit names are read back as written, for their path only.
func TestSavedTrailersReadBack(t *testing.T) {
	m := Message{Subject: "edit t/log v3 by hand, merged: the log", URI: "bb://acme/t/log", Version: 3, Agent: "Ada",
		Saved: []string{"t/log.md 1111111111111111111111111111111111111111", "t/other.md 2222222222222222222222222222222222222222"}}
	msg := m.String()
	if got := SavedAt(msg, "t/log.md"); len(got) != 1 || got[0] != "1111111111111111111111111111111111111111" {
		t.Errorf("SavedAt(t/log.md) = %v", got)
	}
	if got := SavedAt(msg, "t/none.md"); len(got) != 0 {
		t.Errorf("SavedAt(t/none.md) = %v, want none", got)
	}
	if !ByProgram(msg) {
		t.Errorf("a message with saves is not the program's:\n%s", msg)
	}
	if uri, v, ok := WrittenAt(msg); !ok || uri != "bb://acme/t/log" || v != 3 {
		t.Errorf("WrittenAt = %q, %d, %v", uri, v, ok)
	}
}
