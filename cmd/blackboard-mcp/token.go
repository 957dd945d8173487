package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
)

func runToken(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("token", stderr, &c)
	read := fs.String("read", "", "topics or topic prefixes the agent may read, comma-separated (* for all)")
	write := fs.String("write", "", "topics or topic prefixes the agent may write, comma-separated (* for all)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage:
  blackboard-mcp token add NAME --read a,b --write a   create an agent; prints its token once, on stdout
  blackboard-mcp token list                            the agents and their topics
  blackboard-mcp token revoke NAME                     remove an agent; its token stops working

With .blackboard/access.yaml present, every server needs a token (BLACKBOARD_TOKEN for stdio,
a bearer token over HTTP) and each agent sees and writes only its topics. Tokens are stored
only as hashes; the file is committed, so git log tells who was given access when.`)
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return cli.Usagef("token needs add, list or revoke")
	}
	w, err := c.Open(agentName())
	if err != nil {
		return err
	}
	defer w.Close()
	f, _, err := w.Access()
	if err != nil {
		return err
	}
	if f == nil {
		f = &access.File{}
	}
	switch pos[0] {
	case "add":
		if len(pos) != 2 {
			return cli.Usagef("token add takes one agent name")
		}
		if *read == "" && *write == "" {
			return cli.Usagef("give the agent topics with --read and/or --write")
		}
		token, err := f.Add(pos[1], splitList(*read), splitList(*write))
		if err != nil {
			return err
		}
		if err := w.SaveAccess(f, "token add "+pos[1]); err != nil {
			return err
		}
		fmt.Fprintln(stdout, token)
		fmt.Fprintf(stderr, "agent %s added; give it this token in BLACKBOARD_TOKEN (it is not stored and is shown only now)\n", pos[1])
	case "list":
		for _, a := range f.Agents {
			fmt.Fprintf(stdout, "%-20s read=%s write=%s\n", a.Name, strings.Join(a.Read, ","), strings.Join(a.Write, ","))
		}
	case "revoke":
		if len(pos) != 2 {
			return cli.Usagef("token revoke takes one agent name")
		}
		if !f.Revoke(pos[1]) {
			return fmt.Errorf("no agent named %s", pos[1])
		}
		return w.SaveAccess(f, "token revoke "+pos[1])
	default:
		return cli.Usagef("token needs add, list or revoke, not %q", pos[0])
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, strings.ToLower(p))
		}
	}
	return out
}
