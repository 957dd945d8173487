package main

import (
	"encoding/json"
	"errors"
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

// The one version rule (SPEC section 4) under random work: several real
// server processes on one board, agents writing a handful of notes that
// collide, identical rewrites among them, people saving files, committing
// and pulling merges, and servers killed mid-write. Whatever happened, the
// version every write was acknowledged at is the one git holds for its
// content, and the live index, `reindex` and a fresh clone agree (the check
// every end-to-end test ends with runs at the end of each sequence).
//
// Each sequence's seed is logged; BLACKBOARD_VERSIONS_SEED=N replays the
// one sequence of seed N (the interleaving of processes is the machine's,
// so a replay makes the same choices, not always the same history).

// versionsSeedEnv replays one sequence.
const versionsSeedEnv = "BLACKBOARD_VERSIONS_SEED"

// operations is the mix of what happens on the board, each with its weight:
// the specification of the property test. Agent operations run on the
// agent's own server, concurrently with the other agents and the person;
// person operations run in the person's own goroutine, concurrently with
// the agents, except pull, which waits for the agents to finish their
// current operation (see pull).
var operations = []struct {
	name   string
	weight int
	person bool
	run    func(a *actor) error
}{
	// A body from a small pool, so that a write often equals what the note
	// holds; with expect_version (the last version this agent saw) half the
	// time: a conflict is fine and records nothing.
	{"write", 20, false, (*actor).write},
	// The note's own digest and body written back: nothing changes.
	{"identical rewrite", 10, false, (*actor).rewrite},
	// An equal line appended again.
	{"append line", 6, false, (*actor).appendLine},
	// A table written with rows from a pool of two: often the rows it holds.
	{"write table", 8, false, (*actor).writeTable},
	// An equal row appended to a table.
	{"append row", 5, false, (*actor).appendRow},
	// The same link written again: the second adds nothing.
	{"link", 8, false, (*actor).link},
	// A file under the board's parent directory, its content from a pool.
	{"source_path", 5, false, (*actor).writeSource},
	// kill -9 of this agent's server while one of its writes is in flight,
	// then a new server.
	{"kill server", 1, false, (*actor).killServer},
	// A person saves a note's file as an editor does (a temp file renamed
	// over it), front matter kept, the body changed; the servers commit it.
	{"person saves", 6, true, (*actor).personSave},
	// A person saves and runs `git commit -am` (which may lose the race to
	// a server that commits the save first).
	{"person commits", 4, true, (*actor).personCommit},
	// A person pulls a clone of the board in which a commit was made, while
	// the board moved too: a true merge commit.
	{"person pulls", 2, true, (*actor).personPull},
}

// propertyBodies, propertyRows and propertySources are the pools contents
// are drawn from: small, so that writes equal what a note already holds.
var (
	propertyBodies  = []string{"Alpha body.\n", "Beta body.\n", "Gamma body,\nwith two lines.\n"}
	propertyRows    = [][][]string{{{"a", "1"}, {"b", "2"}}, {{"c", "3"}}}
	propertySources = []string{"# Source\n\nOne.\n", "# Source\n\nTwo.\n"}
)

func TestVersionsAgreeUnderRandomWork(t *testing.T) {
	if testing.Short() {
		t.Skip("random work by several processes takes about half a minute")
	}
	seeds := []uint64{}
	if v := os.Getenv(versionsSeedEnv); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", versionsSeedEnv, v, err)
		}
		seeds = append(seeds, seed)
	} else {
		base := uint64(time.Now().UnixNano())
		for i := range uint64(6) {
			seeds = append(seeds, base+i)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("replay with %s=%d", versionsSeedEnv, seed)
			runRandomWork(t, seed)
		})
	}
}

// world is one sequence's board and what its actors share.
type world struct {
	t      *testing.T
	dir    string
	keys   []string // text notes
	tables []string // table notes
	// paused is held for reading by each agent operation and for writing
	// by a pull, so that no agent changes a note between the person's clone
	// and their pull (which would make a conflict, not a merge).
	paused sync.RWMutex
	pulls  int
	mu     sync.Mutex // guards pulls
}

// actor is an agent (its server and what it saw) or the person.
type actor struct {
	w     *world
	name  string
	r     *rand.Rand
	s     *session
	seen  map[string]int // the last version this agent saw of each note
	serve int            // servers this agent started
}

