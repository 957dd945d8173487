package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

func runSearch(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("search", stderr, &c)
	topic := fs.String("topic", "", "only notes under this topic or topic prefix")
	limit := fs.Int("n", 10, "show at most this many results")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp search QUERY... [--topic T] [-n N]\n\nFull-text search over digests, bodies, fields and addresses: words, \"phrases\", prefix*.\nAn exact identifier (deploy-v2.4.7-hotfix, ERR_CONN_RESET) finds its note first.")
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("search needs a query")
	}
	w, err := c.open()
	if err != nil {
		return err
	}
	defer w.Close()
	hits, _, err := w.Search(strings.Join(pos, " "), *topic, *limit)
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

func runLink(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c commonFlags
	fs := newFlagSet("link", stderr, &c)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: blackboard-mcp link SRC REL DST...\n\nRecords typed links from SRC to each DST, in SRC's front matter, as one commit.\nREL is one of %s.\n", strings.Join(fsstore.Relations, ", "))
		fs.PrintDefaults()
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 3 {
		return usagef("link takes SRC REL DST...")
	}
	w, err := c.open()
	if err != nil {
		return err
	}
	defer w.Close()
	res, err := w.Link(pos[0], pos[1], pos[2:], "")
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s v%d\n", res.URI, res.Version)
	for _, warn := range res.Warnings {
		fmt.Fprintln(stderr, "warning: "+warn)
	}
	return nil
}
