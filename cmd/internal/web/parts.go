package web

import (
	"bytes"
	"net/http"
	"sync"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// When the branch moves, every open page fetches its main part again
// (live.js): twenty pages of the board at one commit ask for the same part,
// and parts makes it once. A part is kept for the branch's commit it was
// made at and the reader it was made for, and forgotten when the branch
// moves on.
type parts struct {
	mu     sync.Mutex
	head   gitver.Hash              // the branch's commit the parts were made at
	made   map[string][]byte        // reader and request URI: the part
	making map[string]chan struct{} // closed when the part is made
}

// partsKept bounds the parts kept at one commit.
const partsKept = 256

// servePart answers a live update's request for a page's main part from
// what was made at the branch's commit for the same reader, or makes it
// with h and keeps it.
func (s *Server) servePart(w http.ResponseWriter, r *http.Request, reader string, h http.Handler) {
	// The branch's commit, not the board's cursor: asking for the cursor
	// would catch the index up first, twenty times, in the writers' way.
	// The part made is of the branch at least as new.
	head, err := s.ws.BranchHead()
	if err != nil {
		h.ServeHTTP(w, r)
		return
	}
	key := reader + "\x00" + r.URL.RequestURI()
	p := &s.parts
	p.mu.Lock()
	if p.head != head {
		p.head, p.made, p.making = head, map[string][]byte{}, map[string]chan struct{}{}
	}
	// The twenty pages ask at once: one makes the part, the others wait
	// for it.
	for {
		if part, ok := p.made[key]; ok {
			p.mu.Unlock()
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(part)
			return
		}
		making, busy := p.making[key]
		if !busy {
			break
		}
		p.mu.Unlock()
		<-making
		p.mu.Lock()
		if p.head != head {
			// The branch moved meanwhile: this page gets a part of its
			// own, and the next move's fetch one of the new commit.
			p.mu.Unlock()
			h.ServeHTTP(w, r)
			return
		}
	}
	done := make(chan struct{})
	p.making[key] = done
	p.mu.Unlock()
	rec := &recorded{header: http.Header{}, status: http.StatusOK}
	h.ServeHTTP(rec, r)
	p.mu.Lock()
	if p.head == head {
		delete(p.making, key)
		if rec.status == http.StatusOK && len(p.made) < partsKept {
			p.made[key] = rec.body.Bytes()
		}
	}
	p.mu.Unlock()
	close(done)
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.status)
	_, _ = w.Write(rec.body.Bytes())
}

// recorded is a response kept to be sent and reused.
type recorded struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorded) Header() http.Header         { return r.header }
func (r *recorded) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorded) WriteHeader(status int)      { r.status = status }
