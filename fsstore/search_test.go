package fsstore

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

func uris(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = strings.TrimPrefix(h.URI, "bb://acme/")
	}
	return out
}

func search(t *testing.T, w *Workspace, q, topic string) []string {
	t.Helper()
	hits, _, err := agentView(w).Search(q, topic, 10)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return uris(hits)
}

// searchBoard is a small board with the traps of real ones: an identifier
// once in one note, its parts scattered in others, a digest and a body
// competing for a word.
func searchBoard(t *testing.T) *Workspace {
	w := newWorkspace(t, false)
	notes := []struct{ uri, digest, body string }{
		{"ops/deploys/hotfix", "Rollback plan for the cache regression", "We shipped deploy-v2.4.7-hotfix on Monday; see cache_test.go for the repro."},
		{"ops/deploys/history", "Deploy history", "v2 went out in March. 4 regions, 7 services. A hotfix is planned. deploy notes."},
		{"research/net/errors", "Connection resets under load", "Clients see ERR_CONN_RESET when the proxy recycles connections."},
		{"research/net/other", "Network notes", "conn pooling, reset timers, err handling in general."},
		{"research/cache/latency", "Cache hit rate fell to 71%", "The LRU is undersized for the working set."},
		{"research/cache/memo", "Memo about staffing", "The cache team discussed latency budgets and the latency of lunch."},
	}
	for _, n := range notes {
		put(t, w, n.uri, 0, n.digest, n.body)
	}
	return w
}

func TestSearchFindsIdentifiers(t *testing.T) {
	fixtures.RequireGit(t)
	w := searchBoard(t)
	for _, q := range []string{"deploy-v2.4.7-hotfix", "v2.4.7", "cache_test.go", "DEPLOY-V2.4.7-HOTFIX"} {
		if got := search(t, w, q, ""); len(got) == 0 || got[0] != "ops/deploys/hotfix" {
			t.Errorf("search %q = %v, want ops/deploys/hotfix first", q, got)
		}
	}
	if got := search(t, w, "hotfix", ""); !slices.Contains(got, "ops/deploys/hotfix") {
		t.Errorf("search hotfix = %v, want the hotfix note among them", got)
	}
	if got := search(t, w, "ERR_CONN_RESET", ""); len(got) == 0 || got[0] != "research/net/errors" {
		t.Errorf("search ERR_CONN_RESET = %v, want research/net/errors first", got)
	}
	// The scattered parts of the identifier do not make a match.
	if got := search(t, w, "deploy-v2.4.7-hotfix", ""); slices.Contains(got, "ops/deploys/history") {
		t.Errorf("search deploy-v2.4.7-hotfix = %v: matched scattered parts", got)
	}
}

func TestSearchRanking(t *testing.T) {
	fixtures.RequireGit(t)
	w := searchBoard(t)
	// The digest outweighs the body: "latency" is the subject of one note's
	// digest... and said twice in the other's body.
	put(t, w, "research/cache/latency", 1, "Latency of cache reads rose", "The LRU is undersized.")
	if got := search(t, w, "latency", ""); len(got) < 2 || got[0] != "research/cache/latency" {
		t.Errorf("search latency = %v, want the note whose digest says it first", got)
	}
	if got := search(t, w, `"working set"`, ""); len(got) != 0 {
		t.Errorf("phrase no longer in any note found %v", got)
	}
	if got := search(t, w, `"latency budgets"`, ""); len(got) != 1 || got[0] != "research/cache/memo" {
		t.Errorf("phrase search = %v", got)
	}
	if got := search(t, w, "regress*", ""); len(got) != 1 || got[0] != "ops/deploys/hotfix" {
		t.Errorf("prefix search = %v", got)
	}
	if got := search(t, w, "latency", "ops"); len(got) != 0 {
		t.Errorf("topic-scoped search = %v, want nothing under ops", got)
	}
	if got := search(t, w, "cache", "research/cache"); len(got) != 2 {
		t.Errorf("topic-prefix search = %v, want the two research/cache notes", got)
	}
	// Words all present in no note: any of them may match.
	if got := search(t, w, "rollback zebra", ""); len(got) != 1 || got[0] != "ops/deploys/hotfix" {
		t.Errorf("fallback to any word = %v", got)
	}
	// Addresses and front-matter values are searchable.
	if got := search(t, w, "memo", ""); len(got) == 0 || got[0] != "research/cache/memo" {
		t.Errorf("search by address word = %v", got)
	}
	if _, err := agentView(w).Update(UpdateRequest{URI: "research/cache/memo", Digest: "Memo", Body: ptr("x"), Kind: "staffing"}); err != nil {
		t.Fatal(err)
	}
	if got := search(t, w, "staffing", ""); len(got) == 0 || got[0] != "research/cache/memo" {
		t.Errorf("search by kind = %v", got)
	}
	if got := search(t, w, "nothing-like-this-anywhere", ""); len(got) != 0 {
		t.Errorf("empty result expected, got %v", got)
	}
}

