package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/importer"
)

// importAuthor is who the notes an import writes are by, unless
// BLACKBOARD_AGENT says otherwise.
const importAuthor = "importer"

func runImport(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("import", stderr, &c)
	topic := fs.String("topic", "", "the topic the notes go under (default: memory for a memory.jsonl, the folders' names for Markdown)")
	dryRun := fs.Bool("dry-run", false, "say what would be written, write nothing")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: blackboard-mcp import SOURCE [--topic T] [--dry-run] [flags]

Brings notes from another memory tool onto the board, one commit per note:
  SOURCE a .jsonl file   the reference MCP memory server's memory.jsonl: an entity
                         becomes <topic>/<type>/<name>, its first observation the
                         digest, the others the body; relations become links
  SOURCE a folder        Markdown notes with front matter (basic-memory, Obsidian):
                         the path is the address, title or first line the digest,
                         every other field kept
Importing again writes only what changed. What could not be mapped is listed.`)
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("import takes one source: a memory.jsonl or a folder of Markdown notes")
	}
	src := pos[0]
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	var plan *importer.Plan
	switch {
	case fi.IsDir():
		plan, err = importer.Markdown(src, *topic)
	default:
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		t := *topic
		if t == "" {
			t = "memory"
		}
		plan, err = importer.Memory(f, t)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
	}
	if err != nil {
		return err
	}
	if *dryRun {
		for _, n := range plan.Notes {
			fmt.Fprintf(stdout, "%s\t%s\n", n.Key, n.Digest)
		}
		reportUnmapped(stdout, plan)
		return nil
	}
	author := os.Getenv("BLACKBOARD_AGENT")
	if author == "" {
		author = importAuthor
	}
	w, err := c.Open(author)
	if err != nil {
		return err
	}
	defer w.Close()
	report := importer.Apply(w.As(fsstore.OpenCaller(author)), plan, func(done, total int, n importer.Note) {
		if done%50 == 0 || done == total {
			fmt.Fprintf(stderr, "import: %d/%d notes\n", done, total)
		}
	})
	fmt.Fprintf(stdout, "imported %d notes from %s: %d written, %d unchanged, %d links\n",
		len(plan.Notes)-len(report.Failed), src, report.Written, report.Unchanged, report.Links)
	reportUnmapped(stdout, plan)
	if len(report.Failed) > 0 {
		return fmt.Errorf("%d notes could not be written:\n  %s", len(report.Failed), strings.Join(report.Failed, "\n  "))
	}
	return nil
}

// reportUnmapped lists what the board has no place for.
func reportUnmapped(stdout io.Writer, plan *importer.Plan) {
	if len(plan.Unmapped) == 0 {
		return
	}
	fmt.Fprintf(stdout, "not mapped (%d):\n", len(plan.Unmapped))
	for _, u := range plan.Unmapped {
		fmt.Fprintln(stdout, "  "+u)
	}
}
