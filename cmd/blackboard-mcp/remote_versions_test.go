package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// Over a remote (SPEC sections 4 and 10): three clones with two servers
// each, every server driving one agent that increments shared counters by
// read-modify-write with expect_version; servers killed (kill -9) at random
// and started again; and a person on the first clone who commits, pulls (a
// merge when the remote moved) and pushes by hand. Afterwards, on a fresh
// clone of the remote after `reindex`: every acknowledged version is the
// version whose content is the value written, no counter value was written
// twice, each counter's values go up by one from 0 with no gap, and every
// value that landed without an acknowledgement is a write whose outcome its
// agent never learned (its server was killed, or the answer said so).

// counterDigest is the digest of a counter's value written by one attempt:
// the attempt's id makes every write's content its own, so that the
// remote's history tells which attempt landed.
func counterDigest(counter, value int, attempt string) string {
	return fmt.Sprintf("counter-%d = %d by %s", counter, value, attempt)
}

// parseCounterDigest is counterDigest read back.
func parseCounterDigest(digest string) (counter, value int, attempt string, ok bool) {
	var c, v int
	var a string
	if n, err := fmt.Sscanf(digest, "counter-%d = %d by %s", &c, &v, &a); err != nil || n != 3 {
		return 0, 0, "", false
	}
	return c, v, a, true
}

// counterAck is a write of a counter a server acknowledged.
type counterAck struct {
	counter, value, version, expect int
	attempt                         string
}

// serverSlot is one of the servers the agents drive: the session now
// serving it, replaced when it is killed.
type serverSlot struct {
	dir, agent string
	mu         sync.Mutex
	s          *session
	ctx        context.Context
	cancel     context.CancelFunc
	gen        int
}

func (sl *serverSlot) current() (*session, context.Context, int) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.s, sl.ctx, sl.gen
}

// start starts the slot's next server; the caller is the test's goroutine.
func (sl *serverSlot) start(t *testing.T) {
	s := startMCPGo(t, sl.dir, sl.agent)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sl.mu.Lock()
	sl.s, sl.ctx, sl.cancel = s, ctx, cancel
	sl.gen++
	sl.mu.Unlock()
}

// killAndRestart kills the slot's server (kill -9): a call in flight on it
// gets no answer. Then a new server takes the slot.
func (sl *serverSlot) killAndRestart(t *testing.T) {
	sl.mu.Lock()
	s, cancel := sl.s, sl.cancel
	sl.mu.Unlock()
	if err := s.kill(); err != nil {
		t.Errorf("kill %s's server: %v", sl.agent, err)
	}
	cancel()
	_ = s.close()
	sl.start(t)
}

// awaitNew waits until the slot has a server newer than gen, false if none
// comes (the session broke without being killed) or the run is over.
func (sl *serverSlot) awaitNew(gen int, stop *atomic.Bool) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, _, g := sl.current(); g != gen {
			return true
		}
		if stop.Load() {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// tally counts what happened, for the RESULT line.
type tally struct {
	acks, conflicts, unavailable, internal, unknown, kills             atomic.Int64
	personCommits, savesCommittedByServer, pulls, merges, pullFailures atomic.Int64
	mergeAborts, pushes, pushFailures                                  atomic.Int64
}

// outcomes are the attempts by what their agent learned of them.
type outcomes struct {
	mu      sync.Mutex
	acks    []counterAck
	refused map[string]string // attempt -> the answer (conflict, unavailable, nothing written)
	unknown map[string]string // attempt -> why the agent cannot tell whether it was written
}

func (o *outcomes) ack(a counterAck) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acks = append(o.acks, a)
}

func (o *outcomes) refuse(attempt, answer string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refused[attempt] = answer
}

func (o *outcomes) unknownOutcome(attempt, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unknown[attempt] = why
}