func TestSupersededRanksBelowSuccessor(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "r/old", 0, "Cache sizing: 2,000 entries is enough", "cache sizing, cache sizing")
	put(t, w, "r/new", 0, "Revised numbers for the working set", "cache sizing")
	if got := search(t, w, "cache sizing", ""); len(got) != 2 || got[0] != "r/old" {
		t.Fatalf("before the link: %v, want r/old first (more matches)", got)
	}
	if _, err := agentView(w).Link("r/new", "supersedes", []string{"r/old"}); err != nil {
		t.Fatal(err)
	}
	if got := search(t, w, "cache sizing", ""); len(got) != 2 || got[0] != "r/new" {
		t.Errorf("after r/new supersedes r/old: %v, want r/new first", got)
	}
	n := get(t, w, "r/old")
	if strings.Join(n.SupersededBy, ",") != "bb://acme/r/new" {
		t.Errorf("superseded_by = %v", n.SupersededBy)
	}
	if _, err := agentView(w).Link("r/new", "contradicts", []string{"r/old"}); err != nil {
		t.Fatal(err)
	}
	res, _, err := agentView(w).Summaries([]string{"r/old", "r/none", "../bad"})
	if err != nil {
		t.Fatal(err)
	}
	if s := res[0].Summary; s == nil || strings.Join(s.ContradictedBy, ",") != "bb://acme/r/new" || len(s.SupersededBy) != 1 {
		t.Errorf("summary of r/old = %+v", res[0])
	}
	assertKind(t, res[1].Err, ErrNotFound)
	assertKind(t, res[2].Err, ErrInvalid)
}

