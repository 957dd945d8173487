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
// the agents is repaired before every batch of writes and every commit of
// people's edits, and by a watching server (fsstore/internal/people).
//
// One rule gives every version: a note's version is the number of commits
// that changed its files (fsstore/internal/catchup says how merges count),
// computed by the catch-up alone; a write is acknowledged at that number
// for its content, and a write that changes nothing makes no commit.
//
// The engine is a few parts, each with one job: the front and the write
// lock here, every other a package under fsstore/internal, handed the parts
// below it at Open; none of those holds the workspace:
//
//	Workspace  workspace.go, inspect.go, watching.go, remote.go,
//	           accessfile.go: the front. It opens the board, holds the
//	           parts, gives As(caller) (caller.go: the View every read
//	           and write goes through), and closes; the View's requests
//	           (write.go, source.go; act.go for a person's actions,
//	           retry.go for a write its relay sent again) and its reads
//	           (catchup.go, read.go, list.go, search.go, feedback.go)
//	pipeline   tool writes: the queue and the batch, with a remote its
//	           push; the build of a write as a pipeline.Tx, the unit of
//	           work, with its own reads and its one commit
//	people     people's edits and a person's git: edits committed as
//	           theirs (edits.go, commit.go, stale.go, displaced.go), a save
//	           made from an earlier version merged with what was written
//	           since (saves.go), the repairs (repair.go, rescue.go,
//	           unplaced.go), and Prepare, the upkeep a batch runs once
//	           before it is built
//	follow     the upstream, where a write counts (upstream.go: the
//	           interface, and Race, the one back-off of every loop that
//	           publishes), the local branch brought to what it holds, and
//	           the one loop that starts a write over while the branch moves
//	commits    every commit the program builds, a tool write's and a
//	           person's alike
//	mover      the commit point: the journal, the branch move (never onto
//	           a branch a person's reset took the program's last commit
//	           from, until it is back), the files placed, git's index, the
//	           derived index caught up; a killed writer's journal finished
//	           by whoever comes next (Recover); files a move replaced kept
//	           for a person (displaced.go), and files for another checkout
//	           (unplaced.go)
//	writeLock  the write lock across processes (lock.go); a hold runs
//	           nothing but what its holder asks
//
// and below them:
//
//	history   questions about the branch's history: what a person's reset
//	          dropped, what a checkout wrote, the commits between two
//	catchup   the derived index brought to the branch, bounded for a
//	          caller, in steps in the background
//	worktree  the notes' files on disk
//	journal   the write journal's format
//	fail      the errors callers branch on, and those the parts tell
//	          each other (errors.go gives them to callers)
//	linemerge a three-way merge of a text by lines
//	vectors   the notes' meaning for search
//	batch     group commit: the queue whose leader runs the batch
//	localboard the upstream of a board without a remote
//	gitremote the upstream of a board with a git remote: a chain of
//	          commits published, what other clones published learned,
//	          and this clone's turns among them and its pacing
//
// A call goes down through the parts. A part is handed what it uses, an
// interface to git of what it needs and the parts below it, and calls a
// higher one only through a function its caller hands it for that call: a
// hold of the write lock runs the batch, a snapshot of the index runs the
// caller's reads, the index following a move records the stats of the
// files it placed. crashpoints.go, built only with the crashpoints tag, lets tests
// kill a process at a named step.
//
// One lone update_state on a board without a remote runs straight down, in
// one hold of the write lock from the upkeep to the move:
//
//	View.Update (write.go)           the request checked, the caller's right
//	Pipeline.Submit, batch.Queue,    the queue: alone, so a batch of one,
//	  publishWrites, commitBatch,    committed at once (Upstream.OnBranch);
//	  commitRound (pipeline)         the round runs again only when a
//	                                 person's commit moves the branch first
//	writeLock.with (lock.go)         the flock
//	People.Prepare (people)          the upkeep, once: a killed writer's
//	                                 journal finished (Mover.Recover), the
//	                                 repairs of a person's git, the notes'
//	                                 own edits committed (adoptEdits)
//	buildWrite, Tx (pipeline)        the note read as the write sees it and
//	                                 checked against expect_version
//	                                 (NoteIn), its commit built in memory
//	                                 (commits.Builder)
//	Mover.CommitChain, Move          the commit point: the journal written,
//	  (mover)                        the files staged, the branch moved, the
//	                                 files placed, git's index written, the
//	                                 journal cleared, the index brought to
//	                                 the move (Catcher.FollowMove)
//
// With a remote, the batch runs the same round, and publishes its chain
// (pushChain, Upstream.Publish) before the mover moves the branch, in the
// same hold of the write lock; when another clone published first, the
// clone follows the remote (Follower.Follow) and the batch is built again
// on it (pushBatch).
// docs/architecture.md walks this path function by function, with the relay
// that brings an agent's call to the engine, a read and a search, and says
// which files and tests a common change touches; `blackboard-bench path`
// traces the files one such write passes through.
//
// The board's format (addresses, note files, tables, commit messages) is
// fsstore/note's; fsstore knows git only through gitver, and knows nothing
// of MCP (tools adapts it) or of diagnosis (fsstore/health reads it from
// outside); cmd wires them together.
package fsstore