func runRandomWork(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := &world{t: t, dir: newWorkspaceDir(t)}
	nText, nTable := 4+r.IntN(5), 2+r.IntN(3)
	for i := range nText {
		w.keys = append(w.keys, fmt.Sprintf("%s/note-%d", []string{"alpha", "beta"}[i%2], i))
	}
	for i := range nTable {
		w.tables = append(w.tables, fmt.Sprintf("%s/table-%d", []string{"beta", "alpha"}[i%2], i))
	}
	for i, content := range propertySources {
		if err := os.WriteFile(filepath.Join(filepath.Dir(w.dir), fmt.Sprintf("source-%d.md", i)), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	agents := make([]*actor, 2+r.IntN(3))
	for i := range agents {
		agents[i] = &actor{w: w, name: fmt.Sprintf("agent-%d", i), r: rand.New(rand.NewPCG(r.Uint64(), r.Uint64())), seen: map[string]int{}}
		agents[i].start() // one after the other: the first initializes the board
	}
	person := &actor{w: w, name: "person", r: rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))}

	// The plan: each operation drawn by weight and given to an agent or to
	// the person, so that the seed fixes what each actor does. The actors
	// keep roughly to the plan's order (an operation starts once all but
	// the last few before it are done), so that the person's quick saves
	// are spread over the run instead of all done before the first write.
	total := 0
	for _, op := range operations {
		total += op.weight
	}
	type step struct{ op, at int }
	plans := map[*actor][]step{}
	window := int64(len(agents) + 1)
	var finished atomic.Int64
	for at := range 60 + r.IntN(91) {
		n, i := r.IntN(total), 0
		for n >= operations[i].weight {
			n -= operations[i].weight
			i++
		}
		who := person
		if !operations[i].person {
			who = agents[r.IntN(len(agents))]
		}
		plans[who] = append(plans[who], step{i, at})
	}
	var (
		countsMu sync.Mutex
		counts   = map[string]*[2]int{} // operation name -> done, refused
	)
	var wg sync.WaitGroup
	for who, plan := range plans {
		wg.Go(func() {
			for _, st := range plan {
				for finished.Load() < int64(st.at)-window {
					time.Sleep(time.Millisecond)
				}
				op := operations[st.op]
				if !op.person {
					w.paused.RLock()
				}
				err := op.run(who)
				if !op.person {
					w.paused.RUnlock()
				}
				countsMu.Lock()
				if counts[op.name] == nil {
					counts[op.name] = new([2]int)
				}
				if err != nil {
					counts[op.name][1]++
				} else {
					counts[op.name][0]++
				}
				countsMu.Unlock()
				finished.Add(1)
			}
		})
	}
	wg.Wait()
	var summary []string
	for _, op := range operations {
		if c := counts[op.name]; c != nil {
			summary = append(summary, fmt.Sprintf("%s %d (%d refused)", op.name, c[0], c[1]))
		}
	}
	merges := strings.TrimSpace(fixtures.GitOutput(t, w.dir, "rev-list", "--merges", "--count", "HEAD"))
	t.Logf("%d agents, %d notes, %s merges: %s", len(agents), nText+nTable, merges, strings.Join(summary, ", "))

	// Quiesce: the servers have committed every save once git status is
	// clean; then they stop, and the check runs as the test ends.
	if err := w.awaitClean(); err != nil {
		t.Error(err)
	}
	for _, a := range agents {
		if err := a.s.close(); err != nil {
			t.Errorf("%s's server did not exit cleanly: %v\n%s", a.name, err, a.s.stderr.String())
		}
	}
}

// start starts a server for the agent.
func (a *actor) start() {
	a.serve++
	a.s = startMCPGo(a.w.t, a.w.dir, a.name)
}

// call runs a tool on the agent's server. A tool's refusal (a conflict, an
// invalid write, a link from a note not written yet) is an error; an internal error or a broken session fails
// the test, as no operation may cause one.
func (a *actor) call(name string, args map[string]any) (string, error) {
	ctx, cancel := contextWithTimeout()
	defer cancel()
	res, err := a.s.callTool(ctx, name, args)
	if err != nil {
		a.w.t.Errorf("%s: %s(%s): %v\nserver log:\n%s", a.name, name, jsonString(args), err, a.s.stderr.String())
		return "", err
	}
	if res.isError {
		code, _, _ := strings.Cut(res.text, ":")
		if code != "conflict" && code != "invalid" && code != "not_found" {
			a.w.t.Errorf("%s: %s(%s) = %s\nserver log:\n%s", a.name, name, jsonString(args), res.text, a.s.stderr.String())
		}
		return "", errors.New(res.text)
	}
	return res.text, nil
}

// update runs update_state and remembers the version acknowledged.
func (a *actor) update(key string, args map[string]any) error {
	args["uri"] = key
	if v, ok := a.seen[key]; ok && a.r.IntN(2) == 0 {
		args["expect_version"] = v
	}
	text, err := a.call("update_state", args)
	if err != nil {
		return err
	}
	return a.saw(key, text)
}

// saw remembers the version a write's answer gives. The actors run in
// goroutines of their own, where a test may not stop: a wrong answer is
// an error of the test and of the operation.
func (a *actor) saw(key, text string) error {
	var res writeResult
	if err := json.Unmarshal([]byte(text), &res); err != nil || res.Version < 1 {
		return a.fail("%s: a write's answer %q is not a version (%v)", a.name, text, err)
	}
	a.seen[key] = res.Version
	return nil
}

