package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

func runLog(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("log", stderr, &c)
	limit := fs.Int("n", 50, "show at most this many changes")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: blackboard-mcp log ADDRESS [-n N] [--json]

Shows a note's provenance, newest first: each version, its commit, when and
by whom (an agent, or a person's edit or git commit), the version it came
from, and the digest it had after the change.`)
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("log takes one address")
	}
	v, done, err := openView(ctx, &c, stderr, true)
	if err != nil {
		return err
	}
	defer done()
	entries, err := v.Log(pos[0], *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		_, err := fmt.Fprintln(stdout, tools.LogJSON(entries))
		return err
	}
	for i, e := range entries {
		var older *fsstore.LogEntry
		if i+1 < len(entries) {
			older = &entries[i+1]
		}
		line := fmt.Sprintf("%-5s %s  %s  %-12s %s", "v"+strconv.Itoa(e.Version), e.Commit[:7],
			e.Time.Format("2006-01-02 15:04:05Z"), e.Author, describeChange(e, older))
		if !e.ByProgram {
			// A person's own git commit: their message tells why.
			line += fmt.Sprintf("  (commit: %q)", e.Subject)
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// describeChange says what a version is: where it came from and its digest.
func describeChange(e fsstore.LogEntry, older *fsstore.LogEntry) string {
	var s string
	switch {
	case e.Deleted:
		return "deleted"
	case e.MovedFrom != "":
		s = "moved from " + e.MovedFrom
	case e.Version == 1 || older != nil && older.Deleted:
		s = "created"
	default:
		s = "from v" + strconv.Itoa(e.Version-1)
	}
	if e.SameAs > 0 {
		s += fmt.Sprintf(", content of v%d", e.SameAs)
	}
	if e.Digest == "" {
		return s + ", no readable digest"
	}
	return s + ": " + e.Digest
}
