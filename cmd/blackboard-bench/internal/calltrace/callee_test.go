package calltrace_test

import "github.com/blackboard-mcp/blackboard-mcp/cmd/blackboard-bench/internal/calltrace"

// callee is in a file of its own: a call to it is a switch of files.
func callee() {
	defer calltrace.Enter()()
}
