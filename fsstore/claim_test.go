package fsstore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// claimAs makes a claim on uri as agent, with expect_version when expect
// is not negative.
func claimAs(w *Workspace, agent, uri, claim string, expect int, lease time.Duration) (*UpdateResult, error) {
	req := UpdateRequest{URI: uri, Claim: claim, Lease: lease}
	if expect >= 0 {
		req.ExpectVersion = &expect
	}
	return w.As(OpenCaller(agent)).Update(req)
}

func openWork(t *testing.T, w *Workspace) []string {
	t.Helper()
	l, err := agentView(w).List(ListOptions{Topic: "tasks", Open: true, Oldest: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range l.Notes {
		out = append(out, strings.TrimPrefix(n.URI, "bb://acme/"))
	}
	return out
}

// TestClaimLifecycle: a claim is taken with compare-and-swap, held against
// every other agent (with or without expect_version), renewed by its
// holder, lapses by itself, and finished work is never offered again.
func TestClaimLifecycle(t *testing.T) {
	w := newWorkspace(t, false)
	put(t, w, "tasks/a", 0, "first task", "do a")
	put(t, w, "tasks/b", 0, "second task", "do b")
	if got := openWork(t, w); strings.Join(got, " ") != "tasks/a tasks/b" {
		t.Fatalf("open work, oldest first = %v", got)
	}

	res, err := claimAs(w, "coder-1", "tasks/a", ClaimTake, 1, 2*time.Second)
	if err != nil || res.Version != 2 {
		t.Fatalf("take: %v, %v", res, err)
	}
	f := readFile(t, w, "tasks/a.md")
	for _, want := range []string{"claimed_by: coder-1", "claim_until: ", "digest: first task", "do a"} {
		if !strings.Contains(f, want) {
			t.Fatalf("the note's file lacks %q:\n%s", want, f)
		}
	}
	if got := openWork(t, w); strings.Join(got, " ") != "tasks/b" {
		t.Fatalf("open work while a is held = %v", got)
	}
	// Another agent: a stale version is a conflict, and so is the current
	// one, and no version at all: the claim names its holder.
	for _, expect := range []int{1, 2, -1} {
		_, err := claimAs(w, "coder-2", "tasks/a", ClaimTake, expect, 0)
		assertKind(t, err, ErrConflict)
		if expect != 1 && !strings.Contains(err.Error(), "coder-1 holds the claim") {
			t.Fatalf("the conflict does not name the holder: %v", err)
		}
	}
	for _, claim := range []string{ClaimRelease, ClaimDone} {
		_, err := claimAs(w, "coder-2", "tasks/a", claim, 2, 0)
		assertKind(t, err, ErrConflict)
	}
	// A plain write by another agent is not refused: a claim is no lock.
	put(t, w, "tasks/a", 2, "first task", "do a, with a hint")
	// The holder renews; the claim keeps the note's digest and body.
	if _, err := claimAs(w, "coder-1", "tasks/a", ClaimTake, 3, 2*time.Second); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if n := get(t, w, "tasks/a"); n.Digest != "first task" || !strings.Contains(n.Content, "with a hint") {
		t.Fatalf("after the renewal: %q %q", n.Digest, n.Content)
	}
	// Lapsed: offered again, and taken by another; the late renewal of
	// the first holder, with the version it last saw, is a conflict.
	time.Sleep(3100 * time.Millisecond) // the lease, rounded up to the second
	if got := openWork(t, w); strings.Join(got, " ") != "tasks/a tasks/b" {
		t.Fatalf("open work after the lease = %v", got)
	}
	if _, err := claimAs(w, "coder-2", "tasks/a", ClaimTake, 4, 0); err != nil {
		t.Fatalf("take a lapsed claim: %v", err)
	}
	_, err = claimAs(w, "coder-1", "tasks/a", ClaimTake, 4, 0)
	assertKind(t, err, ErrConflict)
	// Done: never offered again, and not taken again.
	if _, err := claimAs(w, "coder-2", "tasks/a", ClaimDone, 5, 0); err != nil {
		t.Fatalf("done: %v", err)
	}
	f = readFile(t, w, "tasks/a.md")
	if !strings.Contains(f, "done_by: coder-2") || strings.Contains(f, "claimed_by") {
		t.Fatalf("a finished note's file:\n%s", f)
	}
	if got := openWork(t, w); strings.Join(got, " ") != "tasks/b" {
		t.Fatalf("open work after a is done = %v", got)
	}
	_, err = claimAs(w, "coder-1", "tasks/a", ClaimTake, 6, 0)
	assertKind(t, err, ErrConflict)
	// Released: open again at once.
	if _, err := claimAs(w, "coder-1", "tasks/b", ClaimTake, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := claimAs(w, "coder-1", "tasks/b", ClaimRelease, 2, 0); err != nil {
		t.Fatal(err)
	}
	if got := openWork(t, w); strings.Join(got, " ") != "tasks/b" {
		t.Fatalf("open work after b is released = %v", got)
	}
	subjects := fixtures.Git(t, w.Dir(), "log", "--format=%s", "main")
	for _, want := range []string{"claim tasks/a v2", "claim tasks/a v5", "done tasks/a v6", "release tasks/b v3"} {
		if !strings.Contains(subjects, want) {
			t.Errorf("git log lacks %q:\n%s", want, subjects)
		}
	}
	assertClean(t, w)
}

// TestClaimChecks: what a claim refuses.
func TestClaimChecks(t *testing.T) {
	w := newWorkspace(t, false)
	put(t, w, "tasks/a", 0, "a task", "do it")
	for _, tt := range []struct {
		req  UpdateRequest
		kind error
	}{
		{UpdateRequest{URI: "tasks/a", Claim: "grab"}, ErrInvalid},
		{UpdateRequest{URI: "tasks/a", Claim: ClaimTake, Lease: MaxLease + time.Second}, ErrInvalid},
		{UpdateRequest{URI: "tasks/a", Claim: ClaimRelease, Lease: time.Minute}, ErrInvalid},
		{UpdateRequest{URI: "tasks/a", Lease: time.Minute, Body: ptr("x"), Digest: "d"}, ErrInvalid},
		{UpdateRequest{URI: "tasks/a", Claim: ClaimTake, AppendText: ptr("x")}, ErrInvalid},
		{UpdateRequest{URI: "tasks/none", Claim: ClaimTake}, ErrInvalid}, // no digest to keep
	} {
		_, err := agentView(w).Update(tt.req)
		if err == nil {
			t.Errorf("%+v: no error", tt.req)
			continue
		}
		assertKind(t, err, tt.kind)
	}
	// A person's hand edit releases or reassigns: the next list shows it.
	if _, err := claimAs(w, "coder-1", "tasks/a", ClaimTake, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := openWork(t, w); len(got) != 0 {
		t.Fatalf("open work = %v", got)
	}
	f := readFile(t, w, "tasks/a.md")
	var kept []string
	for _, line := range strings.Split(f, "\n") {
		if !strings.HasPrefix(line, "claimed_by:") && !strings.HasPrefix(line, "claim_until:") {
			kept = append(kept, line)
		}
	}
	writeFile(t, w, "tasks/a.md", strings.Join(kept, "\n"))
	w.FilesChanged([]string{"tasks/a.md"}, false)
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	if got := openWork(t, w); strings.Join(got, " ") != "tasks/a" {
		t.Fatalf("open work after a person released the claim = %v", got)
	}
	// A person reassigns it: the new holder holds it against the others.
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	f = readFile(t, w, "tasks/a.md")
	f = strings.Replace(f, "digest: a task\n", "digest: a task\nclaimed_by: coder-9\nclaim_until: "+until+"\n", 1)
	writeFile(t, w, "tasks/a.md", f)
	w.FilesChanged([]string{"tasks/a.md"}, false)
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	if got := openWork(t, w); len(got) != 0 {
		t.Fatalf("open work after a person gave the task to coder-9 = %v", got)
	}
	_, err := claimAs(w, "coder-1", "tasks/a", ClaimTake, -1, 0)
	assertKind(t, err, ErrConflict)
	if !strings.Contains(err.Error(), "coder-9 holds the claim until "+until) {
		t.Fatalf("the conflict does not name the person's choice: %v", err)
	}
	if _, err := claimAs(w, "coder-9", "tasks/a", ClaimDone, -1, 0); err != nil {
		t.Fatalf("the new holder finishes: %v", err)
	}
}

// TestOpenWorkAgreesWithTheFiles: the open work the index lists is the
// work whose file, read by note.Claim, no one holds and no one finished, on
// random claims a person wrote (held, lapsed, garbled, finished, none).
func TestOpenWorkAgreesWithTheFiles(t *testing.T) {
	w := newWorkspace(t, false)
	rng := rand.New(rand.NewPCG(5, 6))
	past, future := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	var paths []string
	for i := range 60 {
		var fm strings.Builder
		fmt.Fprintf(&fm, "---\ndigest: task %d\n", i)
		if rng.IntN(3) > 0 {
			fm.WriteString("claimed_by: agent-" + strconv.Itoa(rng.IntN(3)) + "\n")
		}
		switch rng.IntN(5) {
		case 0:
			fm.WriteString("claim_until: " + past + "\n")
		case 1, 2:
			fm.WriteString("claim_until: " + future + "\n")
		case 3:
			fm.WriteString("claim_until: soon\n")
		}
		if rng.IntN(4) == 0 {
			fm.WriteString("done_by: agent-9\n")
		}
		fm.WriteString("---\nwork\n")
		p := fmt.Sprintf("tasks/t%02d.md", i)
		writeFile(t, w, p, fm.String())
		paths = append(paths, p)
	}
	w.FilesChanged(paths, false)
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	var want []string
	now := time.Now()
	for i := range 60 {
		f, err := note.Parse([]byte(readFile(t, w, paths[i])))
		if err != nil {
			t.Fatal(err)
		}
		if c := f.Claim(); !c.HeldAt(now) && c.DoneBy == "" {
			want = append(want, fmt.Sprintf("tasks/t%02d", i))
		}
	}
	if got := openWork(t, w); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("open work by the index:\n%v\nby the files:\n%v", got, want)
	}
	t.Logf("%d of 60 tasks open", len(want))
}
