// Package linemerge merges two edits of one text by lines, the way a
// person's save is merged with what agents wrote since the version the
// person's buffer was made from. It knows text only: which version is the
// base, and what a conflict becomes, are the engine's (fsstore's edits.go).
//
// The line diffs are go-udiff's (the Go team's own diff, as gopls uses it);
// its Merge keeps both sides' edits, each once when both made the same one,
// and is the rule written here: lines both sides added at the same place
// are all kept, the branch's first, as git's union merge keeps a log's;
// where both changed the same lines differently, there is no merge.
package linemerge

import (
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// Merge merges branch and person, two texts made from base: what each
// changed of base, together. Lines both added at the same place are all
// kept, branch's first. ok is false when both changed the same lines of
// base differently (or one changed lines the other removed): a conflict,
// for the caller to settle.
func Merge(base, branch, person []byte) (merged []byte, ok bool) {
	b := string(base)
	ours := udiff.Lines(b, string(branch))
	theirs := udiff.Lines(b, string(person))
	edits, ok := udiff.Merge(ours, theirs)
	if !ok {
		return nil, false
	}
	out, err := udiff.Apply(b, edits)
	if err != nil {
		return nil, false
	}
	return []byte(out), true
}

// Distance is how many lines differ between a and b: the lines of a a
// line diff removes, and the lines it adds. 0 when they are equal.
func Distance(a, b []byte) int {
	removed, added := Diff(a, b)
	return removed + added
}

// Diff counts the lines of a that a line diff to b removes, and the lines
// it adds.
func Diff(a, b []byte) (removed, added int) {
	if string(a) == string(b) {
		return 0, 0
	}
	before := string(a)
	for _, e := range udiff.Lines(before, string(b)) {
		removed += Lines(before[e.Start:e.End])
		added += Lines(e.New)
	}
	return removed, added
}

// Lines counts s's lines, a last one without its newline included.
func Lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
