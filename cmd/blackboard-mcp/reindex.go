package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

func runReindex(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("reindex", stderr, &c)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp reindex\n\nRebuilds the derived index (.blackboard/index.db) from git. Other processes keep\nreading the old index until the new one is complete.")
		fs.PrintDefaults()
	}
	if _, err := cli.Parse(fs, args); err != nil {
		return err
	}
	w, err := c.Open(agentName())
	if err != nil {
		return err
	}
	defer w.Close()
	start := time.Now()
	bar := newProgressBar(stderr)
	seq, err := w.Reindex(bar.update)
	bar.finish()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "reindexed %d commits in %s\n", seq, time.Since(start).Round(time.Millisecond))
	return nil
}

// progressBar draws one updating line on a terminal, and nothing when the
// output is a file or a pipe.
type progressBar struct {
	out  io.Writer
	tty  bool
	last time.Time
	drew bool
}

func newProgressBar(out io.Writer) *progressBar {
	b := &progressBar{out: out}
	if f, ok := out.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			b.tty = true
		}
	}
	return b
}

func (b *progressBar) update(stage string, done, total int) {
	if !b.tty || time.Since(b.last) < 100*time.Millisecond {
		return
	}
	b.last, b.drew = time.Now(), true
	if total <= 0 {
		fmt.Fprintf(b.out, "\rreading %-8s %9d           ", stage, done)
		return
	}
	const width = 30
	filled := width * done / total
	fmt.Fprintf(b.out, "\rindexing %-8s [%s%s] %d/%d ", stage, strings.Repeat("#", filled),
		strings.Repeat(".", width-filled), done, total)
}

func (b *progressBar) finish() {
	if b.drew {
		fmt.Fprint(b.out, "\r\033[K")
	}
}
