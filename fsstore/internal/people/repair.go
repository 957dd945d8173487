package people

import (
	"fmt"
)

// What a person does with git and files beside the agents can leave the
// board needing repair that no event announces. Every write (Prepare) and
// every commit of people's edits runs the repairs first, under the write
// lock, after the mover finished any interrupted write, so that no half
// write is taken for a person's edit; a watching server also runs them
// every second while there may be something to repair (Repair).
func (p *People) Repair() error {
	if err := p.mover.Recover(); err != nil {
		return err
	}
	return p.repairs()
}

// repairs is Repair, once the mover has finished any interrupted write.
func (p *People) repairs() error {
	for _, r := range []struct {
		do   func() error
		what string
	}{
		{p.bringBackDropped, "look for agents' commits a reset dropped from the branch"}, // rescue.go
		// Before anything of the program's moves the branch: a person's
		// commit is looked at while it is the branch's last.
		{p.mergeCommittedSaves, "merge the saves people committed with git from an earlier version"},    // saves.go
		{p.placeUnplaced, "put in place the files of writes made while another branch was checked out"}, // unplaced.go
		{p.takeBackLeaked, "take writes' files back out of another branch's checkout"},                  // unplaced.go
		{p.takeDisplaced, "look at files a write replaced while a person had them open"},                // displaced.go
	} {
		if err := r.do(); err != nil {
			return fmt.Errorf("%s: %w", r.what, err)
		}
	}
	return nil
}

// Prepare readies the board for tool writes of the notes keys, once
// in the hold of the write lock that builds them, before they are built:
// a killed writer's journal finished (Mover.Recover), then the repairs
// (agents' commits a person's reset dropped come back before anything is
// built on the branch, rescue.go), then people's edits to the notes
// committed, each its own commit (pushed on its own): rare, and they drop
// the batch being built, which is built again on them. It returns
// fail.ErrBranchMoved when a person's commit moved the branch meanwhile: the
// write's one loop runs it again.
func (p *People) Prepare(keys ...string) error {
	if err := p.Repair(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	_, err := p.adoptEdits(keys)
	return err
}
