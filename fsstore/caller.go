package fsstore

import (
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
)

// Caller is who is asking: the author of its writes, and the topics it may
// read and write. Every read and write of a View is scoped by it, in the
// core: nothing outside the caller's topics is listed, searched, read,
// linked or written, and no error, omitted list, link or count reveals that
// it exists.
type Caller struct {
	Name        string
	read, write access.Scope
	// sources are the files source_path may read, when the caller's
	// process is not the engine's (ReadingFrom); nil for the workspace's.
	sources *sourceFiles
	// person: a person writes, from the page, not an agent. Their commits
	// say so (note.Message.Person), and they may release, finish or hand
	// on a claim that an agent holds (setClaim).
	person bool
}

// OpenCaller may do everything: the board without an access file.
func OpenCaller(name string) *Caller {
	return &Caller{Name: name, read: access.Scope{All: true}, write: access.Scope{All: true}}
}

// NoCaller may do nothing: what an unauthenticated call sees.
func NoCaller() *Caller { return &Caller{Name: "nobody"} }

// AgentCaller is an agent of the access file, with its topics. An agent may
// read what it may write.
func AgentCaller(a *access.Agent) *Caller {
	readable := append(append([]string{}, a.Read...), a.Write...)
	return &Caller{Name: a.Name, read: access.NewScope(readable), write: access.NewScope(a.Write)}
}

// ReadingFrom is the caller whose source_path is read as its own process
// would: relative to its directory dir, from the workspace's parent and
// roots. A relay's agent runs in a process other than the engine's.
func (c *Caller) ReadingFrom(board, dir string, roots []string) *Caller {
	r := *c
	r.sources = &sourceFiles{dir: dir, roots: resolveRoots(append(defaultSourceRoots(board), roots...))}
	return &r
}

// AsPerson is the caller as a person acting through the page: the same
// name and topics, its writes marked as a person's.
func (c *Caller) AsPerson() *Caller {
	p := *c
	p.person = true
	return &p
}

// CanRead reports whether the caller may see the note key (topic/key...).
func (c *Caller) CanRead(key string) bool { return c.read.Allows(key) }

// ReadsAll reports whether the caller may read every topic: nothing on the
// board is hidden from it.
func (c *Caller) ReadsAll() bool { return c.read.All }

// CanWrite reports whether the caller may write the note key.
func (c *Caller) CanWrite(key string) bool { return c.write.Allows(key) }

// WritesUnder reports whether the caller may write some note under the
// topic prefix ("" for anywhere on the board).
func (c *Caller) WritesUnder(prefix string) bool { return c.write.Reaches(prefix) }

// View is the board as one caller sees it: the one way to read and write
// notes. Writes are authored by the caller's name. A server makes one for
// each call, which records how its reads answered (Indexing).
type View struct {
	w *Workspace
	c *Caller
	// partial is how far the build of the index had come when a read of
	// this view answered as far as it had come, or from git (Indexing).
	partial *catchup.Status
	// fromGitUntil ends the time this view's reads spend counting notes'
	// versions from git while the index is being built (noteFromGit).
	fromGitUntil time.Time
	// writeID is the id a relay gave this call's write (retry.go), and
	// retried says the relay sent it again.
	writeID string
	retried bool
}

// Workspace is the board the view sees.
func (v *View) Workspace() *Workspace { return v.w }

// readable keeps the addresses (canonical or short) the caller may read.
func (v *View) readable(uris []string) []string {
	var out []string
	for _, u := range uris {
		if a, err := v.w.reader.parseAddress(u); err == nil && v.c.CanRead(a.Short()) {
			out = append(out, u)
		}
	}
	return out
}

// MayWriteUnder reports whether the caller may write some note under the
// topic prefix ("" for anywhere): where a page offers a new note.
func (v *View) MayWriteUnder(prefix string) bool { return v.c.WritesUnder(prefix) }

// MayWrite reports whether the caller may write the note at uri (a full or
// short address): what a page offers write controls for.
func (v *View) MayWrite(uri string) bool {
	a, err := v.w.reader.parseAddress(uri)
	return err == nil && v.c.CanWrite(a.Short())
}
