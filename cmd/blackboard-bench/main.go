package main

import (
	"context"
	"os"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

func main() {
	os.Exit(cli.ExitCode("blackboard-bench", run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
}
