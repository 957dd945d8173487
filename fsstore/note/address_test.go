package note

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in, want string // want "" means ErrInvalid
	}{
		{"bb://acme/research/cache/latency", "bb://acme/research/cache/latency"},
		{"research/cache/latency", "bb://acme/research/cache/latency"},
		{"BB://ACME/Research/Cache", "bb://acme/research/cache"},
		{"run/state/current", "bb://acme/run/state/current"},
		{"a/b", "bb://acme/a/b"},
		{"t/v2.4.7-hotfix_x", "bb://acme/t/v2.4.7-hotfix_x"},
		{"a/b/c/d/e/f/g/h", "bb://acme/a/b/c/d/e/f/g/h"},
		{"t/" + strings.Repeat("k", 64), "bb://acme/t/" + strings.Repeat("k", 64)},
		{"", ""},
		{"topic", ""},
		{"bb://acme/topic", ""},
		{"bb://other/t/k", ""},
		{"http://acme/t/k", ""},
		{"a/b/c/d/e/f/g/h/i", ""},
		{"t/" + strings.Repeat("k", 65), ""},
		{"/t/k", ""},
		{"t/k/", ""},
		{"t//k", ""},
		{"../t/k", ""},
		{"t/../k", ""},
		{"t/./k", ""},
		{"t/..", ""},
		{".git/config", ""},
		{".blackboard/index", ""},
		{"t/.hidden", ""},
		{"t/-dash", ""},
		{"t/_under", ""},
		{`t\k/x`, ""},
		{"t/k\x00", ""},
		{"t/k\n", ""},
		{"t/k\t", ""},
		{"t/k y", ""},
		{"t/ké", ""},
		{"t/\u212a", ""}, // the Kelvin sign folds to k under Unicode rules, never here
		{"t/k.md", ""},
		{"t/k.blob", ""},
		{"t/k.tsv", ""},
		{"t/k.lock", ""},
		{"t/K.MD", ""},
		{"t/con", ""},
		{"t/nul.txt", ""},
		{"t/COM1", ""},
		{"t/lpt9", ""},
		{"aux/k", ""},
		{"t/console", "bb://acme/t/console"},
		{"t/com10", "bb://acme/t/com10"},
		{"bb://acme/", ""},
		{"bb://", ""},
		{strings.Repeat("a/", 600) + "b", ""},
	}
	for _, tt := range tests {
		a, err := ParseAddress(tt.in, "acme")
		if tt.want == "" {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("ParseAddress(%q) = %v, %v; want ErrInvalid", tt.in, a, err)
			} else if !strings.Contains(err.Error(), "[a-z0-9][a-z0-9._-]*") {
				t.Errorf("ParseAddress(%q) error %q does not quote the grammar", tt.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseAddress(%q) error %v; want %s", tt.in, err, tt.want)
			continue
		}
		if got := a.String(); got != tt.want {
			t.Errorf("ParseAddress(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

func TestAddressPaths(t *testing.T) {
	a, err := ParseAddress("research/cache/latency", "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ got, want string }{
		{a.Topic(), "research"},
		{a.Short(), "research/cache/latency"},
		{a.NotePath(), "research/cache/latency.md"},
		{a.BlobPath("md"), "research/cache/latency.blob.md"},
		{a.BlobPath("tsv"), "research/cache/latency.blob.tsv"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestNoteKeyOf(t *testing.T) {
	tests := []struct {
		path, key string
	}{
		{"research/cache/latency.md", "research/cache/latency"},
		{"research/cache/latency.blob.md", "research/cache/latency"},
		{"research/cache/latency.blob.tsv", "research/cache/latency"},
		{"README.md", ""},
		{".blackboard/config.yaml", ""},
		{"Research/x.md", ""},
		{"t/has space.md", ""},
		{"t/x.txt", ""},
		{"t/.x.md.bb-tmp-abc", ""},
	}
	for _, tt := range tests {
		got, _ := KeyOf(tt.path)
		if got != tt.key {
			t.Errorf("KeyOf(%q) = %q, want %q", tt.path, got, tt.key)
		}
	}
}

// TestCanonicalSegmentAgreesWithFold: KeyOf's allocation-free test of a
// segment says yes exactly when FoldSegment takes the segment unchanged, on
// random segments built from the characters that decide it.
func TestCanonicalSegmentAgreesWithFold(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "z", "0", "9", "A", "Z", ".", "_", "-", "/", " ", "é", "con", "lpt1", "com", "aux",
		".md", ".blob", ".tsv", ".lock", ".tmp", "conout$", "x"}
	for i := range 200000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if i%1000 == 0 {
			b.WriteString(strings.Repeat("a", 60+rng.IntN(8)))
		}
		seg := b.String()
		folded, problem := FoldSegment(seg)
		want := problem == "" && folded == seg
		if got := isCanonicalSegment(seg); got != want {
			t.Fatalf("isCanonicalSegment(%q) = %v; FoldSegment gives (%q, %q)", seg, got, folded, problem)
		}
	}
}

// FuzzParseAddress proves that no input, however hostile, yields an address
// whose files lie outside the workspace, in a hidden directory, or on a
// program file; and that the canonical form parses back to itself.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"bb://acme/research/cache/latency", "t/k", "../t/k", "t/k.md", "bb://acme/.git/x",
		"t/con", "T/K", "t//k", "a/b/c/d/e/f/g/h", `t\k`, "t/k\x00", "bb://ACME/x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s, "acme")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseAddress(%q): error %v is not ErrInvalid", s, err)
			}
			return
		}
		for _, p := range []string{a.NotePath(), a.BlobPath("md"), a.BlobPath("tsv")} {
			if !filepath.IsLocal(p) || filepath.Clean(p) != p {
				t.Fatalf("ParseAddress(%q) maps to %q, outside the workspace", s, p)
			}
			if strings.HasPrefix(p, ".") || strings.Contains(p, "/.") || strings.ContainsAny(p, "\\\x00:") {
				t.Fatalf("ParseAddress(%q) maps to hidden or unsafe path %q", s, p)
			}
		}
		if key, ok := KeyOf(a.NotePath()); !ok || key != a.Short() {
			t.Fatalf("note path %q of %q maps back to %q", a.NotePath(), s, key)
		}
		b, err := ParseAddress(a.String(), "acme")
		if err != nil || b.String() != a.String() {
			t.Fatalf("canonical %q does not parse back: %v %v", a.String(), b, err)
		}
	})
}
