package fsstore

import (
	"errors"
	"fmt"
)

// What a person does with git and files beside the agents can leave the
// board needing repair that no event announces. Every write and every
// commit of people's edits runs the repairs first, under the write lock,
// after any interrupted write is finished; a watching server also runs them
// every second while there may be something to repair (Repair).
func (w *Workspace) repair() error {
	for _, r := range []struct {
		do   func() error
		what string
	}{
		{w.bringBackDropped, "look for agents' commits a reset dropped from the branch"},                // rescue.go
		{w.placeUnplaced, "put in place the files of writes made while another branch was checked out"}, // unplaced.go
		{w.takeBackLeaked, "take writes' files back out of another branch's checkout"},                  // unplaced.go
		{w.takeDisplaced, "look at files a write replaced while a person had them open"},                // displaced.go
	} {
		if err := r.do(); err != nil {
			return fmt.Errorf("%s: %w", r.what, err)
		}
	}
	return nil
}

// Repair runs the repairs and commits what they turned up (text taken from
// a replaced file, say) as people's edits. A watching server calls it every
// second while NeedsRepair.
func (w *Workspace) Repair() error {
	return w.withWriteLock(func() error { // which runs the repairs first
		_, _, err := w.commitEditsLocked(nil)
		if errors.Is(err, ErrWorkTreeBusy) {
			return nil
		}
		return err
	})
}

// NeedsRepair reports whether there may be something to repair that no
// event announces: files kept for a person who may still write into them,
// or another branch checked out.
func (w *Workspace) NeedsRepair() bool {
	return w.displaced.kept.Load() || w.repo.WorkTree().Elsewhere != ""
}
