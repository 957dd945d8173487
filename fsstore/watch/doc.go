// Package watch turns the file system's change events for a whole directory
// tree into debounced batches of changed file paths, so that the store can
// commit the edits people make to notes in their own editors.
//
// It owns the watching: one inotify instance per Watcher (fsnotify), a watch
// on every directory of the tree (inotify is not recursive), the scan of each
// directory that appears (files made before its watch was added send no
// event), editors' temporary and backup files, and the debounce (the kernel
// says a file was written, never that a save is finished).
//
// It must not know notes, front matter or git: a Batch is a list of paths
// relative to the root, and deciding what they mean belongs to the caller.
package watch
