package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// The tests of claims on work (README "Claiming work"): agents that share a
// task list take each task once, and a dead agent's task comes back.

// worker is one agent with its own server, taking and finishing tasks.
type worker struct {
	name string
	s    *session
	// blind takes without expect_version: only the server's check of the
	// claim keeps it from taking a task another holds.
	blind bool
	// lost counts the takes another agent won.
	lost *atomic.Int64
}

// callQuiet runs a tool from a goroutine of the test: a transport failure
// is returned, not fatal.
func (w worker) callQuiet(name string, args map[string]any) (toolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return w.s.callTool(ctx, name, args)
}

// openTasks lists the open tasks under topic, oldest first.
func (w worker) openTasks(topic string) ([]item, error) {
	res, err := w.callQuiet("list_keys", map[string]any{"topic": topic, "open": true, "order": "oldest", "mode": "ref", "limit": 100})
	switch {
	case err != nil:
		return nil, fmt.Errorf("list_keys: %w", err)
	case res.isError:
		return nil, fmt.Errorf("list_keys: %s", res.text)
	}
	var e envelope
	if err := json.Unmarshal([]byte(res.text), &e); err != nil {
		return nil, err
	}
	return e.Items, nil
}

// work takes open tasks under topic, one at a time, works on each for a
// random moment and finishes it, until none is open. It returns the tasks
// it finished.
func (w worker) work(topic string, rng *rand.Rand, lease int) ([]string, error) {
	var done []string
	for {
		open, err := w.openTasks(topic)
		if err != nil {
			return done, err
		}
		if len(open) == 0 {
			return done, nil
		}
		// Most go for the oldest, so that they race for it.
		task := open[min(rng.IntN(3), len(open)-1)]
		take := map[string]any{"uri": task.URI, "claim": "take", "expect_version": task.Version, "lease": lease}
		if w.blind {
			delete(take, "expect_version")
		}
		res, err := w.callQuiet("update_state", take)
		switch {
		case err != nil:
			return done, err
		case res.isError && strings.HasPrefix(res.text, "conflict: "):
			if w.lost != nil {
				w.lost.Add(1)
			}
			continue // another agent took it first
		case res.isError:
			return done, fmt.Errorf("take %s: %s", task.URI, res.text)
		}
		var took writeResult
		if err := json.Unmarshal([]byte(res.text), &took); err != nil {
			return done, err
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		res, err = w.callQuiet("update_state", map[string]any{"uri": task.URI, "claim": "done", "expect_version": took.Version,
			"body": "done by " + w.name})
		switch {
		case err != nil:
			return done, fmt.Errorf("finish %s: %w", task.URI, err)
		case res.isError:
			return done, fmt.Errorf("finish %s: %s", task.URI, res.text)
		}
		done = append(done, task.URI)
	}
}

// claimHistory reads, from git, each task's claim and done commits in
// order, as "claim agent" and "done agent", and fails the test when an
// agent took a task while another's claim held (by the commit's time and
// the claim_until it wrote) or a task was finished other than once.
func claimHistory(t *testing.T, dir, topic string, tasks int) map[string][]string {
	t.Helper()
	log := fixtures.Git(t, dir, "log", "--reverse", "--first-parent", "--format=%H%x09%an%x09%ct%x09%s", "main")
	type hold struct {
		agent string
		until int64
	}
	held := map[string]hold{}
	events := map[string][]string{}
	for _, line := range strings.Split(log, "\n") {
		f := strings.SplitN(line, "\t", 4)
		if len(f) != 4 {
			continue
		}
		commit, author, subject := f[0], f[1], f[3]
		at, _ := strconv.ParseInt(f[2], 10, 64)
		op, rest, _ := strings.Cut(subject, " ")
		key, _, _ := strings.Cut(rest, " ")
		if !strings.HasPrefix(key, topic+"/") || (op != "claim" && op != "done") {
			continue
		}
		events[key] = append(events[key], op+" "+author)
		h := held[key]
		switch {
		case op == "claim" && h.agent != "" && h.agent != author && at < h.until:
			t.Errorf("%s: %s claimed it at %d while %s held it until %d", key, author, at, h.agent, h.until)
		case op == "claim":
			file := fixtures.Git(t, dir, "show", commit+":"+key+".md")
			_, until, _ := strings.Cut(file, "claim_until: ")
			until, _, _ = strings.Cut(until, "\n")
			u, err := time.Parse(time.RFC3339, until)
			if err != nil {
				t.Fatalf("%s at %s: claim_until %q: %v", key, commit, until, err)
			}
			held[key] = hold{author, u.Unix()}
		case op == "done" && h.agent != author && at < h.until:
			t.Errorf("%s: finished by %s while %s held it", key, author, h.agent)
		default: // done
			held[key] = hold{}
		}
	}
	if len(events) != tasks {
		t.Errorf("%d tasks have claim or done commits, want %d", len(events), tasks)
	}
	for key, evs := range events {
		if dones := strings.Count(strings.Join(evs, ","), "done "); dones != 1 {
			t.Errorf("%s: finished %d times: %v", key, dones, evs)
		}
	}
	return events
}

func addTasks(t *testing.T, s *session, topic string, n int) {
	t.Helper()
	for i := range n {
		s.write(map[string]any{"uri": fmt.Sprintf("%s/t%02d", topic, i), "digest": fmt.Sprintf("task %d", i),
			"body": "what to do", "kind": "task", "expect_version": 0})
	}
}

// TestClaimRaceEightAgents: eight agents, each with its own server, race
// for twenty open tasks, each taking one, working a random moment,
// finishing it and taking the next: every task is done exactly once, none
// is held by two agents at once (by git's history), and the counts add up.
func TestClaimRaceEightAgents(t *testing.T) {
	dir := newWorkspaceDir(t)
	planner := startServer(t, serverOpts{dir: dir, agent: "planner"})
	addTasks(t, planner, "tasks", 20)
	var workers []worker
	var lost atomic.Int64
	for i := range 8 {
		name := fmt.Sprintf("worker-%d", i+1)
		workers = append(workers, worker{name: name, s: startServer(t, serverOpts{dir: dir, agent: name}), blind: i%2 == 1, lost: &lost})
	}
	var wg sync.WaitGroup
	finished := make([][]string, len(workers))
	errs := make([]error, len(workers))
	for i, w := range workers {
		wg.Go(func() {
			finished[i], errs[i] = w.work("tasks", rand.New(rand.NewPCG(uint64(i), 7)), 60)
		})
	}
	wg.Wait()
	total := 0
	seen := map[string]string{}
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", workers[i].name, err)
		}
		for _, uri := range finished[i] {
			if other, ok := seen[uri]; ok {
				t.Errorf("%s finished by %s and by %s", uri, other, workers[i].name)
			}
			seen[uri] = workers[i].name
		}
		total += len(finished[i])
	}
	if total != 20 {
		t.Errorf("the agents finished %d tasks, want 20", total)
	}
	events := claimHistory(t, dir, "tasks", 20)
	claims := 0
	for _, evs := range events {
		claims += len(evs) - 1
	}
	t.Logf("8 agents (4 without expect_version), 20 tasks: %d takes lost to another agent, %d claim commits, 20 done, 0 double claims",
		lost.Load(), claims)
	if open, err := workers[0].openTasks("tasks"); err != nil || len(open) != 0 {
		t.Errorf("open tasks after all are done: %v %v", open, err)
	}
	// Every note says who finished it.
	got := planner.ok("get_state", map[string]any{"uris": []string{"tasks/t00", "tasks/t19"}, "mode": "fields", "fields": []string{"done_by"}})
	if strings.Count(got, `"done_by":"worker-`) != 2 {
		t.Errorf("the finished notes do not say who finished them: %s", got)
	}
}

