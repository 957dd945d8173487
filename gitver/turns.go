package gitver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Turns: how clones that push to one remote take turns. The remote's
// branch is a compare-and-swap: a clone that lost a race must fetch,
// build its writes again on what won and push again, while the clone that
// won pushes its next writes at once. Where that round takes a loser
// longer than a winner's push (a slow disk, a busy host), the winner wins
// every race and the loser never gets a write through. So a clone that
// lost says so on the remote: it pushes a small commit (a turn) on a ref of
// its own kind beside the branch, refs/blackboard/turns/<branch>. Every
// push of the branch is atomic with a lease on that ref at the turn the
// pusher last fetched: a clone that someone announced a turn to since is
// refused (ErrOthersWaiting), fetches, and sees who waits and for how long
// it needs the remote quiet; the caller then holds its next push back. The
// turns are a chain of empty commits, so the ref only ever moves forward
// (a remote that refuses non-fast-forward updates and deletions takes it),
// and it never holds the board's content.

// ErrOthersWaiting means a push was refused because another clone
// announced, since this clone last fetched, that it waits for its turn to
// push: the branch did not move. It is ErrRemoteMoved too: fetch.
var ErrOthersWaiting = fmt.Errorf("another clone waits for its turn to push: %w", ErrRemoteMoved)

// Turn is one clone's word on the remote that it lost a race to push.
type Turn struct {
	Clone string // the waiting clone's id (CloneID)
	// Lost counts the races in a row the clone lost.
	Lost int
	// Needs is how long the clone took, the last time, from losing a race
	// to pushing again; zero when it does not know yet.
	Needs time.Duration
	// Taken: the clone got its push through; no one waits for it now.
	Taken bool
}

// turnsRef is the ref, on the remote, of the branch's turns.
func (r *Repo) turnsRef() string {
	return "refs/blackboard/turns/" + strings.TrimPrefix(r.branch, "refs/heads/")
}

// turnsTracking is the ref that holds the turn this clone last knew of.
func (r *Repo) turnsTracking(remote string) string {
	return "refs/blackboard/remotes/" + remote + "/turns/" + strings.TrimPrefix(r.branch, "refs/heads/")
}

// turnsRefspec fetches every branch's turns, and none when the remote has
// none yet (a pattern matches nothing without failing). Forced: turns
// carry no content, and a fetch must not fail over them.
func turnsRefspec(remote string) string {
	return "+refs/blackboard/turns/*:refs/blackboard/remotes/" + remote + "/turns/*"
}

// AnnouncedTurn is a turn on the remote, with its commit and when it was
// made (by the announcing clone's clock).
type AnnouncedTurn struct {
	Turn
	Hash Hash
	When time.Time
}

// RecentTurns returns the last turns announced on the remote, as this
// clone last fetched them, newest first, at most max.
func (r *Repo) RecentTurns(remote string, max int) ([]AnnouncedTurn, error) {
	at, err := r.readRef(r.turnsTracking(remote))
	if err != nil {
		return nil, err
	}
	var out []AnnouncedTurn
	for !at.IsZero() && len(out) < max {
		c, err := r.ReadCommit(at)
		if err != nil {
			return out, err
		}
		t, ok := parseTurn(c.Message)
		if !ok {
			break // the first turn, which says nothing
		}
		out = append(out, AnnouncedTurn{Turn: t, Hash: at, When: c.Committer.When})
		at = c.FirstParent()
	}
	return out, nil
}

// AnnounceTurn says on the remote that this clone waits for its turn to
// push. Another clone's announcement that came first is no failure: the
// clones that won yield to one waiting clone as they would to another.
func (r *Repo) AnnounceTurn(ctx context.Context, remote string, t Turn) error {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	prev, err := r.readRef(r.turnsTracking(remote))
	if err != nil {
		return err
	}
	parent, err := r.turnsBase(prev)
	if err != nil {
		return err
	}
	token, err := r.writeTurn(parent, t)
	if err != nil {
		return err
	}
	stdout, stderr, err := gitCommand(ctx, r.dir, "push", "--porcelain", "--quiet", "--force-with-lease="+r.turnsRef()+":"+prev.String(),
		remote, token.String()+":"+r.turnsRef())
	switch {
	case err == nil:
		return r.setRef(r.turnsTracking(remote), token)
	case strings.Contains(stdout, "!\t"):
		return nil // another clone announced first
	}
	return &RemoteError{Op: "push", Remote: remote, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr+"\n"+stdout, err)}
}

// writeTurn writes t as the turn that follows parent.
func (r *Repo) writeTurn(parent Hash, t Turn) (Hash, error) {
	who := Signature{Name: "blackboard-mcp", Email: "blackboard-mcp@blackboard.local", When: time.Now()}
	return r.writeTurnCommit(CommitObject{Parents: []Hash{parent}, Author: who, Committer: who, Message: t.message()})
}

// turnsBase is the turn a new one follows: prev, or for a remote without
// turns the first turn, the same commit on every clone (an empty tree,
// a fixed author and time), so that clones that make it at once agree.
func (r *Repo) turnsBase(prev Hash) (Hash, error) {
	if !prev.IsZero() {
		return prev, nil
	}
	who := Signature{Name: "blackboard-mcp", Email: "blackboard-mcp@blackboard.local", When: time.Unix(0, 0).UTC()}
	return r.writeTurnCommit(CommitObject{Author: who, Committer: who,
		Message: "turns of " + strings.TrimPrefix(r.branch, "refs/heads/") + "\n\nClones that lost a race to push say so here; the others let them go first.\n"})
}

