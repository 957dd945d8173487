package mover

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

const (
	// DisplacedDir holds, in .git, the files writes displaced.
	DisplacedDir = "blackboard-displaced"
	// BaseSuffix names the copy of what a kept file held when something
	// written into it was last taken (its blob may be in no commit).
	BaseSuffix = ".base"
)

// Displaced is the watch the workspace keeps on the files it kept.
type Displaced struct {
	Kept atomic.Bool  // some are kept, as the last look or keep found
	Look atomic.Int64 // when they were last looked at, unix nanoseconds
}

// DisplacedName says what a kept file held: its blob, size and time.
func DisplacedName(blob gitver.Hash, size, mtime int64) string {
	return fmt.Sprintf("%s.%d.%d", blob, size, mtime)
}

// ParseDisplacedName reads a DisplacedName.
func ParseDisplacedName(name string) (blob gitver.Hash, size, mtime int64, ok bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 3 {
		return blob, 0, 0, false
	}
	var err error
	if blob, err = gitver.ParseHash(parts[0]); err != nil {
		return blob, 0, 0, false
	}
	size, err1 := strconv.ParseInt(parts[1], 10, 64)
	mtime, err2 := strconv.ParseInt(parts[2], 10, 64)
	return blob, size, mtime, err1 == nil && err2 == nil
}

// Place puts a staged file in place (worktree.Files.Place) and keeps the
// file it moved aside, which a person may still write into.
func (m *Mover) Place(staged worktree.Staged, dst string, expect, ours gitver.Hash) (bool, error) {
	placed, kept, err := m.files.Place(staged, dst, expect, ours)
	if kept != nil {
		m.keepDisplaced(kept.Tmp, kept.Path, kept.Blob, kept.Info, kept.Base)
	}
	return placed, err
}

// keepDisplaced keeps tmp, the file a write displaced from path, which
// held blob when its stat fi was taken (or blob with text appended, which
// then goes onto the note), and removes tmp's own name. base is blob's
// content when git may not have it. A failure only loses the chance to see
// later writes into it: the write itself went through.
func (m *Mover) keepDisplaced(tmp, path string, blob gitver.Hash, fi fs.FileInfo, base []byte) {
	defer m.root.Remove(tmp)
	dir := filepath.Join(m.git.GitDir(), DisplacedDir, filepath.FromSlash(path))
	held := filepath.Join(dir, DisplacedName(blob, fi.Size(), fi.ModTime().UnixNano()))
	from := filepath.Join(m.dir, filepath.FromSlash(tmp))
	if base != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return
		}
		if err := os.WriteFile(held+BaseSuffix, base, 0o644); err != nil {
			return
		}
	}
	err := os.Link(from, held)
	if errors.Is(err, fs.ErrNotExist) && os.MkdirAll(dir, 0o755) == nil {
		err = os.Link(from, held)
	}
	if err != nil {
		os.Remove(held + BaseSuffix)
		return
	}
	m.displaced.Kept.Store(true)
}