// TestClaimOfAKilledAgentComesBack: an agent killed (kill -9) while it holds
// a claim leaves its task to the others once the lease lapses: another
// agent takes it within the lease and a second, and finishes it once.
func TestClaimOfAKilledAgentComesBack(t *testing.T) {
	dir := newWorkspaceDir(t)
	planner := startServer(t, serverOpts{dir: dir, agent: "planner"})
	addTasks(t, planner, "jobs", 1)
	doomed := startServer(t, serverOpts{dir: dir, agent: "doomed"})
	const lease = 2
	took := decodeWrite(t, doomed.ok("update_state", map[string]any{"uri": "jobs/t00", "claim": "take", "expect_version": 1, "lease": lease}))
	taken := time.Now()
	if err := doomed.kill(); err != nil {
		t.Fatal(err)
	}
	heir := worker{name: "heir", s: startServer(t, serverOpts{dir: dir, agent: "heir"})}
	// Until the lease lapses, the task is not offered, and taking it fails.
	if open, err := heir.openTasks("jobs"); err != nil || len(open) != 0 {
		t.Fatalf("open while the dead agent's lease runs: %v %v", open, err)
	}
	heir.s.fail("update_state", map[string]any{"uri": "jobs/t00", "claim": "take", "expect_version": took.Version}, "conflict")
	var after time.Duration
	for {
		open, err := heir.openTasks("jobs")
		if err != nil {
			t.Fatal(err)
		}
		if len(open) == 1 {
			heir.s.write(map[string]any{"uri": "jobs/t00", "claim": "take", "expect_version": open[0].Version})
			after = time.Since(taken)
			break
		}
		if time.Since(taken) > 10*time.Second {
			t.Fatal("the dead agent's task never came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after > (lease+1)*time.Second+500*time.Millisecond {
		t.Errorf("the task came back %v after it was taken; the lease is %d s", after, lease)
	}
	t.Logf("a killed agent's task was taken again %v after its claim (lease %d s)", after.Round(time.Millisecond), lease)
	heir.s.write(map[string]any{"uri": "jobs/t00", "claim": "done", "body": "finished by the heir"})
	claimHistory(t, dir, "jobs", 1)
}

// TestClaimRaceAcrossClones: the same race over a git remote, agents on two
// clones: each task is done exactly once, by the remote's history.
func TestClaimRaceAcrossClones(t *testing.T) {
	url, bare, first := boardWithRemote(t)
	clones := withClones(t, url, first, 1)
	planner := startServer(t, serverOpts{dir: clones[0], agent: "planner"})
	addTasks(t, planner, "tasks", 8)
	var workers []worker
	for i := range 4 {
		name := fmt.Sprintf("worker-%d", i+1)
		workers = append(workers, worker{name: name, s: startServer(t, serverOpts{dir: clones[i%2], agent: name})})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(workers))
	total := make([]int, len(workers))
	for i, w := range workers {
		wg.Go(func() {
			var done []string
			done, errs[i] = w.work("tasks", rand.New(rand.NewPCG(uint64(i), 11)), 60)
			total[i] = len(done)
		})
	}
	wg.Wait()
	sum := 0
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", workers[i].name, err)
		}
		sum += total[i]
	}
	// An agent on the clone that has not fetched yet may find a task
	// open that the other clone finished: its claim is then refused by the
	// remote's history, never a second finish.
	if sum != 8 {
		t.Errorf("the agents finished %d tasks, want 8", sum)
	}
	claimHistory(t, bare, "tasks", 8)
}
