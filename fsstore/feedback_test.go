package fsstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/meaning"
)

// feedbackBoard holds long notes about keeping a cache warm after a deploy,
// in words the question below does not use (the warmer job, hot keys,
// hydrated shards), beside many notes about other things: the words fed
// back must be rare on it, as they are on a real board.
func feedbackBoard(t *testing.T) *Workspace {
	t.Helper()
	w := newWorkspace(t, false)
	long := func(s string) string { return s + " " + s + " " + s }
	for i, body := range []string{
		"After each deploy the cache starts cold. The warmer job prefetches the hot keys and hydrates every shard before traffic returns.",
		"The deploy waits for the warmer job: it reads yesterday's hot keys, prefetches them and hydrates the shards of the cache.",
		"Keeping the cache warm: the warmer job hydrates each shard from the hot keys it prefetches, shard by shard, after the deploy.",
		"A cold cache after a deploy overloads the database; the warmer job prefetches hot keys and hydrates shards to keep it warm.",
	} {
		put(t, w, fmt.Sprintf("ops/warm-%d", i+1), 0, "Keeping the cache warm after a deploy", long(body))
	}
	put(t, w, "ops/hydration", 0, "How the shards get their data",
		long("The warmer job prefetches hot keys and hydrates the shards of the cache in order, shard by shard, from the key list."))
	put(t, w, "ops/upgrade", 0, "The deploy of the new cache library version",
		long("The deploy of the new cache library went out with the release train; its changelog lists bug fixes and a new logger."))
	put(t, w, "ops/benchmark", 0, "A benchmark of shard hydration",
		long("Hydrating shards from prefetched hot keys took four minutes for the warmer job on the staging hardware."))
	for i, topic := range []string{
		"the office move", "the holiday rota", "the hiring plan", "the budget review", "the printer", "the garden",
		"the security audit", "the team lunch", "the conference talk", "the onboarding guide", "the laptop refresh",
		"the parking permits", "the intern projects", "the coffee machine", "the design review", "the quarterly goals",
		"the wiki cleanup", "the fire drill", "the desk plan", "the training budget", "the style guide",
		"the vendor contract", "the team offsite", "the reading group", "the accessibility review", "the badge readers",
		"the meeting rooms", "the travel policy", "the newsletter", "the mentoring scheme",
	} {
		put(t, w, fmt.Sprintf("misc/note-%02d", i+1), 0, "About "+topic,
			long("This note is about "+topic+": who looks after it, what was decided at the last meeting, and what happens next month."))
	}
	embedAll(t, w)
	return w
}

// A question finds, among the notes that share one or two of its words,
// the one in the words its best answers use (the warmer job, hot keys,
// hydrated shards) before the one that shares more of its words and is
// about something else. Feedback only reorders: a note that holds the
// words fed back and none of the question's is not found, and a question
// about nothing on the board still finds nothing.
func TestFeedbackFindsTheAnswerInTheWordsOfTheBestAnswers(t *testing.T) {
	fixtures.RequireGit(t)
	w := feedbackBoard(t)
	got := search(t, w, "how do we keep the cache warm after a deploy", "")
	at := func(k string) int {
		if i := slices.Index(got, k); i >= 0 {
			return i
		}
		return len(got)
	}
	if at("ops/hydration") >= at("ops/upgrade") {
		t.Errorf("the note in its best answers' words comes after the one about another thing: %v", got)
	}
	if slices.Contains(got, "ops/benchmark") {
		t.Errorf("a note that holds only the words fed back was found: %v", got)
	}
	wantNothing(t, w, "purple elephant banana", "a question")
}

// The stems feedback counts words by are the index's: the notes a search
// for a word finds are those that hold a word of the same stem, on random
// words that share stems and differ in them.
func TestStemsAreTheIndexsWords(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	rng := rand.New(rand.NewPCG(7, 37))
	roots := []string{"heat", "flutter", "connect", "generalize", "run", "agree", "relate", "happy", "probe", "cache"}
	suffixes := []string{"", "s", "ed", "ing", "er", "ation", "ly", "ness", "e", "ies"}
	seen := map[string]bool{}
	var words []string
	for len(words) < 40 {
		word := roots[rng.IntN(len(roots))] + suffixes[rng.IntN(len(suffixes))]
		if !seen[word] {
			seen[word] = true
			words = append(words, word)
		}
	}
	sort.Strings(words)
	for i, word := range words {
		put(t, w, fmt.Sprintf("words/w%02d", i), 0, "a word", "the word "+word)
	}
	stems, err := index.Stems(words)
	if err != nil {
		t.Fatal(err)
	}
	again, err := index.Stems(words) // from what Stems keeps
	if err != nil || len(again) != len(stems) {
		t.Fatalf("stems again: %v, %d of %d", err, len(again), len(stems))
	}
	for _, word := range words {
		if again[word] != stems[word] || stems[word] == "" {
			t.Errorf("stem of %q: %q, then %q", word, stems[word], again[word])
		}
		var want []string
		for i, other := range words {
			if stems[other] == stems[word] {
				want = append(want, fmt.Sprintf("words/w%02d", i))
			}
		}
		got := search(t, w, word, "words")
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%q (stem %q) finds %v; notes of its stem: %v", word, stems[word], got, want)
		}
	}
}

