package note

import (
	"regexp"
	"strings"
)

// timeWords are what says when in English prose: a date, a month or a day
// of the week, a year, or time said relative to now ("yesterday", "last
// week", "three days ago"). "May" and "March" count with a number next to
// them only: alone they are a verb as often.
var timeWords = regexp.MustCompile(`(?i)\b(` +
	`yesterday|today|tonight|tomorrow|ago|weekend|recently|` +
	`(last|next|this|past|coming|previous) (week|month|year|weekend|night|morning|evening|summer|winter|spring|autumn|fall|time|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|` +
	`january|february|april|june|july|august|september|october|november|december|` +
	`jan|feb|apr|jun|jul|aug|sep|sept|oct|nov|dec|` +
	`monday|tuesday|wednesday|thursday|friday|saturday|sunday|` +
	`\d{1,2}(st|nd|rd|th)? (may|march)|(may|march) \d{1,4}|` +
	`(19|20)\d\d|\d{4}-\d{2}-\d{2}|` +
	`(a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|\d+) (days?|weeks?|months?|years?|hours?)` +
	`)\b`)

// chatHeader is the line head of a conversation kept as notes: the speaker
// and when it was said, "Alice (8 May 2023): " or "[2023-05-08 13:56] Bob: ".
// It dates every note alike, so it says nothing about when a thing happened.
var chatHeader = regexp.MustCompile(`^\s*(\[[^\]\n]{1,60}\]\s*)?([^\s:()\[\]][^:()\[\]\n]{0,40}?)?\s*(\([^)\n]{1,60}\))?\s*:\s`)

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
		if timeWords.MatchString(s) {
			return true
		}
	}
	return false
}

// asksWhen matches a question about a time: "when did ...", "what year
// ...", "how long ago ...".
var asksWhen = regexp.MustCompile(`(?i)^\W*(when\b|since when\b|how long ago\b|(what|which) (year|month|day|date|time|week)\b)`)

// AsksWhen reports whether a search question asks when.
func AsksWhen(q string) bool { return asksWhen.MatchString(q) }