// RemoteRefs asks the remote where its branch and the branch's turns are
// now, without fetching anything: zero for a ref it does not have.
func (r *Repo) RemoteRefs(ctx context.Context, remote string) (branch, turns Hash, err error) {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	stdout, stderr, err := gitCommand(ctx, r.dir, "ls-remote", remote, r.branch, r.turnsRef())
	if err != nil {
		return ZeroHash, ZeroHash, &RemoteError{Op: "ls-remote", Remote: remote, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr, err)}
	}
	for _, line := range strings.Split(stdout, "\n") {
		h, ref, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		switch ref {
		case r.branch:
			branch, err = ParseHash(h)
		case r.turnsRef():
			turns, err = ParseHash(h)
		}
		if err != nil {
			return ZeroHash, ZeroHash, err
		}
	}
	return branch, turns, nil
}

// KnownRefs is where this clone last knew the remote's branch and the
// branch's turns to be: what RemoteRefs says when nothing moved since.
func (r *Repo) KnownRefs(remote string) (branch, turns Hash, err error) {
	if branch, err = r.Tracking(remote); err != nil {
		return ZeroHash, ZeroHash, err
	}
	turns, err = r.readRef(r.turnsTracking(remote))
	return branch, turns, err
}

// turnLease is what a push of the branch adds to be refused when a clone
// announced a turn since this one last fetched: a lease on the turns ref
// at the turn it knows, and that turn as the ref's value (no change; for a
// remote without turns, the first turn, which the push makes), or, for a
// clone that takes its turn, a turn that says so. The push must then be
// atomic.
func (r *Repo) turnLease(remote string, taken *Turn) (lease, refspec string, err error) {
	known, err := r.readRef(r.turnsTracking(remote))
	if err != nil {
		return "", "", err
	}
	value, err := r.turnsBase(known)
	if err != nil {
		return "", "", err
	}
	if taken != nil {
		if value, err = r.writeTurn(value, *taken); err != nil {
			return "", "", err
		}
	}
	lease = "--force-with-lease=" + r.turnsRef() + ":"
	if !known.IsZero() {
		lease += known.String()
	}
	return lease, value.String() + ":" + r.turnsRef(), nil
}

// writeTurnCommit writes c, a turn, on the empty tree, and the tree with
// it: git knows the empty tree without storing it, but `git fsck` counts
// it missing in a repository that does not.
func (r *Repo) writeTurnCommit(c CommitObject) (Hash, error) {
	w := r.newObjectWriter()
	if _, err := w.write("tree", nil); err != nil {
		return ZeroHash, err
	}
	c.Tree = emptyTree
	h, err := w.writeCommit(c)
	if err != nil {
		return ZeroHash, err
	}
	return h, w.flush()
}

// emptyTree is the name of git's empty tree.
var emptyTree = Hash{0x4b, 0x82, 0x5d, 0xc6, 0x42, 0xcb, 0x6e, 0xb9, 0xa0, 0x60, 0xe5, 0x4b, 0xf8, 0xd6, 0x92, 0x88, 0xfb, 0xee, 0x49, 0x04}

const (
	turnCloneTrailer = "Blackboard-Clone: "
	turnLostTrailer  = "Blackboard-Lost: "
	turnNeedsTrailer = "Blackboard-Needs: "
)

func (t Turn) message() string {
	subject := "clone " + t.Clone + " waits to push"
	if t.Taken {
		subject = "clone " + t.Clone + " took its turn"
	}
	return fmt.Sprintf("%s\n\n%s%s\n%s%d\n%s%s\n", subject, turnCloneTrailer, t.Clone, turnLostTrailer, t.Lost,
		turnNeedsTrailer, t.Needs.Round(time.Millisecond))
}

func parseTurn(msg string) (t Turn, ok bool) {
	t.Taken = strings.HasSuffix(strings.SplitN(msg, "\n", 2)[0], " took its turn")
	for _, line := range strings.Split(msg, "\n") {
		switch {
		case strings.HasPrefix(line, turnCloneTrailer):
			t.Clone, ok = strings.TrimPrefix(line, turnCloneTrailer), true
		case strings.HasPrefix(line, turnLostTrailer):
			t.Lost, _ = strconv.Atoi(strings.TrimPrefix(line, turnLostTrailer))
		case strings.HasPrefix(line, turnNeedsTrailer):
			t.Needs, _ = time.ParseDuration(strings.TrimPrefix(line, turnNeedsTrailer))
		}
	}
	return t, ok
}

// cloneIDName is the file, in .git, that holds this clone's id.
const cloneIDName = "blackboard-clone-id"

// CloneID is this clone's id among the clones of its remote: random, made
// once and kept in .git (a copy of the directory shares it, as it shares
// everything else of the clone's).
func (r *Repo) CloneID() (string, error) {
	p := filepath.Join(r.gitDir, cloneIDName)
	if b, err := os.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b)), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var raw [6]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	// Written whole, then linked into place: of two processes making it at
	// once, the first link stays, and both read it.
	tmp := p + "." + id
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o644); err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	b, err := os.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}
