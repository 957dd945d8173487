package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"
)

// A person's page of the board (blackboard-mcp view) holds an event stream
// and, whenever the branch moves, fetches its main part again. The bench
// opens such pages while the writers write, to see what they cost the
// writes and that every page ends on the board as it is.

// viewServer is one `blackboard-mcp view` process.
type viewServer struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT, without the final /
}

// startView runs binary's view on dir on a free loopback port.
func startView(ctx context.Context, binary, dir string) (*viewServer, error) {
	cmd := exec.CommandContext(ctx, binary, "view", "--dir", dir, "--http", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err == nil && !strings.HasPrefix(line, "http://") {
		err = fmt.Errorf("it printed %q, not its URL", line)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("%s view: %w", binary, err)
	}
	return &viewServer{cmd: cmd, base: strings.TrimSuffix(strings.TrimSpace(line), "/")}, nil
}

func (v *viewServer) close() {
	_ = v.cmd.Process.Kill()
	_ = v.cmd.Wait()
}

// boardCursor is the cursor the board's page shows.
var boardCursor = regexp.MustCompile(`cursor (\d+)`)

// cursor asks the page for the board's cursor now.
func (v *viewServer) cursor(ctx context.Context) (string, error) {
	main, err := fetchMain(ctx, v.base+"/")
	if err != nil {
		return "", err
	}
	m := boardCursor.FindStringSubmatch(main)
	if m == nil {
		return "", fmt.Errorf("the board's page shows no cursor:\n%s", main)
	}
	return m[1], nil
}

// fetchMain fetches a page's main part, as its live update does.
func fetchMain(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Part", "main")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// openPages are pages of the board held open.
type openPages struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pages  []*openPage
}

// openPage is one: what it shows, and how often it fetched it.
type openPage struct {
	mu      sync.Mutex
	shows   string
	moves   int
	fetches int
	err     error
}

// openBoardPages opens n pages of the board on v, each with its event
// stream, and returns once every stream is open.
func openBoardPages(ctx context.Context, v *viewServer, n int) (*openPages, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := &openPages{cancel: cancel}
	opened := make(chan error, n)
	for range n {
		pg := &openPage{}
		p.pages = append(p.pages, pg)
		p.wg.Go(func() { pg.follow(ctx, v.base, opened) })
	}
	for range n {
		if err := <-opened; err != nil {
			p.close()
			return nil, err
		}
	}
	return p, nil
}

// follow is the page's script: on each move, fetch the main part again,
// one fetch at a time, and once more when the board moved during one.
func (pg *openPage) follow(ctx context.Context, base string, opened chan<- error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	if err != nil {
		opened <- err
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		opened <- err
		return
	}
	defer resp.Body.Close()
	opened <- nil
	moved := make(chan struct{}, 1)
	go func() {
		for range moved {
			main, err := fetchMain(ctx, base+"/")
			pg.mu.Lock()
			pg.fetches++
			if err == nil {
				pg.shows = main
			} else if ctx.Err() == nil {
				pg.err = err
			}
			pg.mu.Unlock()
		}
	}()
	defer close(moved)
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if lines.Text() != "event: moved" {
			continue
		}
		pg.mu.Lock()
		pg.moves++
		pg.mu.Unlock()
		select {
		case moved <- struct{}{}:
		default: // a fetch is due already
		}
	}
}

func (p *openPages) close() {
	p.cancel()
	p.wg.Wait()
}

// converge waits until every page shows the board at cursor, at most
// within, and says how long that took.
func (p *openPages) converge(cursor string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	want := "cursor " + cursor + "<"
	for {
		behind := 0
		for _, pg := range p.pages {
			pg.mu.Lock()
			if pg.err != nil {
				pg.mu.Unlock()
				return 0, pg.err
			}
			if !strings.Contains(pg.shows, want) {
				behind++
			}
			pg.mu.Unlock()
		}
		if behind == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > within {
			return 0, fmt.Errorf("%d of %d open pages do not show cursor %s %v after the last write", behind, len(p.pages), cursor, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// counts sums what the pages saw: moves announced and fetches made.
func (p *openPages) counts() (moves, fetches int) {
	for _, pg := range p.pages {
		pg.mu.Lock()
		moves += pg.moves
		fetches += pg.fetches
		pg.mu.Unlock()
	}
	return moves, fetches
}

// writeBesidePages makes runs of writes by procs worker processes,
// alternately without and with n pages of the board open on a view of
// binary, and prints each run's figures, and the writes with the pages
// against those without. After each run with pages, every page must show
// the board as the last write left it. It returns every run's results:
// acknowledged writes count, whatever failed.
func writeBesidePages(ctx context.Context, stdout io.Writer, dir string, noSync bool, binary string,
	notes []string, procs, writes, n, runs int, label string) ([]result, error) {
	binary, err := serverBinary(binary)
	if err != nil {
		return nil, err
	}
	view, err := startView(ctx, binary, dir)
	if err != nil {
		return nil, err
	}
	defer view.close()
	var all []result
	var without, with result
	for run := range runs {
		open := run%2 == 1
		var pages *openPages
		if open {
			if pages, err = openBoardPages(ctx, view, n); err != nil {
				return all, err
			}
		}
		results, err := runWorkers(ctx, dir, noSync, notes, procs, run*writes, writes)
		all = append(all, results...)
		var this result
		for _, r := range results {
			this.add(r)
		}
		if open {
			with.addRound(this)
		} else {
			without.addRound(this)
		}
		if err != nil {
			if pages != nil {
				pages.close()
			}
			return all, err
		}
		what := "pages=0"
		if open {
			cursor, err := view.cursor(ctx)
			if err == nil {
				var took time.Duration
				took, err = pages.converge(cursor, 10*time.Second)
				moves, fetches := pages.counts()
				what = fmt.Sprintf("pages=%d converged=%s moves=%d fetches=%d", n, millis(took), moves, fetches)
			}
			pages.close()
			if err != nil {
				return all, err
			}
		}
		fmt.Fprintf(stdout, "run=%d procs=%d %s %s %s\n", run+1, procs, what, label, this.stats())
	}
	if len(without.lat) > 0 && len(with.lat) > 0 {
		fmt.Fprintf(stdout, "pages=%d/none rate=%.2fx p50=%.2fx p99=%.2fx\n", n, with.rate()/without.rate(),
			float64(with.quantile(0.50))/float64(without.quantile(0.50)), float64(with.quantile(0.99))/float64(without.quantile(0.99)))
	}
	return all, nil
}
