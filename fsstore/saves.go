package fsstore

import (
	"bytes"
	"errors"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/linemerge"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/worktree"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A person's save is made from the version their editor or shell read: a
// buffer opened a while ago, a file a `>>` appended to while a write was on
// its way. When agents wrote the note since, the save holds that earlier
// version with the person's changes, and taken whole it would drop what
// the agents wrote. So a save is merged three ways, by lines (linemerge):
//
//   - its base is the recent version of the file the save differs least
//     from (the newest of equals), among the last maxBases the file had
//     and the saves merged of it, provided the save keeps more than half
//     of that version's lines: a save made from the branch's version is an
//     edit of it, as ever, and a save that rewrites the note is its new
//     text;
//   - what the agents changed since the base and what the person changed
//     are both kept; lines both added at the same place are all kept, the
//     agents' first, as for a log. The merge goes into the file, and is
//     committed as the person's edit;
//   - where both changed the same lines differently (or the merged front
//     matter no longer reads), the branch's version stays the note, and
//     the person's whole text becomes a sibling note linked `contradicts`.
//
// A save that equals an earlier version is not merged: that is a person
// restoring it, or a git command's leftover (stale.go judges which).

const (
	// maxBases bounds the recent versions a save's base is looked for
	// among.
	maxBases = 100
	// maxMergeBytes bounds the files merged: a larger save is taken whole,
	// as a diff of it costs more than a write may wait.
	maxMergeBytes = 1 << 20
)

// saveMerge is what became of a person's save.
type saveMerge struct {
	// change is the save to commit: as it was, or merged (its base set).
	change *fileChange
	// conflict is the person's whole text when it could not be merged:
	// the branch's version is back in the file, and the text goes to a
	// sibling note.
	conflict []byte
	// unsettled: the file changed again while it was merged, or a person
	// is writing it; it is compared again shortly.
	unsettled bool
}

// mergeSave merges a person's save ch of the file at rel, whose branch
// holds committed, with what the branch got since the save's base. The
// caller holds the write lock.
func (p *people) mergeSave(rel string, committed gitver.Hash, ch *fileChange) (saveMerge, error) {
	asIs := saveMerge{change: ch}
	if committed.IsZero() || len(ch.content) > maxMergeBytes {
		return asIs, nil
	}
	base, baseBlob, err := p.saveBase(rel, committed, ch.content, gitver.ZeroHash)
	if err != nil || base == nil {
		return asIs, err
	}
	branch, err := p.repo.ReadBlob(committed)
	if err != nil || len(branch) > maxMergeBytes {
		return asIs, err
	}
	merged, ok := linemerge.Merge(base, branch, ch.content)
	if ok && note.IsNoteFile(rel) && !stillReads(merged, branch, ch.content) {
		ok = false
	}
	if !ok && !note.IsNoteFile(rel) {
		// A blob file has no note of its own to keep a sibling of: the
		// person's text is the content, and the agents' is in history.
		return asIs, nil
	}
	saved := gitver.BlobHash(ch.content)
	if !ok {
		if placed, err := p.replaceSave(rel, branch, saved); err != nil || !placed {
			return saveMerge{unsettled: true}, err
		}
		p.logf("a person's save of %s, made from an earlier version, changes the lines the agents changed since; "+
			"the note stays as they wrote it, and the save is kept as a sibling note linked `contradicts`", rel)
		return saveMerge{conflict: ch.content}, nil
	}
	placed, err := p.replaceSave(rel, merged, saved)
	if err != nil || !placed {
		return saveMerge{unsettled: true}, err
	}
	p.logf("a person's save of %s, made from an earlier version, is merged with what the agents wrote since", rel)
	if gitver.BlobHash(merged) == committed {
		return saveMerge{}, nil // the branch held all the person changed
	}
	// The stat is taken before the content is read: a save landing after
	// the read has another, and never looks committed.
	fi, err := p.root.Lstat(rel)
	if err != nil {
		return saveMerge{unsettled: true}, nil
	}
	if !p.files.Holds(rel, gitver.BlobHash(merged)) {
		return saveMerge{unsettled: true}, nil
	}
	savedBlob, err := p.repo.WriteBlob(ch.content)
	if err != nil {
		return saveMerge{}, err
	}
	return saveMerge{change: &fileChange{path: rel, content: merged, info: fi, base: baseBlob, saved: savedBlob}}, nil
}

// saveBase returns the version of the file at rel that content was made
// from, when that is not the branch's (committed): the recent version it
// differs least from, the newest of equals, leaving out the version
// exclude (a person's commit of the save itself). nil when the save is an
// edit of the branch's version, or equals one of them.
func (p *people) saveBase(rel string, committed gitver.Hash, content []byte, exclude gitver.Hash) ([]byte, gitver.Hash, error) {
	var recent []index.FileChange
	if err := p.idx.Read(func(s *index.Snapshot) error {
		var err error
		recent, err = s.RecentChanges(rel, maxBases)
		return err
	}); err != nil {
		return nil, gitver.ZeroHash, err
	}
	// The branch's version first, whatever the index has caught up with;
	// then each version, and beside a merged save's the save as the person
	// made it: a later save from the same buffer holds none of what the
	// merge brought.
	blobs := []gitver.Hash{committed}
	for _, c := range recent {
		blobs = append(blobs, c.Blob)
		if !strings.Contains(c.Subject, "by hand, merged") {
			continue
		}
		if info, err := p.repo.ReadCommit(c.Commit); err == nil {
			for _, saved := range note.SavedAt(info.Message, rel) {
				if h, err := gitver.ParseHash(saved); err == nil {
					blobs = append(blobs, h)
				}
			}
		}
	}
	blobs = slices.DeleteFunc(blobs, func(h gitver.Hash) bool { return h == exclude })
	blobs = slices.Compact(blobs)
	var best []byte
	bestBlob, bestDistance := gitver.ZeroHash, -1
	lines := bytes.Count(content, []byte("\n"))
	for _, b := range blobs {
		version, err := p.repo.ReadBlob(b)
		if err != nil || len(version) > maxMergeBytes {
			continue // not here (a shallow clone), or too large to diff
		}
		// Texts whose line counts differ by n differ by n lines at least:
		// a version that cannot come closer is not diffed (a growing log's
		// older versions, mostly).
		if bestDistance >= 0 && abs(bytes.Count(version, []byte("\n"))-lines) >= bestDistance {
			continue
		}
		d := linemerge.Distance(version, content)
		if d == 0 {
			return nil, gitver.ZeroHash, nil
		}
		if bestDistance < 0 || d < bestDistance {
			best, bestBlob, bestDistance = version, b, d
		}
	}
	if bestBlob == committed || bestBlob.IsZero() {
		return nil, gitver.ZeroHash, nil
	}
	// A save that keeps no more than half of a version's lines was not
	// made from it: it rewrites the note, whichever version it replaced.
	if removed, _ := linemerge.Diff(best, content); 2*removed >= linemerge.Lines(string(best)) {
		return nil, gitver.ZeroHash, nil
	}
	return best, bestBlob, nil
}

func abs(n int) int { return max(n, -n) }

// stillReads reports whether a merged note file reads as a note when both
// sides did: a union of two front-matter lines of one key would not.
func stillReads(merged, branch, person []byte) bool {
	if _, err := note.Parse(merged); err == nil {
		return true
	}
	_, errBranch := note.Parse(branch)
	_, errPerson := note.Parse(person)
	return errBranch != nil || errPerson != nil
}

// replaceSave puts content in the file at rel in place of a person's save,
// which held expect, the way a write replaces a file (mover.place): a
// person who holds it open, or saved it again meanwhile, loses nothing.
// placed is false when the file changed under it; it is compared again.
func (p *people) replaceSave(rel string, content []byte, expect gitver.Hash) (placed bool, err error) {
	tmp, info, err := p.files.Stage(rel, content)
	if err != nil {
		return false, err
	}
	placed, err = p.mover.place(worktree.Staged{Tmp: tmp, Info: info}, rel, expect, gitver.BlobHash(content))
	if err != nil || !placed {
		p.edits.add([]string{rel}, false)
		return false, err
	}
	return true, p.files.SyncDir(path.Dir(rel))
}

// A person who saves a note and runs `git commit -a` at once commits the
// save before the program has looked at it: made from an earlier version,
// that commit drops what agents wrote since, as taking the save whole
// would. So the person's commits since the program's last move are looked
// at as their saves would be: where one was made from an earlier version,
// the merge of it is committed on top, as the person's next edit, and
// what the agents wrote is in the note again. A commit whose save conflicts
// with the agents' lines stands as the person made it.

// committedSaves remembers the branch head whose people's commits were
// looked at and needed nothing, so that a person's commit is looked at once
// by each process, not at every write or every second after it.
type committedSaves struct {
	mu     sync.Mutex
	looked gitver.Hash
}

func (c *committedSaves) lookedAt(head gitver.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.looked == head
}

func (c *committedSaves) setLooked(head gitver.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.looked = head
}

// toLookAt reports whether someone other than the program moved the branch
// since its last move, to a head not looked at yet: a person's commit,
// which may hold a save to merge.
func (p *people) toLookAt() bool {
	head, err := p.repo.Head()
	if err != nil || p.saves.lookedAt(head) {
		return false
	}
	own, found, err := p.repo.LastMoveBy(ownMove)
	return err == nil && found && head != own.New
}

// mergeCommittedSaves merges the saves people committed with git since the
// program's last move of the branch (its reflog tells). The caller holds
// the write lock.
func (p *people) mergeCommittedSaves() error {
	head, err := p.repo.Head()
	if err != nil {
		return err
	}
	if p.saves.lookedAt(head) {
		return nil
	}
	own, found, err := p.repo.LastMoveBy(ownMove)
	if err != nil || !found || head == own.New {
		return err
	}
	// `git commit` moves the branch before it lets git's index go: the
	// merge waits for it a moment, as a write does (adoptEdits), rather
	// than let the write move the branch past the commit unlooked at.
	for deadline := time.Now().Add(indexBusyWait); ; time.Sleep(indexBusyPoll) {
		wt := p.repo.WorkTree()
		if wt.Busy() == "" {
			break
		}
		if wt.Operation != "" || wt.Elsewhere != "" || time.Now().After(deadline) {
			return nil // the files are git's now; looked at once it is done
		}
	}
	// The versions a save's base is found among are the index's: caught
	// up to the person's commit, they hold every version before it.
	if _, _, err := p.catch.CatchUp(nil, nil); err != nil {
		var b *catchup.Building
		if errors.As(err, &b) {
			return nil // looked at once the index is built
		}
		return err
	}
	moves, err := p.repo.RecentBranchMoves()
	if err != nil {
		return err
	}
	var commits []gitver.ReflogEntry // the person's, oldest first
	for i := len(moves) - 1; i >= 0 && !strings.HasPrefix(moves[i].Message, ownMove); i-- {
		if byGitCommit(moves[i].Message) && !moves[i].Old.IsZero() {
			commits = append([]gitver.ReflogEntry{moves[i]}, commits...)
		}
	}
	restored := map[string][]byte{} // path -> the merge, on what head holds
	for _, c := range commits {
		paths, err := p.pathsBetween(c.Old, c.New)
		if err != nil {
			return err
		}
		for _, rel := range paths {
			if !note.IsNoteFile(rel) {
				continue
			}
			if err := p.mergeCommittedSave(c, rel, head, restored); err != nil {
				return err
			}
		}
	}
	if len(restored) == 0 {
		p.saves.setLooked(head)
		return nil
	}
	// Committed as a write is, and put in place by the branch's move: a
	// file the person saved again since stays theirs, to be merged in
	// turn.
	var changes []fileChange
	for _, rel := range slices.Sorted(maps.Keys(restored)) {
		held, err := p.repo.PathBlob(head, rel)
		if err != nil {
			return err
		}
		changes = append(changes, fileChange{path: rel, content: restored[rel], base: held})
	}
	p.logf("a person's `git commit` of %d note(s) saved from an earlier version dropped what agents wrote since; "+
		"the merge is committed on top, as their edit", len(changes))
	rep := &EditReport{}
	if _, err := p.commitPersonsEdits(head, changes, rep, false); err != nil {
		return err
	}
	if rep.Commit != "" && p.onEdits != nil {
		p.onEdits(rep)
	}
	return nil
}

// mergeCommittedSave merges the save of the note file rel that the
// person's commit c made, when it was made from an earlier version, into
// restored[rel] (what the file is to hold on top of head).
func (p *people) mergeCommittedSave(c gitver.ReflogEntry, rel string, head gitver.Hash, restored map[string][]byte) error {
	parent, err := p.repo.PathBlob(c.Old, rel)
	if err != nil || parent.IsZero() {
		return err
	}
	saved, err := p.repo.PathBlob(c.New, rel)
	if err != nil || saved.IsZero() {
		return err
	}
	content, err := p.repo.ReadBlob(saved)
	if err != nil || len(content) > maxMergeBytes {
		return err
	}
	base, _, err := p.saveBase(rel, parent, content, saved)
	if err != nil || base == nil {
		return err
	}
	before, err := p.repo.ReadBlob(parent)
	if err != nil {
		return err
	}
	merged, ok := linemerge.Merge(base, before, content)
	if !ok || !stillReads(merged, before, content) || bytes.Equal(merged, content) {
		return nil
	}
	now, ok := restored[rel]
	if !ok {
		held, err := p.repo.PathBlob(head, rel)
		if err != nil || held.IsZero() {
			return err
		}
		if now, err = p.repo.ReadBlob(held); err != nil {
			return err
		}
	}
	// What came after the person's commit stays, with the lines it
	// dropped back.
	if onTop, ok := linemerge.Merge(content, now, merged); ok {
		restored[rel] = onTop
	}
	return nil
}
