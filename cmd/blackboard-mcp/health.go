package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/health"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// healthJSON is the --json report: one object on stdout.
type healthJSON struct {
	OK       bool          `json:"ok"`
	Findings []findingJSON `json:"findings"`
	Info     []string      `json:"info"`
}

type findingJSON struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Path     string `json:"path"`
	Message  string `json:"message"`
	Fix      string `json:"fix"`
}

func runHealth(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("health", stderr, &c)
	asJSON := fs.Bool("json", false, `print one JSON object: {"ok":bool,"findings":[{"check","severity","path","message","fix"}],"info":[...]}`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: blackboard-mcp health [--dir DIR] [--json]\n\n"+
			"Checks a workspace: the repository and recent objects, stale git locks, an interrupted\n"+
			"write, uncommitted or unreadable notes, orphan or missing blobs, the derived index\n"+
			"against git, the access file, and the tool surface's token budget. Exits 0 when the\n"+
			"workspace is sound, 1 with one line per finding (what is wrong; how to fix it).")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return cli.Usagef("health takes no arguments; name the workspace with --dir")
	}
	dir := c.Dir()
	open := fsstore.Options{NoSync: c.NoSync, Agent: agentName()}
	rep := health.Check(dir, health.Options{Open: open, Progress: cli.ProgressOf(ctx).Stage})
	if w, err := fsstore.Open(dir, open); err == nil {
		checkSurface(w, rep)
		w.Close()
	}
	rep.Info = append(rep.Info, engineInfo(dir))
	if *asJSON {
		out := healthJSON{OK: rep.OK(), Findings: []findingJSON{}, Info: rep.Info}
		if out.Info == nil {
			out.Info = []string{}
		}
		for _, f := range rep.Findings {
			out.Findings = append(out.Findings, findingJSON(f))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		for _, line := range rep.Info {
			fmt.Fprintln(stdout, "info    "+line)
		}
		for _, f := range rep.Findings {
			fmt.Fprintln(stdout, findingLine(f))
		}
		if rep.OK() {
			fmt.Fprintf(stdout, "ok: %s is sound\n", dir)
		} else {
			noun := "findings"
			if len(rep.Findings) == 1 {
				noun = "finding"
			}
			fmt.Fprintf(stdout, "%d %s in %s\n", len(rep.Findings), noun, dir)
		}
	}
	if !rep.OK() {
		return cli.ErrSilent
	}
	return nil
}

// findingLine is one finding on one line: severity, check, what is wrong,
// and the fix.
func findingLine(f health.Finding) string {
	what := f.Check
	if f.Path != "" {
		what += " " + f.Path
	}
	line := fmt.Sprintf("%-7s %s: %s; fix: %s", f.Severity, what, strings.TrimSuffix(f.Message, "."), f.Fix)
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(line)
}

// checkSurface measures the tool surface every model reads on every turn,
// from a server built on the workspace exactly as serve builds it. It is
// cmd's own check: health knows the workspace, not MCP.
func checkSurface(w *fsstore.Workspace, r *health.Report) {
	srv := tools.NewServer(w, slog.New(slog.NewTextHandler(io.Discard, nil)), version)
	costs, err := tools.SurfaceCost(srv)
	if err != nil {
		r.Add(health.Finding{Check: "tool_surface", Severity: health.SeverityError,
			Message: "the tool surface cannot be measured: " + err.Error(),
			Fix:     "run go test ./tools to see what tools/list returns"})
		return
	}
	surfaceFindings(costs, tools.MaxSurfaceTokens, r)
}

// surfaceFindings reports a surface over budget, naming the dearest tools
// first: they are where shortening pays.
func surfaceFindings(costs []tools.ToolTokens, budget int, r *health.Report) {
	total := 0
	for _, c := range costs {
		total += c.Tokens
	}
	if total <= budget {
		r.Infof("tool surface: %d of %d tokens", total, budget)
		return
	}
	sorted := append([]tools.ToolTokens(nil), costs...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Tokens > sorted[j].Tokens })
	parts := make([]string, len(sorted))
	for i, c := range sorted {
		parts[i] = fmt.Sprintf("%s %d", c.Name, c.Tokens)
	}
	r.Add(health.Finding{Check: "tool_surface", Severity: health.SeverityError,
		Message: fmt.Sprintf("the tool surface costs %d tokens on every turn, over the budget of %d (%s)", total, budget, strings.Join(parts, ", ")),
		Fix:     "shorten the dearest tools' descriptions and parameter descriptions (tools/*.go), then go test ./tools -run Snapshots -update"})
}

// engineInfo names the board's engine, where it listens and logs, and how
// to stop it; or says that none runs.
func engineInfo(dir string) string {
	place, err := engine.Locate(dir)
	if err != nil {
		return "engine: none can run for this board: " + err.Error()
	}
	pid := place.Engine()
	if pid == 0 {
		return fmt.Sprintf("engine: none runs; the next agent's serve starts one (socket %s, log %s)", place.Socket, place.Log)
	}
	return fmt.Sprintf("engine: pid %d serves the board on %s (log %s; it stops once idle, or: kill %d)", pid, place.Socket, place.Log, pid)
}
