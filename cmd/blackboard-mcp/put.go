package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

func runPut(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("put", stderr, &c)
	digest := fs.String("digest", "", "one line saying what the note holds (required)")
	body := fs.String("body", "", "the note's Markdown body (default: read from stdin)")
	expect := fs.String("expect", "", "the version you last saw; 0 to create. Without it the write is unconditional")
	appendText := fs.Bool("append", false, "append the body to the note instead of replacing it")
	kind := fs.String("kind", "", "the note's kind: finding, plan, decision... (default note)")
	confidence := fs.String("confidence", "", "how sure the author is, 0 to 1")
	var sources stringList
	fs.Var(&sources, "source", "an address the note is based on (repeatable)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp put ADDRESS --digest D [--body TEXT | < file] [--expect N] [flags]\n\nWrites a note as one git commit and prints its new version.")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("put takes one address")
	}
	content := *body
	if !flagSet(fs, "body") {
		if f, ok := stdin.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				return cli.Usagef("give the body with --body or on stdin (put ADDRESS --digest D < file)")
			}
		}
		b, err := io.ReadAll(io.LimitReader(stdin, note.MaxContentBytes+1))
		if err != nil {
			return err
		}
		content = string(b)
	}
	req := fsstore.UpdateRequest{URI: pos[0], Digest: *digest, Kind: *kind, Sources: sources}
	if *appendText {
		req.AppendText = &content
	} else {
		req.Body = &content
	}
	if *expect != "" {
		v, err := strconv.Atoi(*expect)
		if err != nil {
			return cli.Usagef("--expect takes a version number")
		}
		req.ExpectVersion = &v
	}
	if *confidence != "" {
		f, err := strconv.ParseFloat(*confidence, 64)
		if err != nil {
			return cli.Usagef("--confidence takes a number from 0 to 1")
		}
		req.Confidence = &f
	}
	v, done, err := openView(ctx, &c, stderr, false)
	if err != nil {
		return err
	}
	defer done()
	res, err := v.Update(req)
	if err != nil {
		return err
	}
	printWrite(stdout, stderr, res)
	return nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// printWrite tells what a write did: its address and new version on
// stdout, its warnings, and what did not finish past its commit point, on
// stderr.
func printWrite(stdout, stderr io.Writer, res *fsstore.UpdateResult) {
	fmt.Fprintf(stdout, "%s v%d\n", res.URI, res.Version)
	for _, warn := range res.Warnings {
		fmt.Fprintln(stderr, "warning: "+warn)
	}
	if res.Unfinished != nil {
		fmt.Fprintln(stderr, "blackboard-mcp: "+res.Unfinished.Error())
	}
}