// A note near the best answers in meaning rises, one near only the notes
// that hardly answer falls: two notes of one score part by their kin.
func TestKinMovesAScoreTowardItsNearestNotes(t *testing.T) {
	vec := func(text string) meaning.Vector {
		v, ok := meaning.Embed(text)
		if !ok {
			t.Fatalf("no vector for %q", text)
		}
		return v
	}
	texts := map[string]string{
		"a": "The flutter of the swept wing at transonic speed.",
		"b": "Wing flutter boundaries measured in the wind tunnel.",
		"c": "Aeroelastic flutter of a wing with a heavy engine.",
		"x": "Flutter of a thin wing panel in supersonic flow.",
		"y": "The recipe for a chocolate cake with cream.",
		"d": "Baking bread with rye flour and sourdough.",
		"e": "A cake of sugar, eggs and butter for the party.",
		"f": "Cooking pasta with tomato sauce and basil.",
	}
	scores := map[string]float64{"a": 1, "b": 0.9, "c": 0.85, "x": 0.5, "y": 0.5, "d": 0.2, "e": 0.15, "f": 0.1}
	var best []*fused
	vecs := map[string]meaning.Vector{}
	for _, k := range []string{"a", "b", "c", "x", "y", "d", "e", "f"} {
		best = append(best, &fused{hit: index.Hit{Key: k, Score: scores[k]}, known: true})
		vecs[k] = vec(texts[k])
	}
	got := kinScores(best, vecs)
	if got[3] <= 0.5 || got[4] >= 0.5 {
		t.Errorf("kin scores of the note like the best (%.3f) and the note like the worst (%.3f), both 0.5 before", got[3], got[4])
	}
	delete(vecs, "x")
	if got := kinScores(best, vecs); got[3] != 0.5 {
		t.Errorf("a note without a vector moved to %.3f", got[3])
	}
}

// Kin reorders what the words and the meaning found: of two notes the
// question finds about as well, the one among the best answers in meaning
// (an airfoil's flutter, beside the swept wings') comes before the one
// among notes that hardly answer (a butterfly's, beside the garden's).
// Without kin the butterfly's comes first (scores 0.50 against 0.34), with
// it the airfoil's (0.468 against 0.461).
func TestKinRaisesTheNoteNearTheBestAnswers(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	long := func(s string) string { return s + " " + s + " " + s }
	for _, n := range [][2]string{
		{"aero/w1", "Flutter of the swept wing at transonic speed: the wind tunnel model oscillated in bending and torsion above Mach 0.9."},
		{"aero/w2", "The swept wing flutter boundary falls as speed rises; aeroelastic tests of the wing in the tunnel showed it."},
		{"aero/w3", "Wing flutter at high speed: torsion and bending modes of the swept wing couple, and the aeroelastic damping vanishes."},
		{"aero/w4", "High speed flutter of wings with sweep: measured boundaries, aeroelastic modes and the effect of the engine mass."},
		{"aero/x", "Aeroelastic divergence and buzz of the control surface on the airfoil in transonic tunnel tests, with some flutter of the panel."},
		{"aero/y", "The butterfly's wing beats at high speed, a flutter over the flowers of the garden while the gardener waters the roses."},
		{"garden/g1", "The garden hose sprays water at high speed over the roses and the tulips in the flower beds by the fence."},
		{"garden/g2", "Pruning the roses in the garden: cut at an angle, water the flowers, and feed the beds with compost at speed."},
		{"garden/g3", "Bees and butterflies visit the flowers of the garden; the gardener plants lavender and roses for them."},
		{"garden/g4", "The lawn mower runs at high speed across the garden lawn, between the flower beds and the rose bushes."},
	} {
		put(t, w, n[0], 0, "about "+n[0], long(n[1]))
	}
	for i := range 30 {
		put(t, w, fmt.Sprintf("misc/n%02d", i), 0, "misc",
			long(fmt.Sprintf("This note %d is about the office, lunch, the budget and the holiday rota of the team, nothing else at all.", i)))
	}
	embedAll(t, w)
	got := search(t, w, "flutter of a swept wing at high speed", "")
	x, y := slices.Index(got, "aero/x"), slices.Index(got, "aero/y")
	if x < 0 || y < 0 || x > y {
		t.Errorf("the airfoil's flutter (at %d) does not come before the butterfly's (at %d): %v", x, y, got)
	}
}
