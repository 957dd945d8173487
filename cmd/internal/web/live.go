package web

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// moves tells the open event streams when the branch moved: one look at
// the branch every poll for all of them, made only while one is open.
type moves struct {
	mu      sync.Mutex
	streams int
	stop    chan struct{} // ends the look, once no stream is open
	next    chan struct{} // closed at the next move, then replaced
	cursor  int           // the board's cursor after the last move
}

// join counts an open stream, starting the look with the first.
func (s *Server) join() {
	m := &s.moves
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.streams++; m.streams == 1 {
		m.stop, m.next = make(chan struct{}), make(chan struct{})
		go s.look(m.stop)
	}
}

// leave counts a stream closed, ending the look with the last.
func (s *Server) leave() {
	m := &s.moves
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.streams--; m.streams == 0 {
		close(m.stop)
	}
}

// nextMove is closed when the branch next moves.
func (s *Server) nextMove() <-chan struct{} {
	s.moves.mu.Lock()
	defer s.moves.mu.Unlock()
	return s.moves.next
}

func (s *Server) look(stop <-chan struct{}) {
	last, _ := s.ws.BranchHead()
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	var lagging time.Time // since when the index has lagged the branch
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		head, err := s.ws.BranchHead()
		if err != nil || head == last {
			continue
		}
		// The board's cursor as the index has it: a writer brings the index
		// to its commit right after the branch, so the next look finds it
		// there. Only when no one has for a second does this look bring it,
		// as that queues behind the writers.
		indexed, cursor, err := s.ws.IndexHead()
		if err != nil {
			continue
		}
		if indexed != head {
			if lagging.IsZero() {
				lagging = time.Now()
			}
			if time.Since(lagging) < time.Second {
				continue
			}
			if cursor, err = s.ws.Cursor(); err != nil {
				continue
			}
		}
		lagging = time.Time{}
		last = head
		m := &s.moves
		m.mu.Lock()
		moved := m.next
		m.next, m.cursor = make(chan struct{}), cursor
		m.mu.Unlock()
		close(moved)
	}
}

// events streams "now" with the board's cursor, then "moved" with the new
// one whenever the branch moves (an agent's write from any process, a
// person's commit, a pull): the page then fetches its main part again. A
// comment every 15 seconds keeps proxies from closing an idle stream; the
// browser reconnects by itself after a restart.
func (s *Server) events(w http.ResponseWriter, r *http.Request, _ *fsstore.View) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	s.join()
	defer s.leave()
	// The cursor now, first: a page that reconnects (after a restart of
	// the server, or made before the stream opened) fetches its part again
	// when the board moved meanwhile.
	moved := s.nextMove()
	if cursor, err := s.ws.Cursor(); err == nil {
		fmt.Fprintf(w, "event: now\ndata: %d\n\n", cursor)
	}
	flusher.Flush()
	for ; ; moved = s.nextMove() {
		select {
		case <-r.Context().Done():
			return
		case <-moved:
			s.moves.mu.Lock()
			cursor := s.moves.cursor
			s.moves.mu.Unlock()
			fmt.Fprintf(w, "event: moved\ndata: %d\n\n", cursor)
		case <-time.After(15 * time.Second):
			fmt.Fprint(w, ": still here\n\n")
		}
		flusher.Flush()
	}
}
