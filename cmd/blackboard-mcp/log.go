package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
)

func runLog(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("log", stderr, &c)
	limit := fs.Int("n", 50, "show at most this many changes")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp log ADDRESS [-n N]\n\nShows who changed a note, when, and at which version, newest first.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("log takes one address")
	}
	w, err := c.open()
	if err != nil {
		return err
	}
	defer w.Close()
	entries, err := w.Log(pos[0], *limit)
	if err != nil {
		return err
	}
	for _, e := range entries {
		fmt.Fprintf(stdout, "%-5s %s  %s  %-12s %s\n", "v"+strconv.Itoa(e.Version), e.Commit[:7],
			e.Time.Format("2006-01-02 15:04:05Z"), e.Author, e.Subject)
	}
	return nil
}