// fail fails the test from an actor's goroutine and ends the operation.
func (a *actor) fail(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	a.w.t.Error(err)
	return err
}

// read returns a note as get_state full gives it; version 0 when missing.
func (a *actor) read(key string) item {
	text, err := a.call("get_state", map[string]any{"uris": []string{key}, "mode": "full", "budget_tokens": 20000})
	if err != nil {
		return item{}
	}
	var e envelope
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		_ = a.fail("%s: get_state answered %q: %v", a.name, text, err)
		return item{}
	}
	if len(e.Items) != 1 || e.Items[0].Error != "" {
		return item{}
	}
	a.seen[key] = e.Items[0].Version
	return e.Items[0]
}

func pick[T any](r *rand.Rand, list []T) T { return list[r.IntN(len(list))] }

func (a *actor) write() error {
	body := pick(a.r, propertyBodies)
	return a.update(pick(a.r, a.w.keys), map[string]any{"digest": "About " + strings.Fields(body)[0], "body": body})
}

func (a *actor) rewrite() error {
	key := pick(a.r, a.w.keys)
	it := a.read(key)
	if it.Version == 0 {
		return errors.New("nothing to rewrite")
	}
	args := map[string]any{"uri": key, "digest": it.Digest, "body": it.Body}
	if a.r.IntN(2) == 0 {
		args["expect_version"] = it.Version
	}
	text, err := a.call("update_state", args)
	if err != nil {
		return err
	}
	return a.saw(key, text)
}

func (a *actor) appendLine() error {
	return a.update(pick(a.r, a.w.keys), map[string]any{"digest": "A log", "append": "the same line\n"})
}

func (a *actor) writeTable() error {
	return a.update(pick(a.r, a.w.tables), map[string]any{"digest": "A table",
		"columns": []string{"name", "value"}, "rows": pick(a.r, propertyRows)})
}

func (a *actor) appendRow() error {
	return a.update(pick(a.r, a.w.tables), map[string]any{"digest": "A table", "rows": [][]string{{"same", "row"}}})
}

func (a *actor) link() error {
	i := a.r.IntN(len(a.w.keys))
	// Each note links to its neighbour, always the same: a link is written
	// again far more often than it is new.
	text, err := a.call("link_state", map[string]any{"src": a.w.keys[i], "rel": "cites", "dst": []string{a.w.keys[(i+1)%len(a.w.keys)]}})
	if err != nil {
		return err
	}
	return a.saw(a.w.keys[i], text)
}

func (a *actor) writeSource() error {
	i := a.r.IntN(len(propertySources))
	return a.update(pick(a.r, a.w.keys), map[string]any{"digest": "From a source",
		"source_path": filepath.Join(filepath.Dir(a.w.dir), fmt.Sprintf("source-%d.md", i))})
}

// killServer kills the agent's server while a write is in flight: the write
// may be committed or not, and is not acknowledged either way.
func (a *actor) killServer() error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := contextWithTimeout()
		defer cancel()
		_, _ = a.s.callTool(ctx, "update_state", map[string]any{"uri": pick(a.r, a.w.keys), "digest": "Cut short", "body": "Killed mid-write.\n"})
	}()
	time.Sleep(time.Duration(a.r.IntN(3000)) * time.Microsecond)
	if err := a.s.kill(); err != nil {
		a.w.t.Errorf("kill %s's server: %v", a.name, err)
	}
	<-done
	_ = a.s.close()
	a.start()
	return nil
}

// personSave changes a note's body in its file as an editor saves: the
// whole file written to a temp file and renamed over the note.
func (a *actor) personSave() error {
	key := pick(a.r, a.w.keys)
	path := filepath.Join(a.w.dir, filepath.FromSlash(key)+".md")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err // not written yet
	}
	front, _, ok := splitFrontMatter(string(raw))
	if !ok {
		return errors.New("no front matter")
	}
	body := fmt.Sprintf("Edited by a person, %d.\n", a.r.IntN(3))
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	if err := os.WriteFile(tmp, []byte("---\n"+front+"---\n"+body), 0o644); err != nil {
		return a.fail("save %s: %v", key, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return a.fail("save %s: %v", key, err)
	}
	return nil
}

func (a *actor) personCommit() error {
	if err := a.personSave(); err != nil {
		return err
	}
	_, err := personGit(a.w.dir, "commit", "-q", "-am", "A person's edit")
	return err
}

