// Package gitver owns everything git: writing objects (loose, or a group of
// commits as one pack, pending until published, see packs.go), building
// commits by plumbing (only the trees on the changed paths are re-encoded),
// moving a branch with git's own lock-file protocol, keeping git's index file
// in step, and reading history one first-parent commit at a time.
//
// It knows paths, blobs and commit messages, never notes: it must not import
// fsstore, tools, mcp-go, YAML or fsnotify. It never uses go-git's worktree
// (Worktree.Add and Commit scan the whole tree and move HEAD without a
// compare-and-swap) nor go-git's reference writer (it truncates the ref file
// in place, so readers see an empty ref). go-git is used to read objects
// (packs that appear after its storage was opened are read here, from their
// indexes) and to encode trees, commits and git's index file.
//
// A Repo is safe for concurrent use inside one process. Across processes the
// branch update is a compare-and-swap under `<ref>.lock`, exactly as the C git
// CLI does it, so this package, other processes of the program and a person
// running git can all commit to the same branch without losing a commit.
package gitver
