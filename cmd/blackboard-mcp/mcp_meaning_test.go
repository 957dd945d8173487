package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPSearchByMeaning: a server makes the notes' vectors in the
// background (health says when all have one), a question asked through
// search_keys finds the note it is about first and one about nothing on
// the board finds nothing, and a person's edit gets its vector too.
func TestMCPSearchByMeaning(t *testing.T) {
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	for _, n := range []struct{ uri, digest, body string }{
		{"ops/payments", "p99 of the payment client rose after the 1.10.19 deploy",
			"Latency of charge calls to the card processor doubled at 14:02. Customers waited at checkout; " +
				"the payment service timed out on retries and the purchase flow slowed down for every shopper."},
		{"ops/garden", "The team planted trees in the park", "Oak and birch along the river, and a hedge of hawthorn."},
		{"ops/db", "Replica lag grew to seconds", "Postgres replication fell behind the primary during the nightly batch."},
	} {
		s.write(map[string]any{"uri": n.uri, "digest": n.digest, "body": n.body, "expect_version": 0})
	}
	allEmbedded := func(want string) func() bool {
		return func() bool {
			out, _ := cliCommand(dir, "health").CombinedOutput()
			return strings.Contains(string(out), "search by meaning: all "+want+" notes have their vector")
		}
	}
	eventually(t, "the server made every note's vector", allEmbedded("4"))
	if got := s.ok("search_keys", map[string]any{"q": "why did the checkout get slower for shoppers"}); !strings.Contains(firstLine(got), "ops/payments") {
		t.Errorf("a question about the checkout:\n%s", got)
	}
	if got := s.ok("search_keys", map[string]any{"q": "recipe for a chocolate cake"}); strings.Contains(got, "bb://") {
		t.Errorf("a question about nothing on the board found notes:\n%s", got)
	}
	// A person's new note: committed by the server, then given its vector.
	p := filepath.Join(dir, "people", "hiring.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("---\ndigest: Two engineers join in March\n---\nOnboarding plan for the new hires.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the person's note has its vector", allEmbedded("5"))
	s.closeClean()
	checkWorkspace(t, dir)
}

// firstLine is the first item of a search's answer, as far as its URI.
func firstLine(answer string) string {
	i := strings.Index(answer, "bb://")
	if i < 0 {
		return ""
	}
	end := strings.IndexAny(answer[i:], "\"\t\n ")
	if end < 0 {
		return answer[i:]
	}
	return answer[i : i+end]
}
