// Package fsstore is the board's engine: the workspace on disk, and the one
// write path every change goes through: the workspace's write lock (a file
// lock across processes), compare-and-swap against git's history, a journal
// that makes every step of a write recoverable, git's index kept in step,
// and the derived index (fsstore/index) caught up with whoever moved the
// branch. Callers read and write through a View, the board as one caller
// (an agent with its topics, or the CLI) sees it: ws.As(caller).
//
// People are writers too: what they change in the work tree with their
// editor is found (Workspace.Watch, with fsstore/watch; before writes; at
// start) and committed as their own version through that same path. What
// they do with git beside the agents is repaired before every write
// (repair.go): a reset that raced a write (rescue.go), files a checkout left
// older than the branch or carried onto another (unplaced.go), text written
// into a file a write replaced (displaced.go).
//
// The board's format (addresses, note files, tables, commit messages) is
// fsstore/note's; fsstore knows git only through gitver, and knows nothing
// of MCP (tools adapts it) or of diagnosis (fsstore/health reads it from
// outside); cmd wires them together.
package fsstore
