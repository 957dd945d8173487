package note

import (
	"regexp"
	"strings"
	"time"
	"unicode"
)

// What says when in English prose (SaysWhen): a date, a month or a day of
// the week, a year, or time said relative to now ("yesterday", "last week",
// "three days ago"). "May" and "March" count next to a number only: alone
// they are a verb as often.
var (
	timeWords = wordSet(`yesterday today tonight tomorrow ago weekend weekends recently
		january february april june july august september october november december
		jan feb apr jun jul aug sept oct nov dec
		monday tuesday wednesday thursday friday saturday sunday`)
	timeMonthVerbs = wordSet(`may march`)
	timeRelative   = wordSet(`last next this past coming previous`)
	timeSpans      = wordSet(`week month year weekend night morning evening summer winter spring autumn fall`)
	timeUnits      = wordSet(`day days week weeks month months year years hour hours`)
	timeCounts     = wordSet(`a an one two three four five six seven eight nine ten few couple several`)
)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// lineHead matches the head of a line of a conversation kept a turn a
// note: the speaker and when it was said, "Alice (8 May 2023): " or
// "[2023-05-08 13:56] Bob: ".
var lineHead = regexp.MustCompile(`^\s*(\[[^\]\n]{1,60}\]\s*)?([^\s:()\[\]][^:()\[\]\n]{0,40}?)?\s*(\([^)\n]{1,60}\))?\s*:\s`)

// lineHeadReach bounds where a line head can end: its parts are bounded.
const lineHeadReach = 200

// LineHead is the head of a line of a conversation kept a turn a note.
type LineHead struct {
	Len     int       // its length in bytes, the space after its colon included
	Speaker string    // who said the line ("Alice"); "" when it names no one
	Said    time.Time // the day it says the line was said, midnight UTC; zero when it gives no date of its own
}

// ReadLineHead reads the line head content starts with, if it has one. A
// head says when the line was said, in brackets or parentheses: "Note: the
// review is on Monday" has none. Its date counts when it is a date of its
// own (with a year, or written 2023-05-08), a day, not a month.
func ReadLineHead(content string) (LineHead, bool) {
	m := lineHead.FindStringSubmatch(content[:min(len(content), lineHeadReach)])
	if m == nil || m[1] == "" && m[3] == "" {
		return LineHead{}, false
	}
	h := LineHead{Len: len(m[0]), Speaker: strings.TrimSpace(m[2])}
	when := m[1] + m[3]
	absolute := false
	eachLowerWord(when, func(w string) bool {
		absolute = isYear(w)
		return !absolute
	})
	if !absolute {
		return h, true
	}
	if span, ok := NamedSpan(when, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)); ok && span.To.Equal(span.From.AddDate(0, 0, 1)) {
		h.Said = span.From
	}
	return h, true
}

// sayWhenReach is how much of a note's content SaysWhen reads: a long
// document says when within its opening pages, or nowhere it would help.
const sayWhenReach = 64 << 10

// SaysWhen reports whether a note's text tells when something happened or
// will: search ranks such notes higher for a question that asks when. The
// head of a line of a conversation ("Alice (8 May 2023): ") does not count.
func SaysWhen(digest, content string) bool {
	for _, s := range []string{digest, content[:min(len(content), sayWhenReach)]} {
		if h, ok := ReadLineHead(s); ok {
			s = s[h.Len:]
		}
		if tellsTime(s) {
			return true
		}
	}
	return false
}

// tellsTime reports whether s holds one of the time words, read a word at a
// time with the word before it.
func tellsTime(s string) bool {
	prev := ""
	found := false
	eachLowerWord(s, func(w string) bool {
		switch {
		case timeWords[w],
			isYear(w),
			timeMonthVerbs[w] && isDayNumber(prev),
			timeMonthVerbs[prev] && isDayNumber(w),
			timeRelative[prev] && (timeSpans[w] || timeWords[w]),
			timeUnits[w] && (timeCounts[prev] || isNumber(prev)):
			found = true
			return false
		}
		prev = w
		return true
	})
	return found
}

// eachLowerWord calls fn with each run of letters and digits of s, lower
// case, until fn returns false.
func eachLowerWord(s string, fn func(string) bool) {
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if !fn(strings.ToLower(s[start:i])) {
				return
			}
			start = -1
		}
	}
	if start >= 0 {
		fn(strings.ToLower(s[start:]))
	}
}

func isNumber(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}

// isYear: 1900 to 2099.
func isYear(w string) bool {
	return len(w) == 4 && isNumber(w) && (w[:2] == "19" || w[:2] == "20")
}

// isDayNumber: a day of the month (dayAt), or a year (March 2024).
func isDayNumber(w string) bool {
	_, day := dayAt(w)
	return day || isYear(w)
}

// asksWhen matches a question about a time: "when did ...", "what year
// ...", "how long ago ...", or how long a thing took or lasted ("how long
// has ...", "how many years ..."), which a note that tells a time answers
// too ("for four years", "since 2019").
var asksWhen = regexp.MustCompile(`(?i)^\W*(when\b|since when\b|how long\b|how many (years|months|weeks|days)\b|(what|which) (year|month|day|date|time|week)\b)`)

// AsksWhen reports whether a search question asks when.
func AsksWhen(q string) bool { return asksWhen.MatchString(q) }
