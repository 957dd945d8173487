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
// indexes), to encode trees and commits, and to read version 4 of git's
// index file (gitver/gitindex).
//
// git's file formats are packages of their own under gitver that know bytes
// only (read, write, verify), with no *Repo, lock or policy; this package
// holds the policy that uses them (when to write, sync, publish, merge,
// keep):
//
//   - gitver/pack: the pack file (a pack of whole objects written in
//     memory, entries read at offsets, checked against CRCs and checksums);
//   - gitver/packidx: the pack index (.idx version 2), with the measurements
//     that keep it rather than go-git's idxfile;
//   - gitver/gitindex: git's index file, whole and split (EWAH bitmaps).
//
// Rooms of this package:
//
//   - repo.go: Repo, opening the repository, Hash, reading objects (go-git's
//     storage, then the packs read here);
//   - objects.go: writing objects (loose, or staged for a pack), building
//     commits by plumbing (PendingCommit);
//   - packs.go: the packs' policy: pending and published names, installing
//     and syncing, PublishPacks, keep files, Stage/WriteStaged,
//     MergeSmallPacks, the packs read here since the storage was opened;
//   - refs.go: the branch compare-and-swap under `<ref>.lock`, reflogs;
//   - gitindex.go: IndexLock and UpdateIndex, what entries git's index
//     records, the cache of the last index read;
//   - splitindex.go: when to split the index, shared indexes (where, synced,
//     expired), git's config for them;
//   - history.go: what a commit changed, tree against tree;
//   - worktree.go: how the work tree stands (merging, another branch
//     checked out), info/exclude, the commit checked out;
//   - remote.go: remotes (fetch, push, clone, ssh), ancestry, merge commits;
//   - turns.go: the turns ref beside the branch on a remote, where clones
//     that lost a race to push say so, and every push's lease on it;
//   - maintenance.go: when to run git's gc.
//
// A Repo is safe for concurrent use inside one process. Across processes the
// branch update is a compare-and-swap under `<ref>.lock`, exactly as the C git
// CLI does it, so this package, other processes of the program and a person
// running git can all commit to the same branch without losing a commit.
package gitver
