package worktree

import (
	"io/fs"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// StatOf is the part of a file's metadata that tells whether it changed,
// as the derived index records it (the blob left zero).
func StatOf(fi fs.FileInfo) index.DiskStat {
	st := gitver.StatOfFile(fi)
	return index.DiskStat{Size: st.Size, MTime: st.MTime, Ino: st.Ino}
}

// racyWindow is how recently a file may have been modified for its stat to
// be worth nothing: a file system's clock is coarse (a few milliseconds on
// Linux), so a second write within the same tick can leave size, time and
// inode unchanged. Files younger than this are compared by content.
const racyWindow = time.Second

// Trustworthy reports whether st may stand for the content read with it.
func Trustworthy(st index.DiskStat) bool {
	return time.Since(time.Unix(0, st.MTime)) >= racyWindow
}

// StaleInfo is a stat that matches no file: recorded in git's index for a
// path whose file is not the committed content (a person's save kept in
// place of a write's), it makes git compare the content instead of
// trusting the entry.
type StaleInfo struct{}

func (StaleInfo) Name() string       { return "" }
func (StaleInfo) Size() int64        { return 0 }
func (StaleInfo) Mode() fs.FileMode  { return 0o644 }
func (StaleInfo) ModTime() time.Time { return time.Unix(0, 0) }
func (StaleInfo) IsDir() bool        { return false }
func (StaleInfo) Sys() any           { return nil }
