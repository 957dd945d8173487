package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// Ready work: list_keys(open=true) offers a task only once the notes it
// depends_on are done (README "Claiming work"). A chain, a diamond, a
// cycle, a finding of another topic, a task of another topic that is
// claimed, and a dependency a token may not read, each checked before and
// after each task is done, through real servers, as the planner and as a
// worker whose token reads all but secret/plan.
func TestReadyWorkWaitsForWhatItDependsOn(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	planner := tokenAdd(t, dir, "planner", "--write", "*")
	worker := tokenAdd(t, dir, "worker", "--read", "research,infra", "--write", "tasks")
	s := startServer(t, serverOpts{dir: dir, agent: "planner", token: planner})
	w := startServer(t, serverOpts{dir: dir, agent: "worker", token: worker})

	version := map[string]int{}
	note := func(key, kind string) {
		version[key] = s.write(map[string]any{"uri": key, "digest": key, "body": "to do", "kind": kind, "expect_version": 0}).Version
	}
	dependsOn := func(src string, dst ...string) {
		version[src] = s.link(src, "depends_on", dst...).Version
	}
	// Made in this order: open work is listed oldest first.
	for _, k := range []string{"tasks/a", "tasks/b", "tasks/c", "tasks/d1", "tasks/d2", "tasks/d3", "tasks/d4",
		"tasks/x", "tasks/y", "tasks/e", "tasks/f", "tasks/g"} {
		note(k, "task")
	}
	note("research/spec", "finding") // another topic, never claimed: no work
	note("infra/job", "task")        // another topic, claimed below: work
	note("secret/plan", "plan")      // the worker may not read it
	dependsOn("tasks/b", "tasks/a")
	dependsOn("tasks/c", "tasks/b")
	dependsOn("tasks/d2", "tasks/d1")
	dependsOn("tasks/d3", "tasks/d1")
	dependsOn("tasks/d4", "tasks/d2", "tasks/d3")
	dependsOn("tasks/x", "tasks/y")
	dependsOn("tasks/y", "tasks/x")
	dependsOn("tasks/e", "research/spec")
	dependsOn("tasks/f", "infra/job")
	dependsOn("tasks/g", "secret/plan")
	take := func(key string) {
		version[key] = s.write(map[string]any{"uri": key, "claim": "take", "expect_version": version[key]}).Version
	}
	done := func(key string) {
		take(key)
		version[key] = s.write(map[string]any{"uri": key, "claim": "done", "expect_version": version[key]}).Version
	}
	take("infra/job")

	offered := func(who *session) []string {
		t.Helper()
		res := who.call("list_keys", map[string]any{"topic": "tasks", "open": true, "order": "oldest", "mode": "ref", "limit": 100})
		var e envelope
		if err := json.Unmarshal([]byte(res.text), &e); err != nil {
			t.Fatalf("list_keys: %v: %s", err, res.text)
		}
		var keys []string
		for _, it := range e.Items {
			keys = append(keys, strings.TrimPrefix(it.URI, "bb://acme/"))
		}
		return keys
	}
	expect := func(after string, want ...string) {
		t.Helper()
		if got := offered(s); !slices.Equal(got, want) {
			t.Errorf("after %s, open work: %v; want %v", after, got, want)
		}
		// The worker may not read secret/plan: tasks/g waits for it, and
		// nothing else differs.
		want = slices.DeleteFunc(want, func(k string) bool { return k == "tasks/g" })
		if got := offered(w); !slices.Equal(got, want) {
			t.Errorf("after %s, open work for a token that may not read secret/plan: %v; want %v", after, got, want)
		}
	}
	expect("planning", "tasks/a", "tasks/d1", "tasks/e", "tasks/g")
	done("tasks/a")
	expect("a is done", "tasks/b", "tasks/d1", "tasks/e", "tasks/g")
	done("tasks/b")
	expect("b is done", "tasks/c", "tasks/d1", "tasks/e", "tasks/g")
	done("tasks/d1")
	expect("d1 is done", "tasks/c", "tasks/d2", "tasks/d3", "tasks/e", "tasks/g")
	done("tasks/d2")
	expect("d2 is done", "tasks/c", "tasks/d3", "tasks/e", "tasks/g")
	done("tasks/d3")
	expect("d3 is done", "tasks/c", "tasks/d4", "tasks/e", "tasks/g")
	done("infra/job")
	expect("infra/job is done", "tasks/c", "tasks/d4", "tasks/e", "tasks/f", "tasks/g")

	// health names the cycle that keeps x and y from ever being offered.
	out, _ := cliCommand(dir, "health").CombinedOutput()
	if !strings.Contains(string(out), "tasks/x -> tasks/y -> tasks/x") {
		t.Errorf("health does not name the cycle of x and y:\n%s", out)
	}
	s.closeClean()
	w.closeClean()
}
