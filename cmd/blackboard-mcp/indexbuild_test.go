package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// buildingEnvelope is a listing's envelope while the index may be being
// built: indexing says how far the build has come.
type buildingEnvelope struct {
	Items    []item `json:"items"`
	Spent    int    `json:"spent_tokens"`
	Omitted  int    `json:"omitted"`
	Cursor   int    `json:"cursor"`
	Indexing string `json:"indexing"`
}

// TestServeAnswersWhileItBuildsTheIndex: a board cloned without its derived
// index (here: generated, 3,000 commits) is served at once. Its index is
// built in the background, in steps; meanwhile every call is answered
// without waiting for the build: listings and searches from the index as
// far as it has come, saying how far; named notes from git, their versions
// counted there as the index will count them; writes go on, each checked
// against git for its own note the same way (with a note's own history of
// a few commits, none waits). A second server started meanwhile shows the first one's
// build instead of starting its own. Once the build is done, the listing
// is the whole board, and the versions agree with git's (the check at the
// end of every test).
func TestServeAnswersWhileItBuildsTheIndex(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "acme")
	const notes = 3000
	if err := fixtures.Generate(dir, fixtures.Options{Workspace: "acme", Notes: notes, Seed: 11}); err != nil {
		t.Fatal(err)
	}
	first := startMCPGo(t, dir, "reader")
	var second *session
	sawBuilding, wroteDuring, sawSecond := false, false, false
	want := notes + 1 // and the state note
	stateVersion := 0
	for round := 0; ; round++ {
		res := first.call("list_keys", map[string]any{"limit": 3})
		if res.isError {
			t.Fatalf("list_keys during the build: %s", res.text)
		}
		var e buildingEnvelope
		if err := json.Unmarshal([]byte(res.text), &e); err != nil {
			t.Fatalf("list_keys: %v in %s", err, res.text)
		}
		if got := countTokens(t, res.text); got != e.Spent {
			t.Errorf("spent_tokens %d, but the answer is %d tokens: %s", e.Spent, got, res.text)
		}
		if e.Indexing == "" {
			if e.Cursor != want || len(e.Items)+e.Omitted != want {
				t.Fatalf("after the build: cursor %d and %d notes listed, want %d and %d",
					e.Cursor, len(e.Items)+e.Omitted, want, want)
			}
			break
		}
		sawBuilding = true
		// The cursor counts the board's commits, the writes of the rounds
		// before this one included: a slow build may still be catching up
		// the last of those when the first 3,000 are done.
		if !strings.HasPrefix(e.Indexing, "the index is being built") || e.Cursor > want {
			t.Fatalf("during the build: indexing %q at cursor %d", e.Indexing, e.Cursor)
		}
		// A named note is read from git meanwhile, its version counted
		// there as the index will count it (this board's history is well
		// within what a read counts). In the first moment of the build,
		// before it has a place to count from, the note comes without its
		// version, as the contract allows: a read a moment later has it.
		var got buildingEnvelope
		for try := 0; ; try++ {
			if err := json.Unmarshal([]byte(first.ok("get_state", map[string]any{"uris": []string{"run/state/current"}, "mode": "full"})), &got); err != nil {
				t.Fatal(err)
			}
			if len(got.Items) != 1 || got.Items[0].Version != 0 || try == 20 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(got.Items) != 1 || got.Items[0].Body == "" || got.Items[0].Version == 0 {
			t.Fatalf("get_state during the build: %+v", got)
		}
		if stateVersion != 0 && got.Items[0].Version != stateVersion {
			t.Fatalf("get_state during the build: version %d, then %d, of a note no one wrote", stateVersion, got.Items[0].Version)
		}
		stateVersion = got.Items[0].Version
		w := first.call("update_state", map[string]any{"uri": fmt.Sprint("ops/during-build-", round),
			"digest": "written while the index is built", "body": "x", "expect_version": 0})
		if w.isError {
			t.Fatalf("update_state during the build: %s", w.text)
		}
		want++
		wroteDuring = true
		if round == 0 {
			second = startMCPGo(t, dir, "second")
			res := second.call("search_keys", map[string]any{"q": "throughput"})
			if res.isError {
				t.Fatalf("search_keys on a second server during the build: %s", res.text)
			}
			var e buildingEnvelope
			if err := json.Unmarshal([]byte(res.text), &e); err != nil {
				t.Fatal(err)
			}
			sawSecond = e.Indexing != ""
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("seen while building: a partial listing %v, writes %v, the build from a second server %v",
		sawBuilding, wroteDuring, sawSecond)
	if second == nil {
		second = startMCPGo(t, dir, "second") // the build was done at the first look
	}
	// Settled: the named note has the version it was read with during
	// the build, and every call answers, on both servers.
	var settled buildingEnvelope
	if err := json.Unmarshal([]byte(first.ok("get_state", map[string]any{"uris": []string{"run/state/current"}})), &settled); err != nil {
		t.Fatal(err)
	}
	if stateVersion != 0 && (len(settled.Items) != 1 || settled.Items[0].Version != stateVersion) {
		t.Fatalf("get_state after the build: %+v; during it, version %d", settled, stateVersion)
	}
	first.write(map[string]any{"uri": "ops/after-build", "digest": "written once the index is built", "body": "x"})
	if text := second.ok("get_state", map[string]any{"uris": []string{"ops/after-build"}}); !strings.Contains(text, "written once the index is built") {
		t.Fatalf("the second server reads %s", text)
	}
	runCLI(t, dir, "health") // exits 1 on any problem
}
