// Package worktree is the one room for the board's files on disk:
// everything the engine does to a note's file (read it, stage a new one,
// put it in place without losing a person's save, remove it, clear what a
// killed writer left) goes through Files, and through os.Root, so no link
// leads outside the workspace.
//
// It knows files, blobs and the board's naming of temporary files; what a
// file it moved aside means to people's edits, and when a stat can be
// trusted, are the engine's (fsstore), which it tells by what it returns,
// never by calling back.
package worktree
