package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

func runGet(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("get", stderr, &c)
	full := fs.Bool("full", false, "print the body (or table) too")
	asJSON := fs.Bool("json", false, "print the note as get_state's JSON gives it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp get ADDRESS[@N] [--full] [--json]\n\nPrints a note's version, digest and fields; --full adds its content.\nADDRESS@N prints version N as the commit that made it left the note.")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("get takes one address")
	}
	v, done, err := openView(ctx, &c, stderr, true)
	if err != nil {
		return err
	}
	defer done()
	n, err := v.Get(pos[0], *full)
	if err != nil {
		return err
	}
	if *asJSON {
		// The shape get_state gives, so a script and an agent read one format.
		_, err := fmt.Fprintln(stdout, tools.NoteJSON(n, *full))
		return err
	}
	fmt.Fprintf(stdout, "%s v%d\n", n.URI, n.Version)
	if n.Commit != "" {
		fmt.Fprintf(stdout, "commit: %s\n", n.Commit)
	}
	if n.Problem != "" {
		fmt.Fprintf(stdout, "problem: %s\n", n.Problem)
		return nil
	}
	fmt.Fprintf(stdout, "digest: %s\nkind: %s\n", n.Digest, n.Kind)
	if n.Author != "" {
		fmt.Fprintf(stdout, "author: %s\n", n.Author)
	}
	if n.Updated != "" {
		fmt.Fprintf(stdout, "updated: %s\n", n.Updated)
	}
	if n.Confidence != nil {
		fmt.Fprintf(stdout, "confidence: %s\n", fsstore.FormatConfidence(*n.Confidence))
	}
	if len(n.Sources) > 0 {
		fmt.Fprintf(stdout, "sources: %s\n", strings.Join(n.Sources, " "))
	}
	for _, rel := range note.Relations {
		if t := n.Links[rel]; len(t) > 0 {
			fmt.Fprintf(stdout, "%s: %s\n", rel, strings.Join(t, " "))
		}
	}
	if len(n.SupersededBy) > 0 {
		fmt.Fprintf(stdout, "superseded by: %s\n", strings.Join(n.SupersededBy, " "))
	}
	if len(n.ContradictedBy) > 0 {
		fmt.Fprintf(stdout, "contradicted by: %s\n", strings.Join(n.ContradictedBy, " "))
	}
	fmt.Fprintf(stdout, "bytes: %d (about %d tokens)\n", n.Bytes, n.EstTokens)
	if *full {
		fmt.Fprintf(stdout, "\n%s", n.Content)
		if n.Content != "" && !strings.HasSuffix(n.Content, "\n") {
			fmt.Fprintln(stdout)
		}
	}
	return nil
}
