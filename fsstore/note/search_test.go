package note

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestIdentifiers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"shipped deploy-v2.4.7-hotfix on Monday", "deploy-v2.4.7-hotfix"},
		{"ERR_CONN_RESET, then cache_test.go.", "ERR_CONN_RESET cache_test.go"},
		{"v2.4.7", "v2.4.7"},
		{"plain words only", ""},
		{"trailing. dot-", ""},
		{"a--b a-b-", "a-b"},
		{"bb://acme/r/old", "acme/r/old"},
		{"é-漢字 x", "é-漢字"},
	}
	for _, tt := range tests {
		var got []string
		Identifiers(tt.in, func(id string) { got = append(got, id) })
		if g := strings.Join(got, " "); g != tt.want {
			t.Errorf("Identifiers(%q) = %q, want %q", tt.in, g, tt.want)
		}
	}
}

func TestSaysWhen(t *testing.T) {
	for _, tc := range []struct {
		digest, content string
		want            bool
	}{
		{"Deploy", "The deploy went out yesterday.", true},
		{"Deploy", "We ship on Friday.", true},
		{"Deploy moved to 2026-03-14", "See the plan.", true},
		{"Deploy", "It went out three days ago.", true},
		{"Deploy", "Planned for next week.", true},
		{"Deploy", "The freeze starts 4 May.", true},
		{"Deploy", "It shipped in 2023.", true},
		{"Deploy", "The canary looks good; we may ship.", false},
		{"Deploy", "Bands march through the square.", false},
		{"Deploy", "The deploy needs a canary and a rollback plan.", false},
		// A conversation's line head dates every turn alike.
		{"Alice: Hi Bob", "Alice (1:56 pm on 8 May, 2023): Hi Bob, how are you?", false},
		{"Bob: fine", "[2023-05-08 13:57] Bob: fine, we went hiking yesterday", true},
		{"Bob: fine", "[2023-05-08 13:57] Bob: fine, thanks", false},
		{"Note", "Note: the review is on Monday.", true},
	} {
		if got := SaysWhen(tc.digest, tc.content); got != tc.want {
			t.Errorf("SaysWhen(%q, %q) = %v, want %v", tc.digest, tc.content, got, tc.want)
		}
	}
}

func TestAsksWhen(t *testing.T) {
	for q, want := range map[string]bool{
		"When did the payments deploy go out?":   true,
		"when was the cache resized":             true,
		"What year did Caroline move?":           true,
		"How long ago did they meet?":            true,
		"How long has Caroline had her friends?": true,
		"how many years did the migration take":  true,
		"how many tickets are open":              false,
		"Which month is the review?":             true,
		"what did the reviewer object to":        false,
		"Whenever the cache misses, why?":        false,
		"who owns the cache work":                false,
	} {
		if got := AsksWhen(q); got != want {
			t.Errorf("AsksWhen(%q) = %v, want %v", q, got, want)
		}
	}
}

// A digest that repeats most of a short body is searched as the body's
// words, not weighted above them; a title over a document keeps its weight.
func TestADigestThatRepeatsTheBodyRanksAsTheBody(t *testing.T) {
	for _, tc := range []struct {
		digest, body string
		folded       bool
	}{
		{"Caroline: Hey Mel! Good to see you", "Caroline (8 May 2023): Hey Mel! Good to see you! How have you been?", true},
		{"Cache hit rate fell to 71%", "The LRU is undersized for the working set.", false},
		{"experimental investigation of the aerodynamics of a wing in a slipstream",
			"experimental investigation of the aerodynamics of a wing in a slipstream. " + strings.Repeat("an experimental study of a wing in a propeller slipstream was made. ", 5), false},
		{"Deploy v2.4.7 went out", "Deploy v2.4.7 went out at noon.", true},
	} {
		f, err := Parse([]byte("---\ndigest: " + strconv.Quote(tc.digest) + "\n---\n" + tc.body))
		if err != nil {
			t.Fatal(err)
		}
		got := TextOf("t/k", f, tc.body)
		if folded := got.Digest == ""; folded != tc.folded {
			t.Errorf("digest %q over %q: searched as the body %v, want %v", tc.digest, tc.body, folded, tc.folded)
		}
		if tc.folded && (got.Echo != tc.digest || got.Body != tc.body) {
			t.Errorf("a digest that repeats the body: echo %q, body %q", got.Echo, got.Body)
		}
		if !strings.Contains(got.IDs, "v247") && strings.Contains(tc.digest, "v2.4.7") {
			t.Errorf("the digest's identifier is lost: %q", got.IDs)
		}
	}
}

func TestReadLineHead(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	for content, want := range map[string]LineHead{
		"Caroline (1:56 pm on 8 May, 2023): Hey Mel!": {Speaker: "Caroline", Said: day(2023, 5, 8)},
		"Alice (May 8th, 2023): fine":                 {Speaker: "Alice", Said: day(2023, 5, 8)},
		"[2023-05-08 13:56] Bob: fine, thanks":        {Speaker: "Bob", Said: day(2023, 5, 8)},
		"Dr Lee (3 June 2025): The deploy went out":   {Speaker: "Dr Lee", Said: day(2025, 6, 3)},
		"Bob (yesterday): fine":                       {Speaker: "Bob"}, // not a date of its own
		"Bob (June 2025): fine":                       {Speaker: "Bob"}, // a month, not a day
		"[13:56] Bob: fine":                           {Speaker: "Bob"},
		"Note: the review is on 3 June 2025.":         {}, // no head: it says no when
		"The deploy (8 May, 2023) went out":           {}, // not a line head
		"":                                            {},
	} {
		got, ok := ReadLineHead(content)
		if ok != (want != LineHead{}) || got.Speaker != want.Speaker || !got.Said.Equal(want.Said) {
			t.Errorf("ReadLineHead(%q) = %+v, %v; want %+v", content, got, ok, want)
		}
		if ok && !strings.HasSuffix(content[:got.Len], ": ") {
			t.Errorf("ReadLineHead(%q): the head is %q", content, content[:got.Len])
		}
	}
}
