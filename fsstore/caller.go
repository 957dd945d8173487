package fsstore

import (
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
)

// Caller is who is asking: the author of its writes, and the topics it may
// read and write. Every read and write of a View is scoped by it, in the
// core: nothing outside the caller's topics is listed, searched, read,
// linked or written, and no error, omitted list, link or count reveals that
// it exists.
type Caller struct {
	Name        string
	read, write access.Scope
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

// CanRead reports whether the caller may see the note key (topic/key...).
func (c *Caller) CanRead(key string) bool { return c.read.Allows(key) }

// CanWrite reports whether the caller may write the note key.
func (c *Caller) CanWrite(key string) bool { return c.write.Allows(key) }

// View is the board as one caller sees it.
type View struct {
	w *Workspace
	c *Caller
}

// As returns the board as caller sees it.
func (w *Workspace) As(c *Caller) *View { return &View{w: w, c: c} }

// open is the unrestricted view the workspace's own methods use: the board
// in open mode, authored by the workspace's agent.
func (w *Workspace) open() *View { return w.As(OpenCaller(w.agent)) }

// The workspace's methods are its open view's.

// Update writes a note; see View.Update.
func (w *Workspace) Update(req UpdateRequest) (*UpdateResult, error) { return w.open().Update(req) }

// Link adds typed links; see View.Link.
func (w *Workspace) Link(src, rel string, dsts []string, agent string) (*UpdateResult, error) {
	v := w.open()
	if agent != "" {
		v.c.Name = agent
	}
	return v.Link(src, rel, dsts)
}

// Get reads one note; see View.Get.
func (w *Workspace) Get(uri string, withContent bool) (*NoteView, error) {
	return w.open().Get(uri, withContent)
}

// Log lists a note's commits; see View.Log.
func (w *Workspace) Log(uri string, limit int) ([]LogEntry, error) { return w.open().Log(uri, limit) }

// List lists notes; see View.List.
func (w *Workspace) List(opts ListOptions) (*Listing, error) { return w.open().List(opts) }

// Summaries reads many notes' summaries; see View.Summaries.
func (w *Workspace) Summaries(uris []string) ([]SummaryResult, int, error) {
	return w.open().Summaries(uris)
}

// Search finds notes; see View.Search.
func (w *Workspace) Search(q, topic string, limit int) ([]Hit, int, error) {
	return w.open().Search(q, topic, limit)
}

// readable keeps the addresses (canonical or short) the caller may read.
func (v *View) readable(uris []string) []string {
	var out []string
	for _, u := range uris {
		if a, err := ParseAddress(u, v.w.name); err == nil && v.c.CanRead(a.Short()) {
			out = append(out, u)
		}
	}
	return out
}