// Nothing a user types makes search fail: FTS5 syntax is never passed
// through.
func TestHostileQueries(t *testing.T) {
	fixtures.RequireGit(t)
	w := searchBoard(t)
	for _, q := range []string{`"`, `"unbalanced`, "AND", "OR", "NOT", "-", "*", "**", "NEAR(a b)", "()", "col:x",
		"digest:cache", "a AND", `"" ""`, "^", "{ids}", "'; DROP TABLE notes; --", strings.Repeat("x ", 500),
		"\x00", "é", "漢字", "cache OR", "+cache", "-cache", "cache*", "c*", "NEAR", "hotfix\"", `\`} {
		if _, _, err := agentView(w).Search(q, "", 10); err != nil {
			t.Errorf("search %q: %v", q, err)
		}
	}
	// AND alone is the word "and", which one note says.
	if got := search(t, w, "AND", ""); len(got) != 1 || got[0] != "research/cache/memo" {
		t.Errorf("AND alone found %v", got)
	}
	if got := search(t, w, "-cache", ""); len(got) == 0 {
		t.Errorf("-cache is a word search for cache, found nothing")
	}
}

func TestListing(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	for i, uri := range []string{"research/b", "research/a", "research/cache/x", "ops/z", "researchers/y"} {
		if _, err := agentView(w).Update(UpdateRequest{URI: uri, Digest: "note " + strconv.Itoa(i), Body: ptr("x"), Kind: []string{"finding", "plan"}[i%2]}); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(l *Listing) string {
		var out []string
		for _, n := range l.Notes {
			out = append(out, strings.TrimPrefix(n.URI, "bb://acme/"))
		}
		return strings.Join(out, " ")
	}
	list := func(o ListOptions) *Listing {
		t.Helper()
		l, err := agentView(w).List(o)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if got := keys(list(ListOptions{Topic: "research"})); got != "research/cache/x research/a research/b" {
		t.Errorf("recent under research = %q", got)
	}
	if got := keys(list(ListOptions{Topic: "research", ByName: true})); got != "research/a research/b research/cache/x" {
		t.Errorf("by name under research = %q", got)
	}
	if got := keys(list(ListOptions{Topic: "research/cache"})); got != "research/cache/x" {
		t.Errorf("under research/cache = %q", got)
	}
	l := list(ListOptions{Limit: 2})
	if keys(l) != "researchers/y ops/z" || l.Omitted != 4 {
		t.Errorf("limit 2 = %q omitted %d, want 2 shown, 4 omitted (with run/state/current)", keys(l), l.Omitted)
	}
	if got := keys(list(ListOptions{Kind: "plan", ByName: true})); got != "ops/z research/a" {
		t.Errorf("kind plan = %q", got)
	}
	cursor := l.Cursor
	put(t, w, "research/a", 1, "changed", "y")
	l = list(ListOptions{Since: cursor})
	if keys(l) != "research/a" || l.Cursor != cursor+1 {
		t.Errorf("since %d = %q at cursor %d", cursor, keys(l), l.Cursor)
	}
	if _, err := agentView(w).List(ListOptions{Topic: "../x"}); err == nil {
		t.Error("a hostile topic was accepted")
	}
}

// A note written by another process is seen by this one's next search and
// listing; so are a person's commit and a reset.
func TestSearchSeesOtherWriters(t *testing.T) {
	fixtures.RequireGit(t)
	w := searchBoard(t)
	if got := search(t, w, "zanzibar", ""); len(got) != 0 {
		t.Fatalf("unexpected %v", got)
	}
	runWorkers(t, []*exec.Cmd{worker(t, "create", w.Dir(), "BB_ID=9", "BB_N=1")})
	l, err := agentView(w).List(ListOptions{Topic: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Notes) != 1 || l.Notes[0].URI != "bb://acme/t/p9-0" {
		t.Errorf("listing after another process wrote: %+v", l.Notes)
	}
	if got := search(t, w, "p9-0", ""); len(got) != 1 {
		t.Errorf("search for the other process's note = %v", got)
	}
	before := fixtures.Git(t, w.Dir(), "rev-parse", "HEAD")
	writeFile(t, w, "research/zoo.md", "---\ndigest: Zanzibar field trip\n---\nnotes\n")
	fixtures.Git(t, w.Dir(), "add", "research/zoo.md")
	fixtures.Git(t, w.Dir(), "commit", "-qm", "by hand")
	if got := search(t, w, "zanzibar", ""); len(got) != 1 || got[0] != "research/zoo" {
		t.Errorf("after a person's commit: %v", got)
	}
	fixtures.Git(t, w.Dir(), "reset", "-q", "--hard", before)
	if got := search(t, w, "zanzibar", ""); len(got) != 0 {
		t.Errorf("after reset --hard: %v", got)
	}
}

// A word most notes hold is not ranked over every note that holds it (BM25
// scores each before it knows the best): the notes that say it in their
// address or digest are ranked, when they are few enough, and otherwise the
// newest that hold it come first. A word few notes hold is ranked over all.
func TestSearchBroadWord(t *testing.T) {
	fixtures.RequireGit(t)
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fixtures.Generate(dir, fixtures.Options{Workspace: "acme", Notes: 2500, Commits: 2500, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	w := openWorkspace(t, dir, false)
	if got := search(t, w, "the", ""); len(got) != 10 {
		t.Fatalf("search the = %v; want 10 hits on a generated board", got)
	}
	filler := strings.Repeat("unrelated words fill this body ", 60)
	put(t, w, "zz/fresh", 0, "A fresh finding", filler+"the end")
	if got := search(t, w, "the", ""); len(got) != 10 || got[0] != "zz/fresh" {
		t.Errorf("search the = %v; want the newest note that holds it first", got)
	}
	if got := search(t, w, "the", "zz"); len(got) != 1 || got[0] != "zz/fresh" {
		t.Errorf("search the in zz = %v; want the one note there", got)
	}
	// A word every body holds (a heading) and one digest: the note whose
	// digest says it is ranked first.
	put(t, w, "zz/review", 0, "Findings of the review", "nothing")
	if got := search(t, w, "findings", ""); len(got) != 10 || got[0] != "zz/review" {
		t.Errorf("search findings = %v; want the note whose digest says it first", got)
	}
	put(t, w, "zz/quokka-1", 0, "Quokka sightings", "a note")
	put(t, w, "zz/quokka-2", 0, "Field notes", "quokka quokka in the body")
	put(t, w, "zz/quokka-3", 0, "More notes", "one quokka")
	if got := search(t, w, "quokka", ""); len(got) != 3 || got[0] != "zz/quokka-1" {
		t.Errorf("search quokka = %v; want the three, the one whose digest says it first", got)
	}
}

// An exact search (a word, a "quoted phrase", a prefix*, an identifier)
// finds exactly the notes whose digest or body holds it, however the
// digest is weighed: on a random board, half of whose digests only repeat
// their body, the search and a scan of the notes agree. An identifier is
// held where its words come in a row, as a whole or within a longer one
// (1.10.19 in 1.10.19-rc1).
func TestExactSearchesFindExactlyTheNotesThatHoldThem(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	rng := rand.New(rand.NewPCG(7, 37))
	// Made-up words that stemming leaves as they are.
	vocab := strings.Fields("blik drom fasp gunt hwir jolk kramp lurt mesk nolt plix quop rusk tarn vulk wemp zarf krob")
	words := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = vocab[rng.IntN(len(vocab))]
		}
		return out
	}
	// Identifiers whose squashed forms differ, some within others.
	idents := strings.Fields("v2.4.7 1.10.19 1.10.19-rc1 err_conn_reset cache_test.go api/v2 blik-drom")
	type text struct{ digest, body []string }
	notes := map[string]text{}
	for i := range 60 {
		body := words(4 + rng.IntN(10))
		digest := words(3)
		if i%3 == 0 {
			body[rng.IntN(len(body))] = idents[rng.IntN(len(idents))]
		}
		if i%5 == 0 {
			digest[rng.IntN(len(digest))] = idents[rng.IntN(len(idents))]
		}
		if i%2 == 0 {
			digest = body[:min(len(body), 4)] // repeats the body's first words
		}
		key := fmt.Sprintf("t/n%02d", i)
		notes[key] = text{digest, body}
		put(t, w, key, 0, strings.Join(digest, " "), strings.Join(body, " ")+".")
	}
	// The words of a field as the index splits them: an identifier's
	// separators split it too.
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(" -._/:", r) })
	}
	inARow := func(field, want []string) bool {
		for i := 0; i+len(want) <= len(field); i++ {
			if slices.Equal(field[i:i+len(want)], want) {
				return true
			}
		}
		return false
	}
	holds := func(text []string, q string) bool {
		field := split(strings.Join(text, " "))
		switch {
		case slices.Contains(idents, q):
			return inARow(field, split(q))
		case strings.HasSuffix(q, "*"):
			return slices.ContainsFunc(field, func(w string) bool { return strings.HasPrefix(w, strings.TrimSuffix(q, "*")) })
		case strings.HasPrefix(q, `"`):
			return inARow(field, strings.Fields(strings.Trim(q, `"`)))
		}
		return slices.Contains(field, q)
	}
	for trial := range 100 {
		var q string
		switch trial % 4 {
		case 0:
			q = vocab[rng.IntN(len(vocab))]
		case 1:
			q = `"` + strings.Join(words(2), " ") + `"`
		case 2:
			q = vocab[rng.IntN(len(vocab))][:3] + "*"
		default:
			q = idents[trial/4%len(idents)]
		}
		var want []string
		for key, n := range notes {
			if holds(n.digest, q) || holds(n.body, q) {
				want = append(want, key)
			}
		}
		hits, _, err := agentView(w).Search(q, "t", MaxSearchLimit)
		if err != nil {
			t.Fatal(err)
		}
		got := uris(hits)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("search %s: found %v\nwant %v", q, got, want)
		}
	}
}
