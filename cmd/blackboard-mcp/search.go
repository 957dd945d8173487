package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

func runSearch(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("search", stderr, &c)
	topic := fs.String("topic", "", "only notes under this topic or topic prefix")
	limit := fs.Int("n", 10, "show at most this many results")
	asJSON := fs.Bool("json", false, "print what search_keys gives")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp search QUERY... [--topic T] [-n N] [--json]\n\nFull-text search over digests, bodies, fields and addresses: words, \"phrases\", prefix*.\nAn exact identifier (deploy-v2.4.7-hotfix, ERR_CONN_RESET) finds its note first.")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return cli.Usagef("search needs a query")
	}
	v, done, err := openView(ctx, &c, stderr, true)
	if err != nil {
		return err
	}
	defer done()
	if *asJSON {
		return printTool(ctx, v.Workspace(), stdout, "search_keys", map[string]any{"q": strings.Join(pos, " "), "topic": *topic, "limit": *limit})
	}
	hits, _, err := v.Search(strings.Join(pos, " "), *topic, *limit)
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		fmt.Fprintln(stderr, "nothing on the board matches")
		return nil
	}
	for _, h := range hits {
		fmt.Fprintf(stdout, "%6.2f  %s  %s\n", h.Score, h.URI, h.Digest)
	}
	return nil
}
