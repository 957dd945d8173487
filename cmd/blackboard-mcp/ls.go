package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

func runLs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("ls", stderr, &c)
	kind := fs.String("kind", "", "only notes of this kind")
	byName := fs.Bool("name", false, "order by address instead of newest change first")
	limit := fs.Int("n", fsstore.DefaultListLimit, "show at most this many notes")
	since := fs.Int("since", 0, "only notes changed after this cursor")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp ls [TOPIC] [--kind K] [--name] [-n N] [--since CURSOR]\n\nLists notes under a topic or topic prefix (all topics without one), newest change first.")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef("ls takes at most one topic")
	}
	opts := fsstore.ListOptions{Kind: *kind, ByName: *byName, Limit: *limit, Since: *since}
	if len(pos) == 1 {
		opts.Topic = pos[0]
	}
	w, err := c.OpenToRead(ctx, agentName())
	if err != nil {
		return err
	}
	defer w.Close()
	l, err := asAgent(w).List(opts)
	if err != nil {
		return err
	}
	for _, n := range l.Notes {
		fmt.Fprintf(stdout, "%-5s %-10s %s  %s\n", "v"+strconv.Itoa(n.Version), n.Kind, n.URI, oneLine(n))
	}
	if l.Omitted > 0 {
		fmt.Fprintf(stdout, "(%d more; -n to show more)\n", l.Omitted)
	}
	fmt.Fprintf(stderr, "cursor %d\n", l.Cursor)
	return nil
}

// oneLine is a note's digest, or what is wrong with it.
func oneLine(n fsstore.Summary) string {
	if n.Problem != "" {
		return "(unreadable: " + n.Problem + ")"
	}
	s := n.Digest
	if len(n.SupersededBy) > 0 {
		s += "  [superseded]"
	}
	return s
}
