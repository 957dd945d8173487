// Package fsstore is the board's engine: the workspace on disk, and the one
// write path every change goes through: the workspace's write lock (a file
// lock across processes), compare-and-swap against git's history, a journal
// that makes every step of a write recoverable, git's index kept in step,
// and the derived index (fsstore/index) caught up with whoever moved the
// branch. Callers read and write through a View, the board as one caller
// (an agent with its topics, or the CLI) sees it: ws.As(caller).
//
// People are writers too: what they change in the work tree with their
// editor is found (Workspace.Watch, with fsstore/watch; before writes; at
// start) and committed as their own version. What they do with git beside
// the agents is repaired before every write (repair.go).
//
// One rule gives every version: a note's version is the number of commits
// that changed its files (fsstore/internal/catchup says how merges count),
// computed by the derived index's catch-up alone; a write is acknowledged at that
// number for its content, and a write that changes nothing makes no commit.
//
// The rooms, by file:
//
//	kernel             workspace.go (open, the write lock), errors.go, caller.go,
//	                   journal.go (crash recovery: finishing or dropping a killed
//	                   writer's write; the journal's format is
//	                   fsstore/internal/journal), files.go (what a file's stat
//	                   is worth, the walk of the tree), with the files
//	                   themselves in fsstore/internal/worktree (read, stage,
//	                   place without losing a person's save, remove),
//	                   init.go, accessfile.go, inspect.go (for health)
//	write transaction  write.go (update and link requests), source.go
//	                   (source_path), tx.go (writeTx: build, check, commit),
//	                   queue.go (a write alone, or in a group), pending.go
//	                   (the pending writes), publish.go (publishing them),
//	                   move.go (moveBranch: the one branch-move step)
//	index catch-up     catchup.go (reads at the branch, or as far as the index has
//	                   come while it is built; reindex), with the part itself in
//	                   fsstore/internal/catchup (the version rule, the bounded
//	                   catch-up, the build in the background)
//	people's edits     edits.go, watching.go, commit.go (their commits)
//	a person's git     repair.go, rescue.go (a reset that raced a write),
//	                   unplaced.go (files a checkout left older than the branch),
//	                   displaced.go (text written into a file a write replaced),
//	                   checkouts.go, stale.go (a file holding an earlier version)
//	remote             remote.go (push, follow, rebuild, carry a person's merge),
//	                   turns.go (clones that lost a race to push go first)
//	reads              read.go, list.go, search.go (by words, and by meaning with
//	                   the vectors of fsstore/internal/vectors), changes.go
//
// The parts under fsstore/internal know nothing of the workspace and are
// handed what they use; they import downward only, and tell the engine by
// what they return, never by calling back:
//
//	catchup   the derived index brought to the branch, bounded for a
//	          caller, in steps in the background
//	worktree  the notes' files on disk
//	journal   the write journal's format
//	vectors   the notes' meaning for search
//
// One lone update_state, as the parts stand (a board without a remote, no
// other writer):
//
//	View.Update (write.go)       the request checked, the caller's right
//	writeInGroup, publishWrites  the queue: alone, so committed at once
//	  (queue.go)
//	withFreeWriteLock            the write lock (flock), then upkeep on the
//	  (workspace.go)             call's path: a killed writer's journal
//	                             finished (journal.go), the repairs of a
//	                             person's git (repair.go)
//	commitAlone, buildWrite      the build: agents' commits a reset dropped
//	  (queue.go, tx.go)          brought back (rescue.go), the note's own
//	                             edits adopted (edits.go, with a bounded
//	                             catch-up, catchup), the note read and checked
//	                             against expect_version (tx.go), its commit
//	                             built (gitver)
//	commitChain, moveBranch      the commit point: the journal written
//	  (move.go)                  (journal), the files staged (worktree), the
//	                             branch moved (gitver), the files placed
//	                             (worktree; a file moved aside is kept for a
//	                             person, displaced.go), git's index written,
//	                             the derived index caught up (catchup), the
//	                             journal cleared
//
// The build and the commit point still call into people's edits and a
// person's git (rescue, adoption, displaced files): those are to become one
// step the queue runs before a build.
//
// The board's format (addresses, note files, tables, commit messages) is
// fsstore/note's; fsstore knows git only through gitver, and knows nothing
// of MCP (tools adapts it) or of diagnosis (fsstore/health reads it from
// outside); cmd wires them together.
package fsstore
