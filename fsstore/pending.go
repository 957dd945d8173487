package fsstore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// The pending writes: a clone's chain of tool writes built and not yet
// published (queue.go says how they get there and go out), recorded in a
// file in .git that names the chain's tip and the packs holding its
// objects.

// pendingFile is the record of the pending writes: the file, in .git,
// naming their tip and the packs that hold their objects; absent or naming
// a commit the branch does not lead to, there are none.
type pendingFile struct {
	path string
	logf func(format string, args ...any)
}

const (
	// pendingName is the pending writes' record's name in .git.
	pendingName = "blackboard-pending"
	// maxPending bounds the chain of pending writes.
	maxPending = 1000
)

// drop drops the pending writes: their record is removed, which
// works on a full disk too. The caller holds the write lock.
func (p *pendingFile) drop() error {
	err := os.Remove(p.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// stillPending reports whether the pending writes' record still leads
// through tip (writes built on it since are pending after it). The caller
// holds the write lock.
func (q *pipeline) stillPending(tip gitver.Hash) (bool, error) {
	now, _, err := q.pending.read()
	if err != nil || now.IsZero() {
		return false, err
	}
	if now == tip {
		return true, nil
	}
	// The chain is read here, not by git: its commits are in pending
	// packs, which the C git CLI passes over until they are published.
	_, found, err := q.commitsUntil(now, tip, maxPending)
	return found, err
}

// pendingTip is the tip of the pending writes, or head when there are none
// (or they no longer lead from head: the branch moved under them, and their
// writers build them again). The caller holds the write lock.
func (q *pipeline) pendingTip(head gitver.Hash) (gitver.Hash, error) {
	tip, chain, _, err := q.readPending(head)
	if err != nil {
		return gitver.ZeroHash, err
	}
	if len(chain) == 0 {
		return head, q.pending.save(gitver.ZeroHash)
	}
	return tip, nil
}

// save records tip as the pending writes' tip (zero: none), and
// the pending packs that hold their objects (gitver.Repo.WriteStaged), one
// a line after it. The file is written over in place, one write at its
// start: replacing it (a new file renamed over the old) would make a file
// and free one at every write, and creating files is what a busy file
// system does slowest. A reader without the write lock may meet a write
// half done: the record's header holds its length and checksum, and the
// reader reads again (read). It is not synced: after a crash,
// pending writes were not acknowledged, and whether they are published
// then or built again, nothing is lost.
func (p *pendingFile) save(tip gitver.Hash, packs ...string) error {
	var body string
	if !tip.IsZero() {
		body = strings.Join(append([]string{tip.String()}, packs...), "\n") + "\n"
	}
	f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt([]byte(pendingRecord(body)), 0)
	return errors.Join(err, f.Close())
}

// pendingMagic starts the pending writes' record: "bb-pending <length>
// <crc32>" and a newline, then the body (tip, packs). Bytes after the
// body, left by a longer record before, are no part of it.
const pendingMagic = "bb-pending"

func pendingRecord(body string) string {
	return fmt.Sprintf("%s %d %08x\n%s", pendingMagic, len(body), crc32.ChecksumIEEE([]byte(body)), body)
}

// parsePendingRecord returns a record's body; ok is false for one cut
// short or not matching its checksum (being written, or damaged).
func parsePendingRecord(b []byte) (body string, ok bool) {
	header, rest, found := strings.Cut(string(b), "\n")
	var n int
	var sum uint32
	if !found {
		return "", false
	}
	if _, err := fmt.Sscanf(header, pendingMagic+" %d %08x", &n, &sum); err != nil || n < 0 || n > len(rest) {
		return "", false
	}
	if crc32.ChecksumIEEE([]byte(rest[:n])) != sum {
		return "", false
	}
	return rest[:n], true
}

// packs is the pending packs the pending writes' file names.
func (p *pendingFile) packs() []string {
	_, packs, _ := p.read()
	return packs
}

// pendingRereads bounds how often a reader reads the pending writes' file
// again while it meets a record half written.
const pendingRereads = 200

// read reads the pending writes' file: their tip and packs; a
// zero tip when there is none. A record half written is read again, until
// its writer is done; one that stays damaged (a power failure cut it)
// names no pending writes: none was acknowledged.
func (p *pendingFile) read() (gitver.Hash, []string, error) {
	var body string
	for try := 0; ; try++ {
		b, err := os.ReadFile(p.path)
		if errors.Is(err, os.ErrNotExist) {
			return gitver.ZeroHash, nil, nil
		}
		if err != nil {
			return gitver.ZeroHash, nil, err
		}
		var ok bool
		if body, ok = parsePendingRecord(b); ok {
			break
		}
		if first, _, _ := strings.Cut(string(b), "\n"); bytes.HasSuffix(b, []byte("\n")) && len(first) == 40 {
			if _, err := gitver.ParseHash(first); err == nil {
				body = string(b) // written whole and renamed into place, by an earlier version
				break
			}
		}
		if try == pendingRereads {
			p.logf("the pending writes' file is damaged; no write is pending")
			return gitver.ZeroHash, nil, nil
		}
		time.Sleep(100 * time.Microsecond)
	}
	lines := strings.Fields(body)
	if len(lines) == 0 {
		return gitver.ZeroHash, nil, nil
	}
	tip, err := gitver.ParseHash(lines[0])
	if err != nil {
		return gitver.ZeroHash, nil, nil
	}
	return tip, lines[1:], nil
}

// rebasePending moves the pending writes, built on old, onto the branch
// that followed the remote: each keeps its author, message and changes,
// and so its expect_version check and the version it will be acknowledged
// at, as long as its note is at the version it was built on: the remote's
// new commits counted no version of it (by the one rule, which counts a
// person's merge too, see syncIndex). The first write whose note moved is
// dropped with those after it, for their writers to build again on what
// holds now. The caller holds the write lock.
func (q *pipeline) rebasePending(old gitver.Hash) error {
	head, err := q.repo.Head()
	if err != nil {
		return err
	}
	tip, _, err := q.pending.read()
	if err != nil || tip.IsZero() || head == old {
		return err
	}
	chain, found, err := q.commitsUntil(tip, old, maxPending)
	if err != nil || !found {
		return errors.Join(err, q.pending.save(gitver.ZeroHash))
	}
	if forward, err := q.repo.IsAncestor(old, head); err != nil || !forward {
		return errors.Join(err, q.pending.save(gitver.ZeroHash))
	}
	// The versions at the new head, as every reader counts them.
	if _, _, err := q.catch.CatchUp(nil, nil); err != nil {
		return err
	}
	versions := map[string]int{}
	versionAt := func(key string) (int, error) {
		if v, ok := versions[key]; ok {
			return v, nil
		}
		n, err := q.noteAtHead(key, head)
		versions[key] = n.Version
		return n.Version, err
	}
	var theirs map[string]bool // the files the remote changed, for a commit no write's
	parent := head
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		diff, err := q.repo.Changes(c)
		if err != nil {
			return err
		}
		if key, built, ok := q.messageKey(c.Message); ok {
			at, err := versionAt(key)
			if err != nil {
				return err
			}
			if built != at+1 {
				break // its note moved: the writer builds it again
			}
			versions[key] = built
		} else {
			if theirs == nil {
				diff, err := q.changedSince(old, head)
				if err != nil {
					return err
				}
				theirs = make(map[string]bool, len(diff))
				for _, d := range diff {
					theirs[d.Path] = true
				}
			}
			if slices.ContainsFunc(diff, func(d gitver.PathChange) bool { return theirs[d.Path] }) {
				break
			}
		}
		changes := make(map[string]gitver.Hash, len(diff))
		for _, d := range diff {
			changes[d.Path] = d.New
		}
		rebased, err := q.repo.BuildCommit(gitver.CommitRequest{Parent: parent, Changes: changes, Author: c.Author, Message: c.Message})
		if err != nil {
			return err
		}
		if err := rebased.Write(); err != nil {
			return err
		}
		parent = rebased.Hash
	}
	if parent == head {
		return q.pending.save(gitver.ZeroHash)
	}
	return q.pending.save(parent)
}

// readPending reads the pending writes' tip, their commits, newest first,
// and the pending packs that hold their objects; none when they do not
// lead from head.
func (q *pipeline) readPending(head gitver.Hash) (gitver.Hash, []*gitver.CommitInfo, []string, error) {
	tip, packs, err := q.pending.read()
	if err != nil || tip.IsZero() || tip == head {
		return head, nil, nil, err
	}
	chain, found, err := q.commitsUntil(tip, head, maxPending)
	if err != nil {
		// Their objects are gone or damaged (written unsynced, then a
		// power failure): none of them was acknowledged, and their
		// writers, if alive, build them again.
		q.logf("the pending writes (%s) cannot be read, and are dropped: %v", tip.Short(), err)
		return head, nil, nil, nil
	}
	if !found {
		return head, nil, nil, nil
	}
	return tip, chain, packs, nil
}
