package web

import (
	"fmt"
	"net/http"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// events streams "moved" with the board's cursor whenever the branch moves
// (an agent's write from any process, a person's commit, a pull): the page
// then fetches its main part again. A comment every 15 seconds keeps
// proxies from closing an idle stream; the browser reconnects by itself
// after a restart.
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
	flusher.Flush()
	last, _ := s.ws.Repo().Head()
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		head, err := s.ws.Repo().Head()
		switch {
		case err == nil && head != last:
			last = head
			cursor, _ := s.ws.Cursor()
			fmt.Fprintf(w, "event: moved\ndata: %d\n\n", cursor)
		case time.Since(quiet) > 15*time.Second:
			fmt.Fprint(w, ": still here\n\n")
		default:
			continue
		}
		quiet = time.Now()
		flusher.Flush()
	}
}
