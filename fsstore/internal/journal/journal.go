// Package journal is the file format of the write journal: the intent of
// the one write in progress, recorded (and synced) before the branch moves.
// It knows the bytes (write, sync, read, clear); when a write records one,
// and how a killed writer's journal is finished or dropped, is the
// engine's (fsstore's journal.go).
package journal

import (
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Journal is one write's intent. A writer killed after the commit point
// leaves it behind, and the next writer finishes the work from it: the
// files are put in place and git's index is brought up to date, so the
// half-finished write is completed rather than mistaken for a person's
// edit (which would revert it). A writer killed before the commit point
// leaves a journal whose commit the branch never reached: it is dropped,
// and nothing on disk had changed.
type Journal struct {
	Old   gitver.Hash `json:"old"`
	New   gitver.Hash `json:"new"`
	Time  time.Time   `json:"time"`
	Files []Change    `json:"files"`
	// OnDisk is set when the files already hold the new content: a
	// person's edit being committed, not a tool write.
	OnDisk bool `json:"on_disk,omitempty"`
	// BranchOnly is set when the write went to the branch alone, while a
	// person had another branch checked out: no file or git index entry
	// is the write's to finish.
	BranchOnly bool `json:"branch_only,omitempty"`
}

// Change is one file a write changes.
type Change struct {
	Path string      `json:"path"`
	Old  gitver.Hash `json:"old"` // blob before, zero when the file was absent
	New  gitver.Hash `json:"new"` // blob after, zero when the file is deleted
}

// File is the journal file at a path. It always exists once a workspace
// has been written; empty means no write is in progress. Clearing it is
// not synced: a journal that survives a power failure describes a finished
// write, and finishing it again is a no-op.
type File struct {
	path    string
	durable bool
	// written says this process wrote a journal not cleared since.
	written bool
}

// At is the journal file at path; durable syncs it (Sync).
func At(path string, durable bool) *File { return &File{path: path, durable: durable} }

// Write records j. A process killed after it still leaves the journal
// readable (it is in the page cache); durability against a power failure
// is Sync's, run alongside the objects' syncs.
func (f *File) Write(j *Journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	f.written = true
	if _, err := out.Write(b); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Written reports whether this process wrote a journal that it has not
// cleared since: a write of its own left unfinished.
func (f *File) Written() bool { return f.written }

// Sync makes the journal durable (nothing, for a workspace that is not).
func (f *File) Sync() error {
	if !f.durable {
		return nil
	}
	in, err := os.Open(f.path)
	if err != nil {
		return err
	}
	defer in.Close()
	return in.Sync()
}

// Clear empties the journal: no write in progress.
func (f *File) Clear() error {
	if err := os.Truncate(f.path, 0); err != nil {
		return err
	}
	f.written = false
	return nil
}

// Read returns the journal's write, nil when none is in progress. torn is
// set when the file holds something that is not a whole journal: its
// writer died while writing it, before the commit point.
func (f *File) Read() (j *Journal, torn bool, err error) {
	in, err := os.Open(f.path)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b, err := io.ReadAll(io.LimitReader(in, 16<<20))
	in.Close()
	if err != nil || len(b) == 0 {
		return nil, false, err
	}
	j = &Journal{}
	if err := json.Unmarshal(b, j); err != nil {
		return nil, true, nil
	}
	return j, false, nil
}
