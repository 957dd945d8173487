package fsstore

import (
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The engine's view of the work tree's files: what a recorded stat is
// worth, and the walk of the whole tree. Writing and placing the files is
// fsstore/internal/worktree's.

func diskStat(st gitver.FileStat) index.DiskStat {
	return index.DiskStat{Size: st.Size, MTime: st.MTime, Ino: st.Ino}
}

// sameStat reports whether a file's stat now is the one recorded when it
// last matched its blob: its size, and its modification time to the
// nanosecond. The inode is recorded, not compared (as git's
// core.checkStat=minimal): a copy of the board (cp -a, a restored backup)
// keeps every file's size and time and gives it a new inode, and a file
// replaced since by another of its very size and nanosecond time is not
// something an editor or git makes.
func sameStat(recorded, now index.DiskStat) bool {
	return recorded.Size == now.Size && recorded.MTime == now.MTime
}

// readFile returns a workspace file's content and its stat, taken before
// the content was read (worktree.Files.ReadFile). ok is false when the
// file does not exist.
func (b *board) readFile(p string) (content []byte, fi fs.FileInfo, ok bool, err error) {
	return b.files.ReadFile(p)
}

// TreeProblem is a path of the work tree that cannot be read as a note's
// file: what is wrong, and what to do.
type TreeProblem struct {
	Path, What, Fix string
	// Minor is set for a file that is no note at all (a Markdown file whose
	// name no address can have): nothing of the board is wrong, but a
	// person may have meant it as a note.
	Minor bool
}

func (p TreeProblem) String() string {
	if p.Path == "" {
		return p.What + "; " + p.Fix
	}
	return p.Path + " is " + p.What + "; " + p.Fix
}

// walkNotes finds every file of the work tree that belongs to a note, with
// its stat, and the paths that would but cannot be read. It does not enter
// directories whose name starts with a dot (.git, .blackboard, editors'
// folders: no address names them) and does not follow links. ok is false
// when the work tree itself cannot be listed.
func (b *board) walkNotes() (found map[string]gitver.FileStat, problems []TreeProblem, ok bool) {
	found = map[string]gitver.FileStat{}
	err := filepath.WalkDir(b.dir, func(abs string, d fs.DirEntry, err error) error {
		p := b.rel(abs)
		if err != nil {
			if p == "." {
				return err
			}
			problems = append(problems, TreeProblem{Path: p, What: "unreadable (" + errMsg(err) + ")", Fix: "fix its permissions"})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if _, ok := note.KeyOf(p); !ok {
			if problem := b.misnamed(p); problem != nil && d.Type().IsRegular() {
				problems = append(problems, *problem)
			}
			return nil
		}
		const fix = "replace it with a regular file, or remove it"
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			problems = append(problems, TreeProblem{Path: p, What: "a symbolic link, which the board does not follow", Fix: fix})
		case !d.Type().IsRegular():
			problems = append(problems, TreeProblem{Path: p, What: "not a regular file", Fix: fix})
		default:
			if fi, err := d.Info(); err == nil {
				found[p] = gitver.StatOfFile(fi)
			}
		}
		return nil
	})
	if err != nil {
		problems = append(problems, TreeProblem{What: "the work tree cannot be listed: " + errMsg(err), Fix: "fix the workspace directory's permissions"})
		return found, problems, false
	}
	return found, problems, true
}

// rel turns a path under the workspace into its slash-separated
// relative form.
func (b *board) rel(abs string) string {
	rel, err := filepath.Rel(b.dir, abs)
	if err != nil {
		return abs
	}
	return filepath.ToSlash(rel)
}
