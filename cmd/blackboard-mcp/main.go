// Command blackboard-mcp is a shared blackboard for teams of LLM agents: notes
// in a git workspace, served over MCP, with the same operations on the command
// line for people.
package main

import (
	"context"
	"os"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

func main() {
	os.Exit(cli.ExitCode("blackboard-mcp", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}
