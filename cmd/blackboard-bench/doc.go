// Command blackboard-bench is a maintainer's tool, never part of the installed
// product: it measures blackboard-mcp's real write path (durable by default,
// as the SPEC's targets are stated), traces which of the project's files one
// write passes through in the engine (path, with internal/calltrace), and
// makes large workspaces to measure on.
// It prints plain text, one line per measurement, and never judges the
// numbers: targets belong to the people reading them.
//
// It is a binary of its own so that blackboard-mcp, the binary users install,
// neither offers its verbs nor links the fixtures that generate workspaces.
package main
