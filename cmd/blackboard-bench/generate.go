package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// runGenerate makes a large workspace to measure on, built by
// fixtures.Generate, and says how long that took.
func runGenerate(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("generate", stderr, nil)
	var opts fixtures.Options
	fs.IntVar(&opts.Notes, "notes", 1000, "distinct notes")
	fs.IntVar(&opts.Commits, "commits", 0, "note commits after the init commit, at least --notes (default: --notes)")
	fs.IntVar(&opts.Topics, "topics", 0, "topics the notes spread over (default 12)")
	fs.Uint64Var(&opts.Seed, "seed", 1, "seed of names, text, authors and times: equal flags give an identical history")
	fs.StringVar(&opts.Workspace, "name", "", "workspace name (default: the directory's name)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("generate takes one directory")
	}
	start := time.Now()
	if err := fixtures.Generate(pos[0], opts); err != nil {
		return err
	}
	commits := opts.Commits
	if commits == 0 {
		commits = opts.Notes
	}
	fmt.Fprintf(stdout, "generate notes=%d commits=%d history=%d took=%s dir=%s\n",
		opts.Notes, commits, commits+1, seconds(time.Since(start)), pos[0])
	return nil
}
