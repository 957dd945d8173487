package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

func runLink(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("link", stderr, &c)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: blackboard-mcp link SRC REL DST...\n\nRecords typed links from SRC to each DST, in SRC's front matter, as one commit.\nREL is one of %s.\n", strings.Join(note.Relations, ", "))
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 3 {
		return cli.Usagef("link takes SRC REL DST...")
	}
	v, done, err := openView(ctx, &c, stderr, false)
	if err != nil {
		return err
	}
	defer done()
	res, err := v.Link(pos[0], pos[1], pos[2:])
	if err != nil {
		return err
	}
	printWrite(stdout, stderr, res)
	return nil
}
