package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"
)

// Progress is one line on a terminal that says what a command is doing:
// drawn once the command has run for progressAfter, redrawn as it goes, and
// cleared when it is done. Nothing is drawn when stderr is a file or a
// pipe, so scripts and --json output never see it.
type Progress struct {
	out   io.Writer
	verb  string
	start time.Time

	mu    sync.Mutex
	stage string
	drawn bool

	stop, done chan struct{}
}

const (
	progressAfter = time.Second
	progressEvery = 250 * time.Millisecond
)

// StartProgress starts the line of verb on stderr, when stderr is a
// terminal; the line is nil otherwise, and a nil line does nothing.
func StartProgress(stderr io.Writer, verb string) *Progress {
	if !IsTerminal(stderr) {
		return nil
	}
	p := &Progress{out: stderr, verb: verb, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *Progress) run() {
	defer close(p.done)
	wait := time.NewTimer(progressAfter)
	defer wait.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-wait.C:
		}
		p.mu.Lock()
		line := p.verb + ": working"
		if p.stage != "" {
			line = p.verb + ": " + p.stage
		}
		fmt.Fprintf(p.out, "\r\033[K%s (%.0f s)", line, time.Since(p.start).Seconds())
		p.drawn = true
		p.mu.Unlock()
		wait.Reset(progressEvery)
	}
}

// Stage says what the command does now.
func (p *Progress) Stage(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stage = what
	p.mu.Unlock()
}

// Stop clears the line.
func (p *Progress) Stop() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	if p.drawn {
		fmt.Fprint(p.out, "\r\033[K")
	}
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type progressKey struct{}

// WithProgress wraps verb so that it draws a progress line (StartProgress)
// while it runs, unless its output is --json; the verb finds the line with
// ProgressOf to say what it does.
func WithProgress(name string, verb Verb) Verb {
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
		if slices.Contains(args, "--json") || slices.Contains(args, "-json") {
			return verb(ctx, args, stdin, stdout, stderr)
		}
		p := StartProgress(stderr, name)
		defer p.Stop()
		return verb(context.WithValue(ctx, progressKey{}, p), args, stdin, stdout, stderr)
	}
}

// ProgressOf is the progress line of ctx's command, or nil.
func ProgressOf(ctx context.Context) *Progress {
	p, _ := ctx.Value(progressKey{}).(*Progress)
	return p
}
