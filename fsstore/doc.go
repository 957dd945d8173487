// Package fsstore is the board's domain: addresses, notes (Markdown with
// YAML front matter), blobs and tables, the workspace on disk, and the one
// write path every change goes through: the workspace's write lock (a file
// lock across processes), compare-and-swap against git's history, a
// journal that makes every step of a write recoverable, git's index kept in
// step, and the derived index (fsstore/index) caught up with whoever moved
// the branch.
//
// People are writers too: what they change in the work tree with their
// editor is found (Workspace.Watch, with fsstore/watch; before writes; at
// start) and committed as their own version through that same path.
//
// fsstore knows git only through gitver, and knows nothing of MCP: the
// tools package adapts it, and cmd wires them together.
package fsstore
