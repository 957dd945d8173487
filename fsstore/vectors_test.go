package fsstore

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
)

// meaningBoard holds notes about a few things, in the words of their
// authors, each long enough to say what it is about.
func meaningBoard(t *testing.T) *Workspace {
	t.Helper()
	w := newWorkspace(t, false)
	for _, n := range []struct{ uri, digest, body string }{
		{"ops/payments", "p99 of the payment client rose after the 1.10.19 deploy",
			"Latency of charge calls to the card processor doubled at 14:02. Customers waited at checkout; " +
				"the payment service timed out on retries and the purchase flow slowed down for every shopper."},
		{"ops/garden", "The team planted trees in the park",
			"Oak and birch along the river, and a hedge of hawthorn by the playground. The gardeners water them weekly."},
		{"ops/db", "Replica lag grew to seconds",
			"Postgres replication fell behind the primary during the nightly batch; reads from the replicas returned stale rows."},
		{"people/hiring", "Two engineers join in March",
			"Onboarding plan for the new hires: laptops, accounts, a mentor each, and the first week's reading."},
	} {
		put(t, w, n.uri, 0, n.digest, n.body)
	}
	return w
}

func embedAll(t *testing.T, w *Workspace) int {
	t.Helper()
	n, err := w.vectors.EmbedPending(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A question in other words than the note's finds it among the notes
// that share words with it; a question about nothing on the board finds
// nothing.
func TestSearchByMeaning(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	if n := embedAll(t, w); n != 5 { // and run/state/current
		t.Fatalf("made %d vectors, want 5", n)
	}
	if n := embedAll(t, w); n != 0 {
		t.Errorf("made %d vectors again with nothing changed", n)
	}
	// Another process of the board goes on from where this one finished,
	// without looking at every note again.
	other := openWorkspace(t, w.Dir(), false)
	if n := embedAll(t, other); n != 0 {
		t.Errorf("another process made %d vectors again with nothing changed", n)
	}
	put(t, other, "ops/db", 1, "Replica lag grew to seconds", "Postgres replication fell behind during the nightly batch.")
	if n := embedAll(t, w); n != 1 {
		t.Errorf("made %d vectors after another process changed one note, want 1", n)
	}
	put(t, w, "ops/db", 2, "Replica lag grew to seconds", "Postgres replication fell behind the primary during the nightly batch; reads from the replicas returned stale rows.")
	embedAll(t, w)
	if got := search(t, w, "why did the checkout get slower for shoppers", ""); len(got) == 0 || got[0] != "ops/payments" {
		t.Errorf("a question about checkout = %v; want the payments note first", got)
	}
	if got := search(t, w, "stale reads from database replicas", ""); len(got) == 0 || got[0] != "ops/db" {
		t.Errorf("a question about replicas = %v; want the replication note first", got)
	}
	for _, q := range []string{"purple elephant banana", "recipe for chocolate cake"} {
		wantNothing(t, w, q, "a question")
	}
	// A changed note gets its vector again, and again when a person's
	// reset takes the change back.
	before := fixtures.Git(t, w.Dir(), "rev-parse", "HEAD")
	put(t, w, "ops/garden", 1, "The team planted trees in the park", "Cherry trees this time, by the pond.")
	if n := embedAll(t, w); n != 1 {
		t.Errorf("made %d vectors after one note changed, want 1", n)
	}
	fixtures.Git(t, w.Dir(), "reset", "-q", "--hard", before)
	if _, err := w.Cursor(); err != nil { // the index follows the branch
		t.Fatal(err)
	}
	if n := embedAll(t, w); n != 1 {
		t.Errorf("made %d vectors after a reset took one note's change back, want 1", n)
	}
}

// An identifier in a question asks for the notes that hold exactly it:
// they come first, whatever the rest of the question means.
func TestSearchByMeaningKeepsIdentifiersFirst(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	put(t, w, "ops/flaky", 0, "A flaky test in the build", "cache_test.go fails one run in twenty on the shared runners.")
	embedAll(t, w)
	if got := search(t, w, "payment latency cache_test.go", ""); len(got) == 0 || got[0] != "ops/flaky" {
		t.Errorf("a question with an identifier = %v; want the note that holds it first", got)
	}
	// Also for a token that reads part of the board.
	hits, _, err := w.As(AgentCaller(&access.Agent{Name: "ops", Read: []string{"ops"}})).Search("payment latency cache_test.go", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].URI != w.reader.uri("ops/flaky") {
		t.Errorf("a question with an identifier, for a token of ops = %v; want the note that holds it first", hits)
	}
}

// What a token may not read is never found by its meaning either.
func TestSearchByMeaningKeepsToTheTokensTopics(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	embedAll(t, w)
	c := AgentCaller(&access.Agent{Name: "gardener", Read: []string{"ops/garden", "people"}})
	for _, q := range []string{"why did the checkout get slower for shoppers", "stale reads from database replicas", "trees in the park"} {
		hits, _, err := w.As(c).Search(q, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if h.URI != w.reader.uri("ops/garden") && h.URI != w.reader.uri("people/hiring") {
				t.Errorf("%q as the gardener finds %s", q, h.URI)
			}
		}
	}
}

// Two notes that hold the query's one shared word alike tie by their words:
// the vectors decide, for the note about what the question means. Without
// the vectors made, the tie stands (the older note first), so the order
// below comes from the meaning.
func TestMeaningDecidesBetweenEqualWordMatches(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "ops/garden", 0, "The garden is slow", "roses beside the river bloom late")
	put(t, w, "ops/basket", 0, "The checkout is slow", "customers paying by card wait long")
	for _, q := range []string{"slow shopping", "slow purchases", "slow online sales"} {
		if got := search(t, w, q, ""); len(got) != 2 || got[0] != "ops/garden" {
			t.Fatalf("%q before the vectors = %v; want the tie, the older note first", q, got)
		}
	}
	embedAll(t, w)
	for _, q := range []string{"slow shopping", "slow purchases", "slow online sales"} {
		if got := search(t, w, q, ""); len(got) != 2 || got[0] != "ops/basket" {
			t.Errorf("%q = %v; want the checkout note first, by its meaning", q, got)
		}
	}
}

// A conversation kept a turn a note: the answer to a question is the turn
// after the one that shares its words, and it comes with it; the turns of
// another conversation do not, nor the neighbours of a long note. A
// question about nothing on the board still finds nothing, and an exact
// search finds what it did.
func TestSearchFindsTheNoteNextToAHit(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	turns := []string{
		"Morning all, the standup moves to ten today.",
		"Thanks, I will be there after the dentist.",
		"Did the payments deploy finish last night?",
		"Yes, it went out at two, and the errors are back to normal.",
		"Great, then I close the incident.",
		"Lunch at noon on Friday?",
	}
	for i, text := range turns {
		put(t, w, fmt.Sprintf("chat/standup/turn-%02d", i+1), 0, text, text)
	}
	put(t, w, "chat/other/turn-02", 0, "Unrelated chatter", "Unrelated chatter in another room.")
	long := strings.Repeat("The payments deploy report, in many words about the rollout and its checks. ", 10)
	put(t, w, "docs/report-1", 0, "The payments deploy report", long)
	put(t, w, "docs/report-2", 0, "Office plants", "Water the office plants on Mondays.")
	embedAll(t, w)

	got := search(t, w, "when did the payments deploy finish", "chat")
	if !slices.Contains(got, "chat/standup/turn-03") || !slices.Contains(got, "chat/standup/turn-04") {
		t.Errorf("the question's turn and the answer next to it: got %v", got)
	}
	if slices.Contains(got, "chat/other/turn-02") {
		t.Errorf("a turn of another conversation came as a neighbour: %v", got)
	}
	if got := search(t, w, "when did the payments deploy finish", "docs"); slices.Contains(got, "docs/report-2") {
		t.Errorf("a long note brought its neighbour: %v", got)
	}
	wantNothing(t, w, "purple elephant banana", "a question")
	if got := search(t, w, "incident", ""); !slices.Equal(got, []string{"chat/standup/turn-05"}) {
		t.Errorf("an exact search for one word: %v", got)
	}
	reader := w.As(AgentCaller(&access.Agent{Name: "r", Read: []string{"chat/standup/turn-03"}}))
	hits, _, err := reader.Search("when did the payments deploy finish", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if !strings.HasSuffix(h.URI, "/chat/standup/turn-03") {
			t.Errorf("a reader of one turn found %s", h.URI)
		}
	}
}

func TestNeighbourKeys(t *testing.T) {
	for key, want := range map[string][]string{
		"chat/turn-07":  {"chat/turn-06", "chat/turn-08", "chat/turn-05", "chat/turn-09"},
		"conv/d3-12":    {"conv/d3-11", "conv/d3-13", "conv/d3-10", "conv/d3-14"},
		"log/step-1":    {"log/step-0", "log/step-2", "log/step-3"},
		"log/step-0":    {"log/step-1", "log/step-2"},
		"research/plan": nil,
		"t/a1/b":        nil,
		"t/99999999999": nil,
	} {
		if got := neighbourKeys(key, 2); !slices.Equal(got, want) {
			t.Errorf("neighbourKeys(%q) = %q, want %q", key, got, want)
		}
	}
}

// chatTurn is one turn of a conversation kept a turn a note.
type chatTurn struct{ speaker, day, text string }

// putTurns writes turns as the notes folder/turn-01, turn-02...: the digest
// is the speaker and the text, the body the text under its line head
// ("Dana (3 June 2025): ...").
func putTurns(t *testing.T, w *Workspace, folder string, turns []chatTurn) {
	t.Helper()
	for i, c := range turns {
		put(t, w, fmt.Sprintf("%s/turn-%02d", folder, i+1), 0, c.speaker+": "+c.text, c.speaker+" ("+c.day+"): "+c.text)
	}
}

// wantFirst checks that the search for q in topic finds want first; why
// says what the check is about.
func wantFirst(t *testing.T, w *Workspace, q, topic, want, why string) {
	t.Helper()
	if got := search(t, w, q, topic); len(got) == 0 || got[0] != want {
		t.Errorf("%s: %q finds %v, not %s first", why, q, got, want)
	}
}

// wantNothing checks that a question about nothing on the board finds
// nothing; why says what kind of question it is.
func wantNothing(t *testing.T, w *Workspace, q, why string) {
	t.Helper()
	if got := search(t, w, q, ""); len(got) != 0 {
		t.Errorf("%s about nothing on the board: %q found %v", why, q, got)
	}
}

// A question that asks when is answered by the note that tells when, ahead
// of notes that share more of its words and say no time; a conversation's
// line heads ("Dana (3 June 2025): ") date every turn alike and do not count.
func TestAWhenQuestionFindsTheNoteThatSaysWhen(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	putTurns(t, w, "chat/release", []chatTurn{
		{"Dana", "3 June 2025", "The payments deploy checklist is ready for review."},
		{"Lee", "3 June 2025", "I read the checklist; the payments deploy plan looks good."},
		{"Lee", "3 June 2025", "The payments deploy went out last Tuesday."},
		{"Dana", "3 June 2025", "Nice. Lunch?"},
	})
	embedAll(t, w)

	wantFirst(t, w, "when did the payments deploy go out", "chat", "chat/release/turn-03", "a when question: the turn that says when first")
	got := search(t, w, "what did they say about the payments deploy checklist", "chat")
	if len(got) == 0 || got[0] == "chat/release/turn-03" {
		t.Errorf("a question that does not ask when ranks by its words; got %v", got)
	}
	wantNothing(t, w, "when did the purple elephant eat a banana", "a when question")
}

// A question that names a time ranks the notes written then above those
// that only share its words; it finds nothing more than its words and
// meaning do.
func TestAQuestionThatNamesATimeFindsTheNotesOfThen(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	put(t, w, "ops/cache/plan", 0, "Cache decision: grow the cache to 8 GB", "We decided to grow the cache to 8 GB and watch the hit rate.")
	put(t, w, "ops/cache/review", 0, "LRU review", "After the review, the cache stays at 4 GB; we decided to wait.")
	put(t, w, "ops/cache/idea", 0, "Cache idea: a second tier", "A second cache tier could take the cold keys.")
	// A person dates the review to last week, by hand, in git.
	lastWeek := time.Now().UTC().AddDate(0, 0, -7).Truncate(time.Second).Format(time.RFC3339)
	rel := "ops/cache/review.md"
	writeFile(t, w, rel, regexp.MustCompile(`(?m)^updated: .*$`).ReplaceAllString(readFile(t, w, rel), "updated: "+lastWeek))
	fixtures.Git(t, w.Dir(), "commit", "-qam", "the review was last week")
	embedAll(t, w)

	wantFirst(t, w, "what did we decide about the cache last week", "ops", "ops/cache/review", "a question naming last week: the note of last week first")
	got := search(t, w, "what did we decide about the cache", "ops")
	if len(got) == 0 || got[0] == "ops/cache/review" {
		t.Errorf("without a time, the words decide; got %v", got)
	}
	// A conversation kept a turn a note: a turn is of the day its line head
	// says, not of the day it was written down.
	putTurns(t, w, "chat/june", []chatTurn{
		{"Dana", "2 June 2025", "the payments deploy checklist is ready."},
		{"Dana", "3 June 2025", "the payments deploy waits for the schema review."},
		{"Dana", "4 June 2025", "the payments deploy checklist changed again."},
		{"Dana", "5 June 2025", "lunch at noon?"},
		{"Dana", "6 June 2025", "the payments team says thanks."},
	})
	embedAll(t, w)
	wantFirst(t, w, "what was said of the payments deploy on June 3rd, 2025", "chat", "chat/june/turn-02", "a question naming a day: the turn said that day first")
	wantNothing(t, w, "what did the purple elephant eat yesterday", "a question naming a time")
}

// A question that names someone ranks what they said (a conversation's
// line head) and what they wrote (a note's author) above what others said
// in the same words.
func TestAQuestionThatNamesSomeoneFindsWhatTheySaid(t *testing.T) {
	fixtures.RequireGit(t)
	w := meaningBoard(t)
	putTurns(t, w, "chat/deploy", []chatTurn{
		{"Dana", "3 June 2025", "Lee, the payments deploy checklist is ready."},
		{"Lee", "3 June 2025", "The payments deploy waits for the schema review."},
		{"Dana", "3 June 2025", "The payments deploy checklist changed again."},
		{"Lee", "3 June 2025", "Lunch at noon?"},
		{"Dana", "3 June 2025", "The payments team says thanks."},
	})
	write := func(author, uri, digest, body string) {
		t.Helper()
		v := w.As(OpenCaller(author))
		if _, err := v.Update(UpdateRequest{URI: uri, Digest: digest, Body: &body, ExpectVersion: ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	write("planner", "ops/cache/plan", "Cache plan: grow the LRU", "The cache should grow to 8 GB; the cache hit rate says so.")
	write("reviewer", "ops/cache/size", "Cache plan: too big for now", "Keep it at 4 GB until the schema work lands.")
	write("planner", "ops/cache/notes", "Cache notes", "The cache misses come from cold keys; the cache plan covers them.")
	embedAll(t, w)

	wantFirst(t, w, "what did Lee say about the payments deploy", "chat", "chat/deploy/turn-02", "a question naming a speaker: their line first")
	wantFirst(t, w, "what did the reviewer say about the cache plan", "ops/cache", "ops/cache/size", "a question naming an author: their note first")
	wantNothing(t, w, "what did Zed think of the purple elephant", "a question naming someone")
}

// The cues look only at the hits that may reach the answer (raise with a
// limit): on random turns and random hits, with random scores, every
// question's first limit hits are those of raising every hit, in the same
// order, with the same scores.
func TestRaisingTheHitsThatMayReachTheAnswerIsRaisingAll(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	rng := rand.New(rand.NewPCG(3, 5))
	speakers := []string{"Dana", "Lee", "Ana Ruiz", "the reviewer"}
	days := []string{"3 June 2025", "4 June 2025", "12 July 2025"}
	var turns []chatTurn
	for range 40 {
		turns = append(turns, chatTurn{speakers[rng.IntN(len(speakers))], days[rng.IntN(len(days))], "the deploy moved again"})
	}
	putTurns(t, w, "chat/random", turns)
	questions := []string{"what did Lee say about the deploy", "when did Dana move the deploy",
		"what did Ana Ruiz say on 4 June 2025", "the deploy", "when did the reviewer speak in July 2025"}
	now := time.Date(2025, 8, 1, 0, 0, 0, 0, time.UTC)
	err := w.idx.Read(func(s *index.Snapshot) error {
		for round := range 300 {
			hits := make([]index.Hit, 5+rng.IntN(36))
			for i := range hits {
				hits[i] = index.Hit{Key: fmt.Sprintf("chat/random/turn-%02d", 1+rng.IntN(len(turns))),
					Score: float64(rng.IntN(8)) / 8, Superseded: rng.IntN(6) == 0, Exact: rng.IntN(8) == 0}
			}
			hits = slices.CompactFunc(hits, func(a, b index.Hit) bool { return a.Key == b.Key })
			q, limit := questions[rng.IntN(len(questions))], 1+rng.IntN(12)
			cues := cuesOf(q, now)
			some, all := slices.Clone(hits), slices.Clone(hits)
			if err := cues.raise(s, some, limit); err != nil {
				return err
			}
			if err := cues.raise(s, all, 0); err != nil {
				return err
			}
			for _, h := range [][]index.Hit{some, all} {
				sort.SliceStable(h, func(i, j int) bool { return index.Before(h[i], h[j]) })
			}
			n := min(limit, len(hits))
			if !slices.Equal(some[:n], all[:n]) {
				t.Fatalf("round %d, %q, limit %d: raising the hits that may reach the answer gives\n%v\nraising all\n%v", round, q, limit, some[:n], all[:n])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
