package note

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeaf holds the package to its rule: it imports the standard library
// and yaml, never a package of this project, so that every package may
// import it instead of copying the format.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/blackboard-mcp/blackboard-mcp/fsstore/note": true,
		"go.yaml.in/yaml/v3": true,
	}
	for _, dep := range strings.Fields(string(out)) {
		if !allowed[dep] {
			t.Errorf("fsstore/note imports %s; it may import only the standard library and yaml", dep)
		}
	}
}
