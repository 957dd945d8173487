package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

func runLs(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("ls", stderr, &c)
	kind := fs.String("kind", "", "only notes of this kind")
	byName := fs.Bool("name", false, "order by address instead of newest change first")
	limit := fs.Int("n", fsstore.DefaultListLimit, "show at most this many notes")
	since := fs.Int("since", 0, "only notes changed after this cursor")
	open := fs.Bool("open", false, "only the work no one holds a claim on and no one finished, oldest first")
	oldest := fs.Bool("oldest", false, "order by when each note first appeared, oldest first")
	asJSON := fs.Bool("json", false, "print what list_keys gives (digest mode, the largest budget)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp ls [TOPIC] [--kind K] [--name | --oldest] [--open] [-n N] [--since CURSOR] [--json]\n\nLists notes under a topic or topic prefix (all topics without one), newest change first.")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef("ls takes at most one topic")
	}
	if *byName && (*oldest || *open) {
		return cli.Usagef("--name orders by address; --oldest and --open by first appearance: give one")
	}
	opts := fsstore.ListOptions{Kind: *kind, ByName: *byName, Limit: *limit, Since: *since, Open: *open, Oldest: *oldest || *open}
	if len(pos) == 1 {
		opts.Topic = pos[0]
	}
	v, done, err := openView(ctx, &c, stderr, true)
	if err != nil {
		return err
	}
	defer done()
	if *asJSON {
		args := map[string]any{"topic": opts.Topic, "kind": opts.Kind, "limit": opts.Limit, "since": opts.Since,
			"mode": "digest", "budget_tokens": tools.MaxBudget}
		switch {
		case opts.ByName:
			args["order"] = "name"
		case opts.Oldest:
			args["order"] = "oldest"
		}
		if opts.Open {
			args["open"] = true
		}
		return printTool(ctx, v.Workspace(), stdout, "list_keys", args)
	}
	l, err := v.List(opts)
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
	if n.ClaimedBy != "" {
		s += "  [claimed by " + n.ClaimedBy + " until " + n.ClaimUntil + "]"
	}
	return s
}

// printTool prints what the tool name gives for args, run in this process
// as serve runs it.
func printTool(ctx context.Context, w *fsstore.Workspace, stdout io.Writer, name string, args map[string]any) error {
	srv := tools.NewServer(w, slog.New(slog.NewTextHandler(io.Discard, nil)), version)
	text, err := srv.CallTool(ctx, name, args)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, text)
	return err
}
