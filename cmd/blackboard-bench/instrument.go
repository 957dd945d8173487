package main

import (
	"bytes"
	_ "embed" // the call tracer's source, written into the copy
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
)

// calltraceSource is the package that path writes into the module's copy
// as internal/calltrace: at the module's root, every package may import it.
//
//go:embed internal/calltrace/calltrace.go
var calltraceSource []byte

const (
	// calltraceDir is where the copy gets the call tracer.
	calltraceDir = "internal/calltrace"
	// calltraceAlias names the tracer in every instrumented file: no
	// file of the project spells it, which instrument checks, so it
	// neither clashes with an import nor is shadowed by a name.
	calltraceAlias = "bbcalltrace_"
)

// notInstrumented are the module's directories whose functions are not
// traced: this tool, which never runs in the engine, and the tracer itself.
var notInstrumented = []string{"cmd/blackboard-bench", calltraceDir}

// moduleRoot is the module's directory: dir when named, else the one
// `go env GOMOD` finds from the current directory.
func moduleRoot(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", cli.Usagef("not inside a Go module; name blackboard-mcp's source with --module")
	}
	return filepath.Dir(gomod), nil
}

// modulePath is the path the go.mod in root declares.
func modulePath(root string) (string, error) {
	cmd := exec.Command("go", "list", "-m")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list -m in %s: %w", root, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// copyInstrumented copies the module at src to dst, without .git, testdata
// and tests (the engine's binary needs none of them), and makes every
// function of every other Go file (and with closures, every function
// literal) begin by telling the tracer, which it adds as internal/calltrace.
// It returns how many files it instrumented.
func copyInstrumented(src, dst, module string, closures bool) (int, error) {
	if _, err := os.Stat(filepath.Join(src, calltraceDir)); err == nil {
		return 0, fmt.Errorf("%s already has a package %s: path cannot add its tracer there", src, calltraceDir)
	}
	instrumented := 0
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata"):
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case strings.HasSuffix(d.Name(), "_test.go"):
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, to)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(d.Name(), ".go") && !underAny(filepath.ToSlash(rel), notInstrumented) {
			var changed bool
			if b, changed, err = instrument(path, b, module, closures); err != nil {
				return err
			}
			if changed {
				instrumented++
			}
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		return 0, err
	}
	tracer := filepath.Join(dst, calltraceDir)
	if err := os.MkdirAll(tracer, 0o755); err != nil {
		return 0, err
	}
	return instrumented, os.WriteFile(filepath.Join(tracer, "calltrace.go"), calltraceSource, 0o644)
}

// underAny reports whether the slash-separated path rel lies in one of dirs.
func underAny(rel string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(dir string) bool { return strings.HasPrefix(rel, dir+"/") })
}

// instrument returns src with `defer bbcalltrace_.Enter()()` at the start
// of every function declared with a body (and with closures, of every
// function literal), and the tracer's import. Both are inserted into the
// text as it is, on lines that exist (the import after the package clause,
// on its line): every line keeps its number, every comment and directive
// its place, and what is not a function is left alone.
func instrument(name string, src []byte, module string, closures bool) ([]byte, bool, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, false, err
	}
	type insert struct {
		at   int
		text string
	}
	var inserts []insert
	enter := func(body *ast.BlockStmt) {
		inserts = append(inserts, insert{fset.Position(body.Lbrace).Offset + 1, "defer " + calltraceAlias + ".Enter()();"})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch fn := n.(type) {
		case *ast.FuncDecl:
			if fn.Body != nil {
				enter(fn.Body)
			}
		case *ast.FuncLit:
			if closures {
				enter(fn.Body)
			}
		}
		return true
	})
	if len(inserts) == 0 {
		return src, false, nil // an import it does not use would not compile
	}
	if bytes.Contains(src, []byte(calltraceAlias)) {
		return nil, false, fmt.Errorf("%s already spells %s, the name path gives the tracer", name, calltraceAlias)
	}
	imp := fmt.Sprintf("; import %s %q", calltraceAlias, module+"/"+calltraceDir)
	inserts = append(inserts, insert{fset.Position(f.Name.End()).Offset, imp})
	slices.SortStableFunc(inserts, func(a, b insert) int { return a.at - b.at })
	var out bytes.Buffer
	last := 0
	for _, in := range inserts {
		out.Write(src[last:in.at])
		out.WriteString(in.text)
		last = in.at
	}
	out.Write(src[last:])
	return out.Bytes(), true, nil
}
