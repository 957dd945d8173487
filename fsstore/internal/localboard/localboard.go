// Package localboard is the upstream of a board without a remote: a write
// counts once the local branch holds it, and nothing is published to, or
// learned from, anywhere else.
package localboard

import (
	"context"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Board is the local branch as the place where writes count.
type Board struct{}

// OnBranch: a write counts on the local branch.
func (Board) OnBranch() bool { return true }

// Name is "": no remote.
func (Board) Name() string { return "" }

// Await never holds a write back: no other clone takes turns.
func (Board) Await(bool) bool { return false }

// Publish has nowhere to publish: the branch move is the publication.
func (Board) Publish(gitver.Hash) error { return nil }

// Learn has no one to learn from.
func (Board) Learn(context.Context) error { return nil }

// Published is zero: writes count where the local branch is.
func (Board) Published() (gitver.Hash, error) { return gitver.ZeroHash, nil }
