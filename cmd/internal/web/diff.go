package web

import "strings"

// diffLine is one line of a diff: kept (' '), removed ('-') or added ('+').
type diffLine struct {
	Op   string
	Text string
}

// maxDiffCells bounds the comparison of the lines that differ (the longest
// common subsequence of a by b lines): past it, they are shown as removed
// and added whole.
const maxDiffCells = 1 << 20

// lineDiff is the difference between two texts, line by line: the common
// start and end kept, and between them the longest common subsequence.
func lineDiff(a, b string) []diffLine {
	x, y := splitLines(a), splitLines(b)
	pre := 0
	for pre < len(x) && pre < len(y) && x[pre] == y[pre] {
		pre++
	}
	suf := 0
	for suf < len(x)-pre && suf < len(y)-pre && x[len(x)-1-suf] == y[len(y)-1-suf] {
		suf++
	}
	var out []diffLine
	for _, l := range x[:pre] {
		out = append(out, diffLine{" ", l})
	}
	out = append(out, middle(x[pre:len(x)-suf], y[pre:len(y)-suf])...)
	for _, l := range x[len(x)-suf:] {
		out = append(out, diffLine{" ", l})
	}
	return out
}

func middle(x, y []string) []diffLine {
	var out []diffLine
	if len(x)*len(y) > maxDiffCells {
		for _, l := range x {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, diffLine{"+", l})
		}
		return out
	}
	// lcs[i][j]: the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			out = append(out, diffLine{" ", x[i]})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			out = append(out, diffLine{"-", x[i]}) // removals before additions, as git shows them
			i++
		default:
			out = append(out, diffLine{"+", y[j]})
			j++
		}
	}
	return out
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
