package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestPathVerb runs blackboard-bench path as a maintainer does, on a board
// of its own, and checks that the traced write went through the write path's
// front and its commit point, between files.
func TestPathVerb(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command(benchBinary, "path", "--module", "../..", "--runs", "2", "--warmup", "3", "--settle", "200ms")
	// The copy, the board, the engine's socket and the build's scratch
	// all go under the test's own directory.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "XDG_RUNTIME_DIR=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("blackboard-bench path: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	union := regexp.MustCompile(`(?m)^union files=(\d+) entered=(\d+) switches=(\d+) runs=2$`).FindStringSubmatch(out)
	if union == nil {
		t.Fatalf("no union line in:\n%s", out)
	}
	if atoi(t, union[3]) == 0 {
		t.Errorf("no switch between files:\n%s", out)
	}
	if runs := regexp.MustCompile(`(?m)^run=\d+ files=\d+ entered=\d+ switches=[1-9]\d* `).FindAllString(out, -1); len(runs) != 2 {
		t.Errorf("want 2 runs with switches, got %d:\n%s", len(runs), out)
	}
	for _, file := range []string{"fsstore/write.go", "fsstore/internal/mover/mover.go"} {
		// Entered in both runs: a positive count in each column.
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(file) + ` +[1-9]\d* +[1-9]\d*$`).MatchString(out) {
			t.Errorf("%s not entered in each run:\n%s", file, out)
		}
	}
	if !strings.Contains(out, "\n  tools/update_state.go -> fsstore/write.go ") {
		t.Errorf("the tool's call into the engine's write is not a switch:\n%s", out)
	}
}

// TestInstrument checks what path does to a file: each function and
// closure begins by telling the tracer, the tracer is imported, every line
// keeps its number, and a file without functions is left as it was.
func TestInstrument(t *testing.T) {
	src := `// Package p is a test.
package p // a comment after the clause

import "fmt"

//go:generate echo hi

// F prints.
func F() { fmt.Println(func() int { return 1 }()) }

func (t *T) empty() {}

type T struct{}

func declared()
`
	got, changed, err := instrument("p.go", []byte(src), "example.com/m", true)
	if err != nil || !changed {
		t.Fatalf("instrument: changed %v, %v", changed, err)
	}
	if n, m := strings.Count(string(got), "\n"), strings.Count(src, "\n"); n != m {
		t.Errorf("%d lines, want %d:\n%s", n, m, got)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", got, 0)
	if err != nil {
		t.Fatalf("instrumented file does not parse: %v\n%s", err, got)
	}
	if len(f.Imports) != 2 || f.Imports[0].Name.Name != calltraceAlias || f.Imports[0].Path.Value != `"example.com/m/internal/calltrace"` {
		t.Errorf("imports %v, want the tracer's first", f.Imports)
	}
	bodies := 0
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body = fn.Body
		case *ast.FuncLit:
			body = fn.Body
		}
		if body == nil {
			return true
		}
		bodies++
		if d, ok := body.List[0].(*ast.DeferStmt); !ok || !strings.HasPrefix(string(got[fset.Position(d.Pos()).Offset:]), "defer "+calltraceAlias+".Enter()()") {
			t.Errorf("a function at line %d does not begin with the tracer", fset.Position(body.Pos()).Line)
		}
		return true
	})
	if bodies != 3 {
		t.Errorf("%d function bodies, want 3", bodies)
	}
	for _, keep := range []string{"package p; import", "// a comment after the clause", "//go:generate echo hi\n", "func declared()\n"} {
		if !strings.Contains(string(got), keep) {
			t.Errorf("no %q in:\n%s", keep, got)
		}
	}

	plain := "package p\n\nconst C = 1\n"
	if got, changed, err := instrument("c.go", []byte(plain), "example.com/m", true); err != nil || changed || string(got) != plain {
		t.Errorf("a file without functions: changed %v, %v:\n%s", changed, err, got)
	}
	if _, _, err := instrument("x.go", []byte("package p\n\nvar "+calltraceAlias+" = 1\n\nfunc f() {}\n"), "example.com/m", true); err == nil {
		t.Error("a file that spells the tracer's name was instrumented")
	}
}
