package main

import (
	"context"
	"io"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

const usage = `blackboard-bench: measures blackboard-mcp's write path and makes large workspaces to measure on.

Usage:
  blackboard-bench write [--dir DIR] [--procs N] [--writes M] [--notes K] [--no-sync]
                         [--pages P --runs R [--server BINARY]]
      M updates per process, round-robin over K notes per process, each with
      the right expect_version; N > 1 runs N processes of this binary on the
      workspace at once and checks afterwards that no write was lost. From one
      process, it also makes as many floor commits, in turns with the writes:
      only what a durable commit of one note must do (loose objects, a ref by
      lock file, the note's file, fsynced as the product does), and prints
      both and their ratio. With --pages, R runs of the N processes,
      alternately without and with P pages of the board open on a view of
      blackboard-mcp (each following the board's moves as the page's script
      does); after each run with pages, every page must show the board's last
      cursor. It prints each run and the writes with pages against without.
      With BLACKBOARD_BENCH_CPUPROFILE=PREFIX, each of the N processes writes
      its CPU profile to PREFIX.<pid> (go tool pprof them together).
  blackboard-bench read [--dir DIR] [--server BINARY] [--rounds N] [--writes M] [--copy=false]
                       [--beside BINARY [--turns T] [--quiet D]]
      measures an agent's catch-up (listings of 100 and 20 rows, 20 digests,
      searches from a word to a question) and M writes through a real MCP
      client over stdio against blackboard-mcp serve, beside the same calls
      made in this process through the same tool code; then a new server's
      first answer and its memory, settled and at its peak, on the board and
      on a copy of it (cp -a, made once the board's engine is stopped and
      any git gc on it is over). The writes go to the board: measure a
      board made for it (generate). With BLACKBOARD_BENCH_CPUPROFILE=PREFIX, the
      in-process calls' CPU profile goes to PREFIX.read; with
      BLACKBOARD_BENCH_MEMPROFILE=FILE, the heap once they are made to FILE.
      With --beside, the two servers (--server is A) each on its own copy
      of the board, indexed by itself, in T turns, A B then B A: every
      call's p50 and p99 side by side, then each one's first answer and
      memory. A server is timed once it has settled (its first look at its
      copy's files done), and its memory read once a quiet engine has
      given back what it gives back; with --quiet, read again in the last
      turn once left quiet D longer, its client connected.
  blackboard-bench path [--module DIR] [--runs N] [--warmup W] [--settle D]
                        [--count REGEX]... [--closures=false]
      which of the project's files one lone update_state passes through in
      the board's engine, from its socket to the write's answer. It copies
      the module (--module, default: the one the current directory is in)
      without tests, makes every function and closure of the copy tell a
      tracer it was entered and from which file of the module, builds
      blackboard-mcp from it, and serves a fresh board through a real MCP
      client over stdio; after W writes of distinct notes and two reads,
      the engine records while each of N new notes is written, alone, D
      after the one before. Per run and over all runs: the files passed
      through (entered: a function of theirs was), the switches (distinct
      caller file -> callee file pairs of two files), each switch's calls,
      the entries no file of the module called (goroutines' starts), each
      file's entries, and the entries of the functions each --count
      matches (names without the module path, as fsstore.(*mover).recover;
      default: journal recovery and the index's catch-up). A function's
      caller is the nearest frame of a file of the module above it, through
      any library (mcp-go, database/sql) between them. What the engine's
      background work (the watcher, the index) does in the window counts
      too: runs that differ show it.
  blackboard-bench search COLLECTION [--server BINARY] [--beside BINARY] [--limit N] [--cues]
  blackboard-bench search --git REPOSITORY [--since DATE] [--questions N] [...]
      how well search finds what a test collection's judges found: the
      collection in the SMART layout (Cranfield's cran.all.1400, cran.qry
      and cranqrel; CISI, MEDLINE and CACM alike), each document a note of
      a new board (its title the digest, its abstract the body), written
      through a real MCP client; the board reindexed; then every judged
      question asked with search_keys through MCP, on a copy of the board
      for each build. It prints nDCG and recall at N (10) and the
      searches' p50 and p99. Cranfield's grades 1 (a complete answer) to 4
      (minimum interest) are gains 4 to 1; -1 is none. With --cues, also
      --server with each ranking cue of search turned off in turn
      (BLACKBOARD_SEARCH_OFF), then all of them (words alone): what each
      buys, and what it costs. With --git, the collection is a project's
      history, notes of the board's own kind: each commit since DATE (2
      years ago) that is no merge a note (its subject the digest, its
      message the body), and each pull request merged since then a
      question (its title), judged by the commits it brought; N (300) of
      them drawn at random, leaving out those whose title is one of their
      commits' subjects, of routine work (bumps, releases), or of more
      than 20 commits.
  blackboard-bench generate DIR --notes N --commits M [--topics T] [--seed S] [--name NAME]
      makes DIR a workspace with N notes and M note commits (plus the init
      commit), built by git fast-import.
`

// run is the whole program: a verb and its arguments in, an error out. It is
// the one place that decides what goes to stdout.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return cli.Program{Usage: usage, Verbs: map[string]cli.Verb{
		"write":    runWrite,
		"generate": runGenerate,
		"read":     runRead,
		"path":     runPath,
		"search":   runSearch,
		workerVerb: runWorker, // hidden: started by write, not by people
	}}.Run(ctx, args, stdin, stdout, stderr)
}
