package note

import (
	"testing"
	"time"
)

func TestNamedSpan(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC) // a Wednesday
	d := func(y int, m time.Month, day int) time.Time { return time.Date(y, m, day, 0, 0, 0, 0, time.UTC) }
	for q, want := range map[string]Span{
		"what did the reviewer say yesterday": {d(2026, 12, 1), d(2026, 12, 2)},
		"what broke today":                    {d(2026, 12, 2), d(2026, 12, 3)},
		"what happened last week":             {d(2026, 11, 23), d(2026, 11, 30)},
		"what is open this week":              {d(2026, 11, 30), d(2026, 12, 7)},
		"what did we decide last month":       {d(2026, 11, 1), d(2026, 12, 1)},
		"what shipped this year":              {d(2026, 1, 1), d(2027, 1, 1)},
		"who deployed on Monday":              {d(2026, 11, 30), d(2026, 12, 1)},
		"what happened last Wednesday":        {d(2026, 11, 25), d(2026, 11, 26)},
		"what did Alice say on 8 May 2023":    {d(2023, 5, 8), d(2023, 5, 9)},
		"what did Alice say on May 8th, 2023": {d(2023, 5, 8), d(2023, 5, 9)},
		"the outage of 3 June":                {d(2026, 6, 3), d(2026, 6, 4)},
		"the review on the 24th of December":  {d(2025, 12, 24), d(2025, 12, 25)},
		"the incident on 2026-03-14":          {d(2026, 3, 14), d(2026, 3, 15)},
		"what did we plan in June 2025":       {d(2025, 6, 1), d(2025, 7, 1)},
		"what did we plan in December":        {d(2026, 12, 1), d(2027, 1, 1)},
		"what did we plan in January":         {d(2026, 1, 1), d(2026, 2, 1)},
		"what moved in 2024":                  {d(2024, 1, 1), d(2025, 1, 1)},
	} {
		got, ok := NamedSpan(q, now)
		if !ok || !got.From.Equal(want.From) || !got.To.Equal(want.To) {
			t.Errorf("NamedSpan(%q) = %v, %v; want %v", q, got, ok, want)
		}
	}
	for _, q := range []string{
		"why did checkout get slower",
		"we may ship the cache",
		"bands march through the square",
		"what did v2024 change", // not a year
		"how many 2024 tickets", // a number, not "in 2024"
		"the 2026-13-45 build",
	} {
		if got, ok := NamedSpan(q, now); ok {
			t.Errorf("NamedSpan(%q) = %v; want no span", q, got)
		}
	}
	if s := (Span{d(2026, 12, 1), d(2026, 12, 2)}); !s.Holds(d(2026, 12, 1).Add(time.Hour)) || s.Holds(d(2026, 12, 2)) {
		t.Error("a span holds its first instant and not its end")
	}
}