// Three clones of one remote, two servers each, agents incrementing shared
// counters by compare-and-swap, servers killed at random, and a person who
// commits, pulls (a merge, their side first) and pushes by hand: no value
// is written twice, and every acknowledged version is, on a fresh clone
// after reindex, the version `log` gives that write's commit. (It failed in
// 2 of 14 runs while the log numbered a person's merge's second side by its
// place in the index's order instead of on the commit graph.)
func TestRemoteCountersUnderKillsAndAPerson(t *testing.T) {
	if testing.Short() {
		t.Skip("three clones, six servers, kills and a person's git for about half a minute")
	}
	const (
		nClones, perClone, nCounters = 3, 2, 3
		runFor                       = 15 * time.Second
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	start := time.Now()

	url, bare, first := boardWithRemote(t)
	// The remote keeps the order its branch moved in, for the evidence.
	fixtures.Git(t, bare, "config", "core.logAllRefUpdates", "always")
	for c := range nCounters {
		runCLI(t, first, "put", counterKey(c), "--digest", counterDigest(c, 0, "setup"), "--body", "0", "--expect", "0")
	}
	var clones []string
	for i := range nClones {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("clone%d", i+1))
		cloneBoard(t, url, dir)
		clones = append(clones, dir)
	}
	var slots []*serverSlot
	for i := range nClones * perClone {
		sl := &serverSlot{dir: clones[i/perClone], agent: fmt.Sprintf("agent-%d", i)}
		sl.start(t)
		slots = append(slots, sl)
	}

	var n tally
	out := &outcomes{refused: map[string]string{}, unknown: map[string]string{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i, sl := range slots {
		ar := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
		wg.Go(func() { runCounterAgent(t, i, sl, ar, &stop, &n, out) })
	}
	pr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	var personWG sync.WaitGroup
	personWG.Go(func() { runPerson(t, clones[0], pr, &stop, &n) })

	// The killer, in the test's goroutine (it starts servers).
	deadline := time.Now().Add(runFor)
	for {
		wait := 2*time.Second + time.Duration(r.IntN(1000))*time.Millisecond
		if time.Now().Add(wait).After(deadline) {
			time.Sleep(time.Until(deadline))
			break
		}
		time.Sleep(wait)
		slots[r.IntN(len(slots))].killAndRestart(t)
		n.kills.Add(1)
	}
	stop.Store(true)
	wg.Wait()
	personWG.Wait()

	// Quiesce: no merge left in progress, and every clone brought to the
	// remote (a read fetches, and pushes what a clone holds that the remote
	// lacks), until every clone's branch is the remote's. A clone that lost
	// a race keeps starting over for up to 30 s (fsstore's maxRemoteRace),
	// so the wait is twice that: under a full test run on 2 cores, 15 s
	// once left a clone behind with nothing wrong.
	if _, err := os.Stat(filepath.Join(clones[0], ".git", "MERGE_HEAD")); err == nil {
		_, _ = personGit(clones[0], "merge", "--abort")
	}
	settled := false
	var heads []string
	const quiesce = 60 * time.Second
	for until := time.Now().Add(quiesce); time.Now().Before(until); {
		for _, dir := range clones {
			_, _ = cliCommand(dir, "get", counterKey(0)).CombinedOutput()
		}
		remote := strings.TrimSpace(fixtures.GitOutput(t, bare, "rev-parse", "main"))
		heads = []string{"remote " + remote}
		settled = true
		for _, dir := range clones {
			head := strings.TrimSpace(fixtures.GitOutput(t, dir, "rev-parse", "main"))
			status := fixtures.GitOutput(t, dir, "status", "--porcelain")
			heads = append(heads, fmt.Sprintf("%s %s (status %q)", filepath.Base(dir), head, status))
			if head != remote || status != "" {
				settled = false
			}
		}
		if settled {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !settled {
		t.Errorf("the clones did not come to the remote within %v:\n  %s", quiesce, strings.Join(heads, "\n  "))
	}
	for _, sl := range slots {
		s, _, _ := sl.current()
		if err := s.close(); err != nil {
			t.Errorf("%s's server did not exit cleanly: %v\n%s", sl.agent, err, s.stderr.String())
		}
	}

	// The check, on a fresh clone of the remote after reindex.
	fresh := filepath.Join(t.TempDir(), "fresh")
	cloneBoard(t, url, fresh)
	runCLI(t, fresh, "reindex")
	problems, landedUnacked, recounts := checkCounters(t, fresh, nCounters, out)
	if len(problems) > 0 {
		t.Errorf("%d disagreements:\n  %s\n%s", len(problems), strings.Join(problems, "\n  "), remoteEvidence(t, bare, problems))
	}
	t.Logf("RESULT acks=%d conflicts=%d unavailable=%d internal=%d unknown_outcome=%d kills=%d landed_without_ack=%d merge_recounts=%d "+
		"person_commits=%d saves_committed_first_by_a_server=%d pulls=%d merges=%d pull_failures=%d merge_aborts=%d pushes=%d push_failures=%d disagreements=%d runtime=%s",
		n.acks.Load(), n.conflicts.Load(), n.unavailable.Load(), n.internal.Load(), n.unknown.Load(), n.kills.Load(), landedUnacked, recounts,
		n.personCommits.Load(), n.savesCommittedByServer.Load(), n.pulls.Load(), n.merges.Load(), n.pullFailures.Load(), n.mergeAborts.Load(),
		n.pushes.Load(), n.pushFailures.Load(), len(problems), time.Since(start).Round(100*time.Millisecond))
}

func counterKey(c int) string { return fmt.Sprintf("team/counter-%d", c) }

// runCounterAgent is agent i: until stop, it reads a counter and writes it
// plus one with expect_version the version it read.
func runCounterAgent(t *testing.T, i int, sl *serverSlot, r *rand.Rand, stop *atomic.Bool, n *tally, out *outcomes) {
	seq := 0
	for !stop.Load() {
		c := r.IntN(3)
		key := counterKey(c)
		s, ctx, gen := sl.current()
		call := func(name string, args map[string]any) (toolResult, error) {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			return s.callTool(cctx, name, args)
		}
		res, err := call("get_state", map[string]any{"uris": []string{key}, "mode": "full", "budget_tokens": 2000})
		if err != nil {
			if !sl.awaitNew(gen, stop) && !stop.Load() {
				t.Errorf("%s: get_state broke without a kill: %v\n%s", sl.agent, err, s.stderr.String())
				return
			}
			continue
		}
		if res.isError {
			if strings.HasPrefix(res.text, "unavailable:") {
				n.unavailable.Add(1)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			t.Errorf("%s: get_state %s: %s", sl.agent, key, res.text)
			return
		}
		var e envelope
		if err := json.Unmarshal([]byte(res.text), &e); err != nil || len(e.Items) != 1 || e.Items[0].Error != "" {
			t.Errorf("%s: get_state %s answered %s (%v)", sl.agent, key, res.text, err)
			return
		}
		value, err := strconv.Atoi(strings.TrimSpace(e.Items[0].Body))
		if err != nil {
			t.Errorf("%s: %s v%d holds %q, not a number", sl.agent, key, e.Items[0].Version, e.Items[0].Body)
			return
		}
		expect := e.Items[0].Version
		seq++
		attempt := fmt.Sprintf("a%d.%d", i, seq)
		digest := counterDigest(c, value+1, attempt)
		res, err = call("update_state", map[string]any{"uri": key, "digest": digest, "body": strconv.Itoa(value + 1), "expect_version": expect})
		switch {
		case err != nil:
			n.unknown.Add(1)
			out.unknownOutcome(attempt, "no answer: "+err.Error())
			if !sl.awaitNew(gen, stop) && !stop.Load() {
				t.Errorf("%s: update_state broke without a kill: %v\n%s", sl.agent, err, s.stderr.String())
				return
			}
		case !res.isError:
			var w writeResult
			if err := json.Unmarshal([]byte(res.text), &w); err != nil || w.Digest != digest {
				t.Errorf("%s: update_state answered %s (%v)", sl.agent, res.text, err)
				out.unknownOutcome(attempt, "an answer that is no write's: "+res.text)
				continue
			}
			n.acks.Add(1)
			out.ack(counterAck{counter: c, value: value + 1, version: w.Version, expect: expect, attempt: attempt})
		case strings.HasPrefix(res.text, "conflict:"):
			n.conflicts.Add(1)
			out.refuse(attempt, res.text)
		case strings.HasPrefix(res.text, "unavailable:"):
			n.unavailable.Add(1)
			out.refuse(attempt, res.text)
			time.Sleep(100 * time.Millisecond)
		case strings.Contains(res.text, "cannot tell whether"):
			n.internal.Add(1)
			n.unknown.Add(1)
			out.unknownOutcome(attempt, res.text)
			t.Errorf("%s: update_state %s: %s\nserver log:\n%s", sl.agent, key, res.text, s.stderr.String())
		default:
			n.internal.Add(1)
			out.refuse(attempt, res.text)
			// Why is in the engine's log, beside the clone's git files.
			engineLog, _ := os.ReadFile(filepath.Join(s.dir, ".git", "blackboard-engine.log"))
			t.Errorf("%s: update_state %s: %s\nserver log:\n%s\nthe engine's log:\n%s", sl.agent, key, res.text, s.stderr.String(), engineLog)
		}
	}
}

// runPerson is a person on the clone at dir who, every second or two,
// writes a note of their own, commits it, pulls (a merge when the remote
// moved) and pushes, by hand. Their git races the servers: a lost race is
// counted, never a failure of the test.
func runPerson(t *testing.T, dir string, r *rand.Rand, stop *atomic.Bool, n *tally) {
	for round := 1; !stop.Load(); round++ {
		time.Sleep(time.Second + time.Duration(r.IntN(1000))*time.Millisecond)
		if stop.Load() {
			return
		}
		note := handNote(fmt.Sprintf("The person's note, round %d", round), fmt.Sprintf("Written by hand, round %d.\n", round))
		if err := os.WriteFile(filepath.Join(dir, "team", "person.md"), []byte(note), 0o644); err != nil {
			t.Errorf("the person's save: %v", err)
			return
		}
		if _, err := personGit(dir, "add", "team/person.md"); err == nil {
			if _, err := personGit(dir, "commit", "-q", "-m", fmt.Sprintf("My note, round %d", round)); err == nil {
				n.personCommits.Add(1)
			} else {
				n.savesCommittedByServer.Add(1) // a server committed the save first, or held the index
			}
		} else {
			n.savesCommittedByServer.Add(1)
		}
		pulled, err := personGit(dir, "pull", "--no-rebase", "--no-edit", "origin", "main")
		if err != nil {
			n.pullFailures.Add(1)
			if _, err := os.Stat(filepath.Join(dir, ".git", "MERGE_HEAD")); err == nil {
				n.mergeAborts.Add(1)
				if out, err := personGit(dir, "merge", "--abort"); err != nil {
					t.Logf("the person's merge --abort: %v\n%s", err, out)
				}
			}
			continue
		}
		n.pulls.Add(1)
		if strings.Contains(pulled, "Merge made by") {
			n.merges.Add(1)
		}
		if _, err := personGit(dir, "push", "-q", "origin", "HEAD:main"); err != nil {
			n.pushFailures.Add(1)
		} else {
			n.pushes.Add(1)
		}
	}
}

// logEntry is one version of `log --json`.
type logEntry struct {
	Version   int    `json:"version"`
	Commit    string `json:"commit"`
	Digest    string `json:"digest"`
	SameAs    int    `json:"same_as"`
	ByProgram bool   `json:"by_program"`
	Subject   string `json:"subject"`
}

// checkCounters checks every counter's history on the board at dir (a
// fresh clone, reindexed) against what the agents learned, and returns the
// disagreements, how many values landed without an acknowledgement, and how
// many versions brought back content an earlier version had (a merge
// counted as a version).
func checkCounters(t *testing.T, dir string, nCounters int, out *outcomes) (problems []string, landedUnacked, recounts int) {
	t.Helper()
	out.mu.Lock()
	defer out.mu.Unlock()
	acked := map[string]counterAck{}
	ackedValues := map[[2]int]string{}
	for _, a := range out.acks {
		if other, dup := ackedValues[[2]int{a.counter, a.value}]; dup {
			problems = append(problems, fmt.Sprintf("counter-%d = %d was acknowledged twice: to %s and to %s", a.counter, a.value, other, a.attempt))
		}
		ackedValues[[2]int{a.counter, a.value}] = a.attempt
		acked[a.attempt] = a
		if a.version != a.expect+1 {
			problems = append(problems, fmt.Sprintf("%s: counter-%d = %d acknowledged at v%d, written with expect_version %d", a.attempt, a.counter, a.value, a.version, a.expect))
		}
	}
	landed := map[string]bool{}
	landedAt := map[string]logEntry{}
	for c := range nCounters {
		key := counterKey(c)
		var entries []logEntry
		if err := json.Unmarshal([]byte(runCLI(t, dir, "log", key, "-n", "100000", "--json")), &entries); err != nil {
			t.Fatalf("log %s: %v", key, err)
		}
		slices.Reverse(entries) // oldest first
		// A version is its commit's on the commit graph: the two sides of
		// a person's merge may each hold a number, with their own content.
		byVersion := map[int][]logEntry{}
		seenDigest := map[string]int{}
		next := 0 // the value the next write must hold
		unacked := 0
		for i, e := range entries {
			byVersion[e.Version] = append(byVersion[e.Version], e)
			if v, again := seenDigest[e.Digest]; again {
				// Content an earlier version had, counted again (a merge
				// whose parents differ at the note): not a write.
				// A merge whose first parent is a person's older line
				// counts too (SPEC section 4 allows a version to repeat an
				// earlier content, never to give a version two contents).
				recounts++
				if entries[i-1].Digest != e.Digest {
					t.Logf("%s v%d (%.7s %s) holds v%d's content again (same_as %d)", key, e.Version, e.Commit, e.Subject, v, e.SameAs)
				}
				continue
			}
			seenDigest[e.Digest] = e.Version
			cc, value, attempt, ok := parseCounterDigest(e.Digest)
			if !ok || cc != c {
				problems = append(problems, fmt.Sprintf("%s v%d (%.7s %s) holds digest %q, no write of this counter", key, e.Version, e.Commit, e.Subject, e.Digest))
				continue
			}
			if value != next {
				problems = append(problems, fmt.Sprintf("%s v%d (%.7s, %s) holds %d after %d: a value written twice or skipped", key, e.Version, e.Commit, attempt, value, next-1))
			}
			next = value + 1
			if attempt == "setup" {
				continue
			}
			if landed[attempt] {
				problems = append(problems, fmt.Sprintf("%s v%d (%.7s): attempt %s landed twice", key, e.Version, e.Commit, attempt))
			}
			landed[attempt] = true
			landedAt[attempt] = e
			_, wasAcked := acked[attempt]
			why, wasUnknown := out.unknown[attempt]
			answer, wasRefused := out.refused[attempt]
			if !wasAcked {
				unacked++
			}
			switch {
			case wasAcked:
			case wasUnknown:
				landedUnacked++
				t.Logf("%s v%d (%.7s): %s landed without an ack (%s)", key, e.Version, e.Commit, attempt, why)
			case wasRefused:
				problems = append(problems, fmt.Sprintf("%s v%d (%.7s %s): attempt %s landed, yet its agent was answered %q", key, e.Version, e.Commit, e.Subject, attempt, answer))
			default:
				problems = append(problems, fmt.Sprintf("%s v%d (%.7s %s): attempt %s landed, which no agent made", key, e.Version, e.Commit, e.Subject, attempt))
			}
		}
		distinctAcked := 0
		for _, a := range out.acks {
			if a.counter != c {
				continue
			}
			distinctAcked++
			at := byVersion[a.version]
			switch {
			case len(at) == 0:
				problems = append(problems, fmt.Sprintf("%s: %s acknowledged %d at v%d, a version the fresh clone does not hold (%d versions)", key, a.attempt, a.value, a.version, len(entries)))
			case !slices.ContainsFunc(at, func(e logEntry) bool { return e.Digest == counterDigest(c, a.value, a.attempt) }):
				w, e := landedAt[a.attempt], at[0]
				problems = append(problems, fmt.Sprintf("%s: %s acknowledged %d at v%d, but the fresh clone's v%d (%.7s %s) holds %q; the write is %.7s, v%d there",
					key, a.attempt, a.value, a.version, a.version, e.Commit, e.Subject, e.Digest, w.Commit, w.Version))
			}
			if !landed[a.attempt] {
				problems = append(problems, fmt.Sprintf("%s: %s acknowledged %d at v%d, not a write in the remote's history", key, a.attempt, a.value, a.version))
			}
		}
		final := next - 1
		t.Logf("%s: final value %d, %d versions, %d acknowledged writes, %d landed without an ack", key, final, len(entries), distinctAcked, unacked)
		if final != distinctAcked+unacked {
			problems = append(problems, fmt.Sprintf("%s: final value %d, but %d acknowledged writes and %d that landed without an ack", key, final, distinctAcked, unacked))
		}
	}
	return problems, landedUnacked, recounts
}

// remoteEvidence is what the remote at bare says of the commits the
// problems name: each one's parents and every counter's digest in it and
// in its parents, the order the remote's branch moved in, and the graph.
func remoteEvidence(t *testing.T, bare string, problems []string) string {
	t.Helper()
	var b strings.Builder
	digestAt := func(rev, key string) string {
		out, err := fixtures.GitCmd(bare, "show", rev+":"+key+".md").Output()
		if err != nil {
			return "(none)"
		}
		for line := range strings.SplitSeq(string(out), "\n") {
			if d, ok := strings.CutPrefix(line, "digest: "); ok {
				return d
			}
		}
		return "(no digest)"
	}
	seen := map[string]bool{}
	for _, p := range problems {
		for _, f := range strings.Fields(p) {
			sha := strings.Trim(f, "(),:")
			if len(sha) != 7 || seen[sha] || fixtures.GitCmd(bare, "cat-file", "-e", sha+"^{commit}").Run() != nil {
				continue
			}
			seen[sha] = true
			line := strings.TrimSpace(fixtures.GitOutput(t, bare, "log", "-1", "--format=%h parents %p, %an: %s", sha))
			fmt.Fprintf(&b, "commit %s\n", line)
			parents := strings.Fields(strings.TrimSpace(fixtures.GitOutput(t, bare, "log", "-1", "--format=%p", sha)))
			for c := range 3 {
				key := counterKey(c)
				fmt.Fprintf(&b, "  %s: %q", key, digestAt(sha, key))
				for _, parent := range parents {
					fmt.Fprintf(&b, ", parent %s %q", parent, digestAt(parent, key))
				}
				b.WriteString("\n")
			}
		}
	}
	b.WriteString("the remote's branch moved (newest first):\n")
	b.WriteString(fixtures.GitOutput(t, bare, "reflog", "show", "--format=%h %gs", "-n", "40", "main"))
	b.WriteString("the remote's history (newest first):\n")
	b.WriteString(fixtures.GitOutput(t, bare, "log", "--graph", "--format=%h %p %an: %s", "-n", "150", "main"))
	return b.String()
}
