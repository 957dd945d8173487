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

// chatHeader is the line head of a conversation kept as notes: the speaker
// and when it was said, "Alice (8 May 2023): " or "[2023-05-08 13:56] Bob: ".
// It dates every note alike, so it says nothing about when a thing happened.
var chatHeader = regexp.MustCompile(`^\s*(\[[^\]\n]{1,60}\]\s*)?([^\s:()\[\]][^:()\[\]\n]{0,40}?)?\s*(\([^)\n]{1,60}\))?\s*:\s`)

// SaidAt is the day a conversation's line head says the note's line was
// said ("Alice (8 May 2023): ", "[2023-05-08 13:56] Bob: "), in loc: the
// time a question that names a day or month finds it by. A head without a
// date of its own (a year, or a date written 2023-05-08) names none.
func SaidAt(content string, loc *time.Location) (time.Time, bool) {
	h := chatHeader.FindString(content[:min(len(content), 200)])
	if h == "" || !strings.ContainsAny(h, "([") {
		return time.Time{}, false
	}
	absolute := false
	eachLowerWord(h, func(w string) bool {
		absolute = isYear(w)
		return !absolute
	})
	if !absolute {
		return time.Time{}, false
	}
	span, ok := NamedSpan(h, time.Date(9999, 1, 1, 0, 0, 0, 0, loc))
	if !ok || !span.To.Equal(span.From.AddDate(0, 0, 1)) {
		return time.Time{}, false
	}
	return span.From, true
}

// sayWhenReach is how much of a note's content SaysWhen reads: a long
// document says when within its opening pages, or nowhere it would help.
const sayWhenReach = 64 << 10

// SaysWhen reports whether a note's text tells when something happened or
// will: search ranks such notes higher for a question that asks when. The
// head of a line of a conversation ("Alice (8 May 2023): ") does not count.
func SaysWhen(digest, content string) bool {
	for _, s := range []string{digest, content[:min(len(content), sayWhenReach)]} {
		if h := chatHeader.FindString(s); h != "" && strings.ContainsAny(h, "([") {
			s = s[len(h):]
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

// isDayNumber: 8, 08, 8th, 21st, or a year (March 2024).
func isDayNumber(w string) bool {
	w = strings.TrimRight(w, "stndrh")
	return len(w) >= 1 && len(w) <= 2 && isNumber(w) || isYear(w)
}

// asksWhen matches a question about a time: "when did ...", "what year
// ...", "how long ago ...", or how long a thing took or lasted ("how long
// has ...", "how many years ..."), which a note that tells a time answers
// too ("for four years", "since 2019").
var asksWhen = regexp.MustCompile(`(?i)^\W*(when\b|since when\b|how long\b|how many (years|months|weeks|days)\b|(what|which) (year|month|day|date|time|week)\b)`)

// AsksWhen reports whether a search question asks when.
func AsksWhen(q string) bool { return asksWhen.MatchString(q) }
