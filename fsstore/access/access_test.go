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

// Lint reports every problem with its line, and holds topics to the address
// grammar: what no address can name cannot be granted.
func TestLint(t *testing.T) {
	hash := strings.Repeat("a", 64)
	file := "agents:\n" +
		"  - name: a\n" +
		"    token_sha256: " + hash + "\n" +
		"    read: [con, x.md, " + strings.Repeat("k", 65) + ", Research, ok/topic/, \"*\"]\n" +
		"    write: []\n" +
		"    tokens: 1\n" +
		"  - name: a\n" +
		"    token_sha256: " + hash + "\n" +
		"    read: []\n"
	n, problems := Lint([]byte(file))
	if n != 2 {
		t.Errorf("Lint counted %d agents, want 2", n)
	}
	want := []string{
		`line 4: agent "a": read topic "con" is not a topic prefix`,
		`line 4: agent "a": read topic "x.md" is not a topic prefix`,
		`line 4: agent "a": read topic "` + strings.Repeat("k", 65) + `" is not a topic prefix: segment longer than 64 bytes`,
		`line 4: agent "a": read topic "Research" must be lower case`,
		"line 6: agent 1 has an unknown key `tokens`",
		`line 7: agent "a" appears twice (first at line 2)`,
		`line 8: agent "a" has the same token_sha256 as agent "a"`,
		"line 7: agent \"a\" has no `write:` list",
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
			t.Errorf("no problem starts with %q; got:\n%s", w, strings.Join(got, "\n"))
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	if _, err := Parse([]byte(file)); err == nil || !strings.Contains(err.Error(), "line 4") {
		t.Errorf("Parse = %v, want the first problem, at line 4", err)
	}
	var f File
	if _, err := f.Add("b", []string{"con"}, nil); err == nil {
		t.Error("Add granted the topic con, which no address can name")
	}
}
