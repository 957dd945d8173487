// Package health diagnoses a workspace for the operator: the repository and
// its recent objects, git's lock files, a write a killed process left
// half-done, notes changed or staged but not committed, unreadable front
// matter and missing or orphan blobs, the derived index against git, and the
// access file. Every finding says what is wrong and how to fix it.
//
// It sits outside the engine and only reads: it opens a workspace through
// fsstore and looks at it through the small read-only surface it declares
// (Workspace), and never takes the write lock. Only cmd imports it; checks
// that belong to other packages (the MCP tool surface) are cmd's to add to a
// Report.
package health
