package gitver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestReflogEndsAgreeWithWholeReads: the moves read through the kept end
// of a reflog are those a read of the whole file finds in the same last
// bytes, while the reflog grows by lines, by a line being appended (cut
// until it is whole), is cut short, and is written anew, by rename or in
// place, longer or shorter, the same size included.
func TestReflogEndsAgreeWithWholeReads(t *testing.T) {
	r, _ := writerAndReader(t)
	path := filepath.Join(r.gitDir, "logs", "refs", "heads", "main")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(49, 3))
	var content []byte
	line := func(i int) string {
		return fmt.Sprintf("%040x %040x Agent %d <a%d@example.com> %d +0000\tblackboard: %s\n",
			rng.Uint64(), rng.Uint64(), i, i, 1700000000+i, strings.Repeat("x", rng.IntN(300)))
	}
	write := func(b []byte, rename bool) {
		t.Helper()
		if rename {
			tmp := path + ".lock"
			if err := os.WriteFile(tmp, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		content = b
	}
	n := 0
	for step := range 600 {
		switch k := rng.IntN(20); {
		case k < 14: // lines appended
			b := append([]byte(nil), content...)
			for range 1 + rng.IntN(40) {
				b = append(b, line(n)...)
				n++
			}
			write(b, false)
		case k < 16: // a line being appended, then whole
			l := line(n)
			n++
			cut := rng.IntN(len(l) - 1)
			write(append(append([]byte(nil), content...), l[:cut]...), false)
			checkReflogReads(t, r, step, content)
			write(append(append([]byte(nil), content...), l[cut:]...), false)
		case k < 17: // cut short
			write(append([]byte(nil), content[:rng.IntN(len(content)+1)]...), false)
		case k < 18: // written anew, a new file
			b := []byte{}
			for range rng.IntN(200) {
				b = append(b, line(n)...)
				n++
			}
			write(b, true)
		default: // the same size, in place or by rename: other lines
			b := []byte(strings.Map(func(c rune) rune {
				if c >= 'a' && c <= 'f' {
					return 'a' + (c-'a'+1)%6
				}
				return c
			}, string(content)))
			write(b, k == 18)
		}
		checkReflogReads(t, r, step, content)
	}
}

// checkReflogReads compares r's reads of the reflog, for the tails its callers ask,
// with a read of content whole.
func checkReflogReads(t *testing.T, r *Repo, step int, content []byte) {
	t.Helper()
	for _, tail := range []int64{4 << 10, reflogTail, 1 << 20} {
		got, gotWhole, err := r.branchMoves(tail)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		want, wantWhole := wholeRead(content, min(tail, reflogTail))
		if len(got) == 0 && len(want) == 0 {
			got, want = nil, nil
		}
		if gotWhole != wantWhole || !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d, last %d bytes of %d: %d moves (whole %v), a whole read finds %d (whole %v)",
				step, tail, len(content), len(got), gotWhole, len(want), wantWhole)
		}
	}
}

// wholeRead is the moves in the last tail bytes of a reflog, read at once:
// the whole lines that start past the first line break there.
func wholeRead(content []byte, tail int64) ([]ReflogEntry, bool) {
	start := max(0, int64(len(content))-tail)
	buf := string(content[start:])
	if i := strings.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[:i+1]
	} else {
		buf = ""
	}
	lines := strings.SplitAfter(buf, "\n")
	if start > 0 && len(lines) > 0 {
		lines = lines[1:]
	}
	var moves []ReflogEntry
	for _, l := range lines {
		if e, ok := parseReflogLine(strings.TrimSuffix(l, "\n")); ok && strings.HasSuffix(l, "\n") {
			moves = append(moves, e)
		}
	}
	return moves, start == 0
}
