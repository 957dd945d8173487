package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

func runInit(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("init", stderr, &c)
	name := fs.String("name", "", "workspace name used in bb:// addresses (default: the directory's name)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp init [DIR] [--name NAME]\n\nMakes DIR (default: --dir, $BLACKBOARD_DIR or .) a workspace: a git repository,\n.blackboard/ and the note run/state/current, in one commit. Running it again changes nothing.")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return cli.Usagef("init takes at most one directory")
	}
	dir := c.Dir()
	if len(pos) == 1 {
		dir = pos[0]
	}
	if err := fsstore.Init(dir, *name); err != nil {
		return err
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: c.NoSync})
	if err != nil {
		return err
	}
	defer w.Close()
	abs, _ := filepath.Abs(dir)
	fmt.Fprintf(stdout, "workspace %s ready in %s (read bb://%s/%s first)\n", w.Name(), abs, w.Name(), note.StateNote)
	return nil
}
