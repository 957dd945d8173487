package o200k

import (
	"unicode"
	"unicode/utf8"
)

// pieceEnd returns where the piece of s that starts at i ends. It is the
// encoding's split pattern, its alternatives tried in order at i as a
// backtracking matcher tries them:
//
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//	\p{N}{1,3}
//	 ?[^\s\p{L}\p{N}]+[\r\n/]*
//	\s*[\r\n]+
//	\s+(?!\S)
//	\s+
func pieceEnd(s string, i int) int {
	r, size := runeAt(s, i)
	lead := isLead(r)
	if lead {
		if e := lowerWord(s, i+size); e >= 0 {
			return e
		}
	}
	if e := lowerWord(s, i); e >= 0 {
		return e
	}
	if lead {
		if e := upperWord(s, i+size); e >= 0 {
			return e
		}
	}
	if e := upperWord(s, i); e >= 0 {
		return e
	}
	if isNumber(r) {
		e := i + size
		for range 2 {
			r, size := runeAt(s, e)
			if e == len(s) || !isNumber(r) {
				break
			}
			e += size
		}
		return e
	}
	if e := punctuation(s, i); e >= 0 {
		return e
	}
	// Whitespace: what is left.
	e, lastNewline, lastStart := i, -1, i
	for e < len(s) {
		r, size := runeAt(s, e)
		if !unicode.IsSpace(r) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNewline = e + size
		}
		lastStart = e
		e += size
	}
	switch {
	case lastNewline >= 0: // \s*[\r\n]+
		return lastNewline
	case e == len(s) || lastStart == i: // \s+(?!\S) at the end; \s+ for one
		return e
	default: // \s+(?!\S): the run but its last, which leads the next piece
		return lastStart
	}
}

// lowerWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// and a contraction at i, returning its end or -1. The first run is greedy
// and gives back what the second needs: the match ends after the second
// run when it has one, else after the last character of the first run the
// second could hold.
func lowerWord(s string, i int) int {
	e, lastLower := i, -1
	for e < len(s) {
		r, size := runeAt(s, e)
		if !isUpperish(r) {
			break
		}
		e += size
		if isLowerish(r) {
			lastLower = e
		}
	}
	run := e
	for e < len(s) {
		r, size := runeAt(s, e)
		if !isLowerish(r) {
			break
		}
		e += size
	}
	switch {
	case e > run:
	case lastLower >= 0:
		e = lastLower
	default:
		return -1
	}
	return contraction(s, e)
}

// upperWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
// and a contraction at i, returning its end or -1.
func upperWord(s string, i int) int {
	e := i
	for e < len(s) {
		r, size := runeAt(s, e)
		if !isUpperish(r) {
			break
		}
		e += size
	}
	if e == i {
		return -1
	}
	for e < len(s) {
		r, size := runeAt(s, e)
		if !isLowerish(r) {
			break
		}
		e += size
	}
	return contraction(s, e)
}

// contraction returns the end of (?i:'s|'t|'re|'ve|'m|'ll|'d) at i, or i
// when there is none. Case folding makes ſ an s.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return i
	}
	c, size := runeAt(s, i+1)
	folds := func(at int, want byte) bool { return at < len(s) && s[at]|0x20 == want }
	switch c {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D', 'ſ':
		return i + 1 + size
	case 'r', 'R', 'v', 'V':
		if folds(i+2, 'e') {
			return i + 3
		}
	case 'l', 'L':
		if folds(i+2, 'l') {
			return i + 3
		}
	}
	return i
}

// punctuation matches  ?[^\s\p{L}\p{N}]+[\r\n/]* at i, returning its end or
// -1.
func punctuation(s string, i int) int {
	e := i
	if s[e] == ' ' {
		e++
	}
	start := e
	for e < len(s) {
		r, size := runeAt(s, e)
		if !isSymbol(r) {
			break
		}
		e += size
	}
	if e == start {
		return -1
	}
	for e < len(s) && (s[e] == '\r' || s[e] == '\n' || s[e] == '/') {
		e++
	}
	return e
}

// runeAt decodes the rune at i, ASCII first. At the end of s it returns
// utf8.RuneError, which no class but isSymbol holds, and callers check the
// length first where that matters.
func runeAt(s string, i int) (rune, int) {
	if i < len(s) && s[i] < utf8.RuneSelf {
		return rune(s[i]), 1
	}
	if i >= len(s) {
		return utf8.RuneError, 0
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r|0x20 && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return '0' <= r && r <= '9'
	}
	return unicode.IsNumber(r)
}

// isLead is [^\r\n\p{L}\p{N}], the character a word may start with.
func isLead(r rune) bool { return r != '\r' && r != '\n' && !isLetter(r) && !isNumber(r) }

// isSymbol is [^\s\p{L}\p{N}].
func isSymbol(r rune) bool { return !unicode.IsSpace(r) && !isLetter(r) && !isNumber(r) }

// isUpperish is [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M)
}

// isLowerish is [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M)
}
