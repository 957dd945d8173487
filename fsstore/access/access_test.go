package access

import (
	"slices"
	"strings"
	"testing"
)

func TestAddAuthenticateRevoke(t *testing.T) {
	var f File
	tok, err := f.Add("alice", []string{"ops"}, []string{"research/cache"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mustMarshal(t, &f)), tok) {
		t.Fatal("the file stores the token itself")
	}
	if a, ok := f.Authenticate(tok); !ok || a.Name != "alice" {
		t.Fatalf("Authenticate(token) = %v, %v", a, ok)
	}
	for _, bad := range []string{"", tok[:len(tok)-1], tok + "x", strings.ToUpper(tok)} {
		if _, ok := f.Authenticate(bad); ok {
			t.Errorf("Authenticate(%q) accepted", bad)
		}
	}
	if _, err := f.Add("alice", nil, []string{"x"}); err == nil {
		t.Error("a second alice was added")
	}
	back, err := Parse(mustMarshal(t, &f))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := back.Authenticate(tok); !ok {
		t.Error("the token does not survive a save and load")
	}
	if !back.Revoke("alice") || back.Revoke("alice") {
		t.Error("revoke")
	}
	if _, ok := back.Authenticate(tok); ok {
		t.Error("a revoked token still authenticates")
	}
}

func mustMarshal(t *testing.T, f *File) []byte {
	t.Helper()
	b, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRefusesBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"not yaml":      "agents: [",
		"unknown key":   "agents:\n  - name: a\n    token: x\n",
		"bad hash":      "agents:\n  - name: a\n    token_sha256: abc\n",
		"bad topic":     "agents:\n  - name: a\n    token_sha256: " + strings.Repeat("a", 64) + "\n    read: [../x]\n",
		"duplicate":     "agents:\n  - {name: a, token_sha256: " + strings.Repeat("a", 64) + "}\n  - {name: a, token_sha256: " + strings.Repeat("b", 64) + "}\n",
		"name with \\n": "agents:\n  - {name: \"a\\nb\", token_sha256: " + strings.Repeat("a", 64) + "}\n",
	} {
		if _, err := Parse([]byte(content)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if f, err := Parse(nil); err != nil || len(f.Agents) != 0 {
		t.Errorf("an empty file: %v %v", f, err)
	}
}

func TestScope(t *testing.T) {
	s := NewScope([]string{"research/cache", "ops"})
	for key, want := range map[string]bool{"ops/a": true, "ops": true, "opsx/a": false, "research/cache/x": true,
		"research/other": false, "research": false} {
		if got := s.Allows(key); got != want {
			t.Errorf("Allows(%q) = %v", key, got)
		}
	}
	for prefix, want := range map[string][]string{"": {"research/cache", "ops"}, "research": {"research/cache"},
		"ops/deploy": {"ops/deploy"}, "secret": {}} {
		if got := s.Narrow(prefix); !slices.Equal(got, want) || got == nil {
			t.Errorf("Narrow(%q) = %#v, want %#v", prefix, got, want)
		}
	}
	if all := NewScope([]string{"*"}); all.Narrow("") != nil || !all.Allows("x/y") {
		t.Error("* admits everything")
	}
}
