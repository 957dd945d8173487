// Package cli holds the command-line conventions both binaries share
// (blackboard-mcp, the product, and blackboard-bench, the maintainer's
// benchmark tool), so that each is written once: a binary is a set of verbs
// listed in its usage text; a mistake in the command line is a usage error
// (exit status 2), any other failure exits 1 and success or -h exits 0, with
// every error line prefixed by the binary's name; flags may come before or
// after the positional arguments, and `--` ends them; and the verbs that open
// a workspace take --dir and --no-sync, the workspace being --dir, else
// $BLACKBOARD_DIR, else the current directory.
//
// Each binary keeps its own usage text, verb table and verbs, and whatever
// else only it does (blackboard-mcp's agent name, say). cli writes only to
// the writers it is given, never to os.Stdout itself, and it is linked into
// the installed binary, so it never imports fixtures.
package cli
