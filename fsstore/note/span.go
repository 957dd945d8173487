package note

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Span is a stretch of time a question names: from From, up to but not
// including To.
type Span struct{ From, To time.Time }

// Holds reports whether t falls in the span.
func (s Span) Holds(t time.Time) bool { return !t.Before(s.From) && t.Before(s.To) }

var months = map[string]time.Month{
	"january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
	"august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
	"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
	"oct": 10, "nov": 11, "dec": 12,
}

var weekdays = map[string]time.Weekday{
	"sunday": 0, "monday": 1, "tuesday": 2, "wednesday": 3, "thursday": 4, "friday": 5, "saturday": 6,
}

var isoDay = regexp.MustCompile(`\b(\d{4})-(\d{2})-(\d{2})\b`)

// NamedSpan is the stretch of time a search question names, if it names
// one: a day ("yesterday", "on Monday", "3 June", "2026-06-03"), a week
// ("last week"), a month ("June 2026", "last month") or a year ("in 2025").
// Times said relative to now are read in now's zone; a day or month named
// without a year is the latest one not after now. "May" and "March" alone
// are verbs as often, and name a month next to a number only.
func NamedSpan(q string, now time.Time) (Span, bool) {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	day := func(t time.Time) Span { return Span{t, t.AddDate(0, 0, 1)} }
	if m := isoDay.FindStringSubmatch(q); m != nil {
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		d, _ := strconv.Atoi(m[3])
		if t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, now.Location()); t.Day() == d && mo >= 1 && mo <= 12 {
			return day(t), true
		}
	}
	words := LowerWords(q)
	at := func(i int) string {
		if i < 0 || i >= len(words) {
			return ""
		}
		return words[i]
	}
	for i, w := range words {
		switch {
		case w == "today" || w == "tonight":
			return day(today), true
		case w == "yesterday":
			return day(today.AddDate(0, 0, -1)), true
		case at(i-1) == "this" || at(i-1) == "last" || at(i-1) == "past":
			back := 0
			if at(i-1) != "this" {
				back = 1
			}
			switch w {
			case "week":
				monday := today.AddDate(0, 0, -(int(today.Weekday())+6)%7-7*back)
				return Span{monday, monday.AddDate(0, 0, 7)}, true
			case "month":
				first := time.Date(today.Year(), today.Month()-time.Month(back), 1, 0, 0, 0, 0, now.Location())
				return Span{first, first.AddDate(0, 1, 0)}, true
			case "year":
				first := time.Date(today.Year()-back, 1, 1, 0, 0, 0, 0, now.Location())
				return Span{first, first.AddDate(1, 0, 0)}, true
			}
		}
		if wd, ok := weekdays[w]; ok {
			back := (int(today.Weekday()) - int(wd) + 7) % 7
			if at(i-1) == "last" && back == 0 {
				back = 7
			}
			return day(today.AddDate(0, 0, -back)), true
		}
		if mo, ok := months[w]; ok {
			year, hasYear := yearAt(at(i + 1))
			d, hasDay := dayAt(at(i + 1))
			if !hasDay {
				d, hasDay = dayAt(at(i - 1))
				if !hasDay && at(i-1) == "of" {
					d, hasDay = dayAt(at(i - 2))
				}
			}
			if hasDay && !hasYear {
				year, hasYear = yearAt(at(i + 2))
			}
			if !hasDay && !hasYear && (w == "may" || w == "march" || w == "mar") {
				continue
			}
			latest := func(t func(y int) time.Time) time.Time {
				if hasYear {
					return t(year)
				}
				if c := t(today.Year()); !c.After(today) {
					return c
				}
				return t(today.Year() - 1)
			}
			if hasDay {
				t := latest(func(y int) time.Time { return time.Date(y, mo, d, 0, 0, 0, 0, now.Location()) })
				if t.Day() == d {
					return day(t), true
				}
				continue
			}
			first := latest(func(y int) time.Time { return time.Date(y, mo, 1, 0, 0, 0, 0, now.Location()) })
			return Span{first, first.AddDate(0, 1, 0)}, true
		}
		if y, ok := yearAt(w); ok && (at(i-1) == "in" || at(i-1) == "during" || at(i-1) == "of") {
			first := time.Date(y, 1, 1, 0, 0, 0, 0, now.Location())
			return Span{first, first.AddDate(1, 0, 0)}, true
		}
	}
	return Span{}, false
}

func yearAt(w string) (int, bool) {
	if !isYear(w) {
		return 0, false
	}
	y, _ := strconv.Atoi(w)
	return y, true
}

// dayAt reads a day of the month: 3, 03, 3rd, 21st.
func dayAt(w string) (int, bool) {
	w = strings.TrimRight(w, "stndrh")
	if len(w) == 0 || len(w) > 2 || !isNumber(w) {
		return 0, false
	}
	d, _ := strconv.Atoi(w)
	return d, d >= 1 && d <= 31
}
