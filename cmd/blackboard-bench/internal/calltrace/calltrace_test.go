package calltrace_test

import (
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/blackboard-bench/internal/calltrace"
)

// caller is instrumented as path instruments the module's functions; it
// calls callee, in another file, twice.
func caller() {
	defer calltrace.Enter()()
	callee()
	callee()
}

// TestRecord checks what a recording holds: each function entered with its
// file, each call by the caller's and the callee's file, and nothing from
// before Start or after Stop.
func TestRecord(t *testing.T) {
	caller() // not recording yet
	calltrace.Start()
	caller()
	r := calltrace.Stop()
	caller() // no longer recording
	funcs := map[string]int{}
	for _, f := range r.Funcs {
		funcs[f.File+" "+f.Name] = f.Count
	}
	const dir = "internal/calltrace/"
	for fn, want := range map[string]int{
		dir + "calltrace_test.go internal/calltrace_test.caller": 1,
		dir + "callee_test.go internal/calltrace_test.callee":    2,
	} {
		if funcs[fn] != want {
			t.Errorf("%s entered %d times, want %d (all: %v)", fn, funcs[fn], want, funcs)
		}
	}
	calls := map[[2]string]int{}
	for _, c := range r.Calls {
		calls[[2]string{c.From, c.To}] = c.Count
	}
	// caller's own caller, this test, is in its file too.
	for k, want := range map[[2]string]int{
		{dir + "calltrace_test.go", dir + "calltrace_test.go"}: 1,
		{dir + "calltrace_test.go", dir + "callee_test.go"}:    2,
	} {
		if calls[k] != want {
			t.Errorf("%s -> %s: %d calls, want %d (all: %v)", k[0], k[1], calls[k], want, calls)
		}
	}
	if len(calls) != 2 {
		t.Errorf("calls %v, want two pairs", calls)
	}
}
