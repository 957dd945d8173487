package health

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// checkAccess validates the access file (access.Lint, the rules the server
// holds it to), reporting every problem with its line.
func checkAccess(dir string, r *Report) {
	raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(note.AccessFile)))
	if errors.Is(err, fs.ErrNotExist) {
		r.Infof("access: no %s, open mode: every caller may read and write every topic", note.AccessFile)
		return
	}
	if err != nil {
		r.Add(Finding{Check: "access", Severity: SeverityError, Path: note.AccessFile,
			Message: fmt.Sprintf("cannot be read: %v", err), Fix: fixAccess})
		return
	}
	n, problems := access.Lint(raw)
	for _, p := range problems {
		r.Add(Finding{Check: "access", Severity: SeverityError, Path: note.AccessFile, Message: p.String(), Fix: fixAccess})
	}
	switch {
	case len(problems) > 0:
	case n == 0:
		r.Add(Finding{Check: "access", Severity: SeverityWarning, Path: note.AccessFile,
			Message: "the `agents:` list is empty: every token is refused",
			Fix:     "add an agent with `blackboard-mcp token add NAME --read TOPICS --write TOPICS`, or delete the file for open mode"})
	default:
		r.Infof("access: %s lists %d agents", note.AccessFile, n)
	}
}
