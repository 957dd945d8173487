package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

func runClone(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("clone", stderr, nil)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: blackboard-mcp clone URL DIR

Makes DIR a workspace from the board at URL (any git remote: a path, file://,
ssh, https): a git clone whose branch follows URL. Every write on it counts
once URL took it, so the agents of every clone share one board.`)
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return cli.Usagef("clone takes a URL and a directory")
	}
	if err := fsstore.Clone(ctx, pos[0], pos[1]); err != nil {
		return err
	}
	w, err := fsstore.Open(pos[1], fsstore.Options{})
	if err != nil {
		return err
	}
	defer w.Close()
	abs, _ := filepath.Abs(pos[1])
	fmt.Fprintf(stdout, "workspace %s cloned into %s from %s\n", w.Name(), abs, gitver.Redact(pos[0]))
	return nil
}

func runRemote(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("remote", stderr, &c)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage:
  blackboard-mcp remote           the board's remote, its last sync, and what waits to go
  blackboard-mcp remote set URL   attach the board to a git remote (an empty one gets the board)
  blackboard-mcp remote check     protect the remote's branch against force-pushes (or say how)
  blackboard-mcp remote repair    after a force-push rewrote the remote: push a merge that keeps both

With a remote, a write counts once the remote took it: every clone's agents share one
history, and expect_version holds across machines.`)
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	w, err := c.Open(agentName())
	if err != nil {
		return err
	}
	defer w.Close()
	switch {
	case len(pos) == 0:
		st, err := w.RemoteStatus(ctx)
		if err != nil {
			return err
		}
		if st == nil {
			fmt.Fprintln(stdout, "no remote: the board lives in this directory only (blackboard-mcp remote set URL)")
			return nil
		}
		fmt.Fprintf(stdout, "remote %s %s\n", st.Name, gitver.Redact(st.URL))
		fmt.Fprintf(stdout, "local  %s\nremote %s", shortHash(st.Local), shortHash(st.Remote))
		if !st.LastSync.IsZero() {
			fmt.Fprintf(stdout, " (last sync %s ago)", time.Since(st.LastSync).Round(time.Second))
		}
		fmt.Fprintln(stdout)
		if st.Behind > 0 {
			fmt.Fprintf(stdout, "behind by %s: the next write or read, or a server's fetch, brings them\n", commits(st.Behind))
		}
		if len(st.Waiting) > 0 {
			fmt.Fprintf(stdout, "waiting to go: %s, pushed with the next write or a server's fetch\n", commits(st.WaitingCount))
			for _, s := range st.Waiting {
				fmt.Fprintln(stdout, "  "+s)
			}
		}
		if st.Problem != "" {
			fmt.Fprintln(stdout, "problem: "+st.Problem)
			return cli.ErrSilent
		}
		return nil
	case pos[0] == "check" && len(pos) == 1:
		done, advice, err := w.RemoteCheck(ctx)
		if err != nil {
			return err
		}
		if done != "" {
			fmt.Fprintln(stdout, done)
		}
		if advice != "" {
			fmt.Fprintln(stdout, "protect the board's branch against force-pushes and deletion "+advice)
		}
		return nil
	case pos[0] == "repair" && len(pos) == 1:
		merge, err := w.RepairRemote(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pushed %s, a merge of the rewritten history and this clone's: writes go through again\n", merge.Short())
		return nil
	case pos[0] == "set" && len(pos) == 2:
		if err := w.SetRemote(ctx, pos[1]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "board %s follows %s: writes count once it took them\n", w.Name(), gitver.Redact(pos[1]))
		return nil
	}
	return cli.Usagef("remote takes no argument, set URL, check, or repair")
}

func shortHash(h gitver.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return h.Short()
}

// commits says how many commits: "1 commit", "3 commits".
func commits(n int) string {
	if n == 1 {
		return "1 commit"
	}
	return fmt.Sprintf("%d commits", n)
}