// personPull makes a commit in a clone of the board (a new note and a
// changed one), one on the board, and pulls the clone: a merge whose second
// parent changed a note the agents write. The agents are paused meanwhile,
// and the servers' commits of earlier saves awaited, so that the merge has
// no conflict.
func (a *actor) personPull() error {
	w := a.w
	w.paused.Lock()
	defer w.paused.Unlock()
	if err := w.awaitClean(); err != nil {
		return err
	}
	w.mu.Lock()
	w.pulls++
	n := w.pulls
	w.mu.Unlock()
	clone := filepath.Join(w.t.TempDir(), "clone")
	if out, err := personGit(w.dir, "clone", "-q", w.dir, clone); err != nil {
		return a.fail("clone the board: %v\n%s", err, out)
	}
	there, here := pick(a.r, w.keys), pick(a.r, w.keys)
	for there == here {
		here = pick(a.r, w.keys)
	}
	thereFile := filepath.Join(clone, filepath.FromSlash(there)+".md")
	if _, err := os.Stat(thereFile); err != nil {
		there = fmt.Sprintf("alpha/pulled-%d", n)
		thereFile = filepath.Join(clone, filepath.FromSlash(there)+".md")
	}
	content := fmt.Sprintf("---\ndigest: Pulled from a clone, %d\n---\nMade in a clone.\n", n)
	if err := os.MkdirAll(filepath.Dir(thereFile), 0o755); err != nil {
		return a.fail("%v", err)
	}
	if err := os.WriteFile(thereFile, []byte(content), 0o644); err != nil {
		return a.fail("%v", err)
	}
	if out, err := personGit(clone, "add", "-A"); err != nil {
		return a.fail("git add in the clone: %v\n%s", err, out)
	}
	if out, err := personGit(clone, "commit", "-q", "-m", "A person's commit in a clone"); err != nil {
		return a.fail("commit in the clone: %v\n%s", err, out)
	}
	// The board moves too, so the pull is a merge, not a fast-forward.
	herePath := filepath.Join(w.dir, filepath.FromSlash(here)+".md")
	if err := os.MkdirAll(filepath.Dir(herePath), 0o755); err != nil {
		return a.fail("%v", err)
	}
	if err := os.WriteFile(herePath, []byte(fmt.Sprintf("---\ndigest: Before the pull, %d\n---\nMade on the board.\n", n)), 0o644); err != nil {
		return a.fail("%v", err)
	}
	if _, err := personGit(w.dir, "add", "--", filepath.FromSlash(here)+".md"); err == nil {
		_, _ = personGit(w.dir, "commit", "-q", "-m", "A person's commit before a pull")
	}
	if err := w.awaitClean(); err != nil { // a server's commit of the edit, if it won
		return err
	}
	if out, err := personGit(w.dir, "pull", "-q", "--no-rebase", "--no-edit", clone, "main"); err != nil {
		// A server that committed the board's own edit first leaves
		// nothing wrong; a pull refused for a dirty tree neither. A
		// conflict would be the test's fault.
		if _, merging := os.Stat(filepath.Join(w.dir, ".git", "MERGE_HEAD")); merging == nil {
			return a.fail("the pull left a merge unfinished: %v\n%s", err, out)
		}
		return err
	}
	return nil
}

// awaitClean waits until the servers have committed every edit in the work
// tree, as they do while they watch.
func (w *world) awaitClean() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := personGit(w.dir, "status", "--porcelain")
		if err == nil && out == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the board's work tree stayed dirty: %w\n%s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// personGit runs git as the person in dir, which may fail: a person's git
// races the servers, and losing the race (a moved branch, a held index lock,
// nothing left to commit) is part of the work, not a failure of the test.
func personGit(dir string, args ...string) (string, error) {
	out, err := fixtures.GitCmd(dir, args...).CombinedOutput()
	return string(out), err
}

// Identical rewrites that come together are committed as a group (several
// calls at once to one server, which runs them concurrently; or a write
// while another process's are pending): each answers the note's version
// with its "unchanged" warning, as one that comes alone does, and none is
// an internal error. Found by the random work above.
func TestVersionsIdenticalRewritesTogether(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	s := startMCPGo(t, dir, "agent")
	args := map[string]any{"uri": "team/plan", "digest": "The plan", "body": "Ship it.\n"}
	s.write(args)
	const writers = 8
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			ctx, cancel := contextWithTimeout()
			defer cancel()
			res, err := s.callTool(ctx, "update_state", args)
			if err != nil || res.isError {
				t.Errorf("an identical rewrite among %d: %v %s", writers, err, res.text)
				return
			}
			var w writeResult
			if err := json.Unmarshal([]byte(res.text), &w); err != nil || w.Version != 1 ||
				!slices.ContainsFunc(w.Warnings, func(s string) bool { return strings.HasPrefix(s, "unchanged") }) {
				t.Errorf("an identical rewrite among %d answered %s; want version 1 with an unchanged warning", writers, res.text)
			}
		})
	}
	wg.Wait()
	s.closeClean()
}
