package people

import (
	"bytes"
	"errors"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/catchup"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/history"
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
//     from (of equals, the branch's; else the one the save removes fewest
//     lines of, then the newest), among the last maxBases the file had,
//     the saves merged of it, and the merges put in the file lately
//     (placedTexts), provided the save keeps more than half of that
//     version's lines: a save made from the branch's version is an edit
//     of it, as ever, and a save that rewrites the note is its new text;
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
	change *commits.Change
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
func (p *People) mergeSave(rel string, committed gitver.Hash, ch *commits.Change) (saveMerge, error) {
	asIs := saveMerge{change: ch}
	if committed.IsZero() || len(ch.Content) > maxMergeBytes {
		return asIs, nil
	}
	base, baseBlob, err := p.saveBase(rel, committed, ch.Content, gitver.ZeroHash)
	if err != nil || base == nil {
		return asIs, err
	}
	branch, err := p.repo.ReadBlob(committed)
	if err != nil || len(branch) > maxMergeBytes {
		return asIs, err
	}
	merged, ok := linemerge.Merge(base, branch, ch.Content)
	if ok && note.IsNoteFile(rel) && !stillReads(merged, branch, ch.Content) {
		ok = false
	}
	if !ok && !note.IsNoteFile(rel) {
		// A blob file has no note of its own to keep a sibling of: the
		// person's text is the content, and the agents' is in history.
		return asIs, nil
	}
	saved := gitver.BlobHash(ch.Content)
	if !ok {
		if placed, err := p.replaceSave(rel, branch, saved); err != nil || !placed {
			return saveMerge{unsettled: true}, err
		}
		p.logf("a person's save of %s, made from an earlier version, changes the lines the agents changed since; "+
			"the note stays as they wrote it, and the save is kept as a sibling note linked `contradicts`", rel)
		return saveMerge{conflict: ch.Content}, nil
	}
	placed, err := p.replaceSave(rel, merged, saved)
	if err != nil || !placed {
		return saveMerge{unsettled: true}, err
	}
	savedBlob, err := p.repo.WriteBlob(ch.Content)
	if err != nil {
		return saveMerge{}, err
	}
	if err := p.placed.add(p.repo, rel, merged, placedText{onto: committed, saved: savedBlob, made: baseBlob}); err != nil {
		return saveMerge{}, err
	}
	p.reach("save merge placed")
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
	return saveMerge{change: &commits.Change{Path: rel, Content: merged, Info: fi, Base: baseBlob, Saved: savedBlob}}, nil
}

// saveBase returns the version of the file at rel that content was made
// from, when that is not the branch's (committed): the recent version it
// differs least from, the newest of equals; for a save nearest a merge
// placed in the file, what placedBase says. A save a person committed
// (madeBy, zero for a save in the work tree) was made from the versions
// before that commit only. nil when the save is an edit of the branch's
// version, or equals one of them.
func (p *People) saveBase(rel string, committed gitver.Hash, content []byte, madeBy gitver.Hash) ([]byte, gitver.Hash, error) {
	cands, err := p.baseCandidates(rel, committed, madeBy)
	if err != nil {
		return nil, gitver.ZeroHash, err
	}
	var best baseCandidate
	var bestText []byte
	bestDistance, bestRemoved := -1, 0
	lines := bytes.Count(content, []byte("\n"))
	for _, c := range cands {
		version, err := p.repo.ReadBlob(c.text)
		if err != nil || len(version) > maxMergeBytes {
			continue // not here (a shallow clone), or too large to diff
		}
		// Texts whose line counts differ by n differ by n lines at least:
		// a version that cannot come closer is not diffed (a growing log's
		// older versions, mostly).
		if bestDistance >= 0 && abs(bytes.Count(version, []byte("\n"))-lines) > bestDistance {
			continue
		}
		removed, added := linemerge.Diff(version, content)
		d := removed + added
		if d == 0 && !c.placed {
			return nil, gitver.ZeroHash, nil
		}
		// Of versions as far: the branch's, for a person who removes what
		// an agent just wrote (a claim they release) means it; of older
		// ones, the one the save removes fewest lines of (a buffer adds to
		// what it was made from), then the newer.
		closer := bestDistance < 0 || d < bestDistance ||
			d == bestDistance && best.text != committed && removed < bestRemoved
		if closer {
			best, bestText, bestDistance, bestRemoved = c, version, d, removed
		}
	}
	if !best.placed && best.base == committed || best.base.IsZero() {
		return nil, gitver.ZeroHash, nil
	}
	// A save that keeps no more than half of a version's lines was not
	// made from it: it rewrites the note, whichever version it replaced.
	if 2*bestRemoved >= linemerge.Lines(string(bestText)) {
		return nil, gitver.ZeroHash, nil
	}
	if best.placed {
		return p.placedBase(best, bestText, committed)
	}
	return bestText, best.base, nil
}

// baseCandidates returns the texts a save of the file at rel may have been
// made from, in the order saveBase weighs equals: the branch's version
// (committed) first.
func (p *People) baseCandidates(rel string, committed, madeBy gitver.Hash) ([]baseCandidate, error) {
	var recent []index.FileChange
	if err := p.idx.Read(func(s *index.Snapshot) error {
		var err error
		recent, err = s.RecentChanges(rel, maxBases)
		return err
	}); err != nil {
		return nil, err
	}
	// The branch's version first, whatever the index has caught up with;
	// then each version, and beside a merged save's the save as the person
	// made it: a later save from the same buffer holds none of what the
	// merge brought. Each is its own base.
	var cands []baseCandidate
	seen := map[gitver.Hash]bool{}
	add := func(text, base gitver.Hash, placed bool) {
		if !seen[text] {
			seen[text] = true
			cands = append(cands, baseCandidate{text: text, base: base, placed: placed})
		}
	}
	add(committed, committed, false)
	before := madeBy.IsZero()
	for _, c := range recent {
		if !before {
			before = c.Commit == madeBy // the versions after it, and its own, are not its base
			continue
		}
		add(c.Blob, c.Blob, false)
		if !strings.Contains(c.Subject, "by hand, merged") {
			continue
		}
		if info, err := p.repo.ReadCommit(c.Commit); err == nil {
			for _, saved := range note.SavedAt(info.Message, rel) {
				if h, err := gitver.ParseHash(saved); err == nil {
					add(h, h, false)
				}
			}
		}
	}
	if !before {
		// The person's commit is not among the file's last changes the
		// index holds: too far back, or not indexed yet.
		return nil, errSaveUnplaced
	}
	// Last, the merges put in the file that no version holds, and the
	// saves they were merged from (placedTexts). A person's commit was made
	// from one only if the merge was made onto a version before that
	// commit: one made onto the commit or later came after it.
	placed, err := p.placed.before(p.repo, rel, madeBy)
	if err != nil {
		return nil, err
	}
	earlier := map[gitver.Hash]bool{}
	for _, c := range cands {
		earlier[c.text] = true
	}
	for _, t := range placed {
		if madeBy.IsZero() || earlier[t.onto] {
			add(t.blob, t.onto, true)
			add(t.saved, t.made, true)
		}
	}
	return cands, nil
}

// placedBase is the base of a save made from a placed merge or the save
// it was merged from (text, the candidate c), with the branch's version at
// committed. The person's changes in the text, over the version c.base
// (the branch's the merge was made onto; the save's own base), may have
// reached the branch since (the merge committed, their `git commit` of
// the save), or not (the merge's commit failed): in the first case the
// text is the base, as the branch holds it; in the second c.base is, lest
// the changes be taken for lines the agents removed.
func (p *People) placedBase(c baseCandidate, text []byte, committed gitver.Hash) ([]byte, gitver.Hash, error) {
	from, err := p.repo.ReadBlob(c.base)
	if err != nil {
		return nil, gitver.ZeroHash, err
	}
	branch, err := p.repo.ReadBlob(committed)
	if err != nil {
		return nil, gitver.ZeroHash, err
	}
	if holdsAdded(branch, from, text) {
		return text, c.text, nil
	}
	if c.base == committed {
		return nil, gitver.ZeroHash, nil // an edit of the branch's version
	}
	return from, c.base, nil
}

// holdsAdded reports whether text holds every line that to holds more
// often than from.
func holdsAdded(text, from, to []byte) bool {
	count := func(b []byte) map[string]int {
		n := map[string]int{}
		for line := range strings.Lines(string(b)) {
			n[line]++
		}
		return n
	}
	has, was := count(text), count(from)
	for line, n := range count(to) {
		if n > was[line] && has[line] < n {
			return false
		}
	}
	return true
}

// baseCandidate is a text a save may have been made from (text), and the
// version that is the save's base when it was (base).
type baseCandidate struct {
	text, base gitver.Hash
	// placed: a merge put in the file or the save it was merged from
	// (placedTexts), in no version maybe; its base is then placedBase's.
	placed bool
}

func abs(n int) int { return max(n, -n) }

// withFrontOf is text with the front matter of from, when both read as
// note files.
func withFrontOf(from, text []byte) []byte {
	f, err := note.Parse(from)
	t, err2 := note.Parse(text)
	if err != nil || err2 != nil {
		return text
	}
	head := from[:len(from)-len(f.Body)]
	return append(append([]byte{}, head...), t.Body...)
}

// errSaveUnplaced means a person's commit could not be found among its
// file's changes in the index: looked at again later.
var errSaveUnplaced = errors.New("the person's commit is not among the file's indexed changes")

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
// which held expect, the way a write replaces a file (Mover.Place): a
// person who holds it open, or saved it again meanwhile, loses nothing.
// placed is false when the file changed under it; it is compared again.
func (p *People) replaceSave(rel string, content []byte, expect gitver.Hash) (placed bool, err error) {
	tmp, info, err := p.files.Stage(rel, content)
	if err != nil {
		return false, err
	}
	placed, err = p.mover.Place(worktree.Staged{Tmp: tmp, Info: info}, rel, expect, gitver.BlobHash(content))
	if err != nil || !placed {
		p.edits.Add([]string{rel}, false)
		return false, err
	}
	return true, p.files.SyncDir(path.Dir(rel))
}

// A save is not always whole when it is compared: an editor that writes
// in place is between its two halves, a `cat >>` is still open, vim has
// moved the note aside to write the new file. Such a file is compared
// again shortly (EditReport.Unsettled), never committed as it stands.

// deleteGrace is how long a note's file may be missing beside an editor's
// backup of it before its deletion is committed: an editor that moves the
// file aside before it writes the new one (vim's and Emacs's backup,
// `name~`) leaves no file for a moment, and a comparison in that moment
// would commit the note's deletion.
const deleteGrace = time.Second

// vanishedFiles remembers when each file that git holds was first found
// missing (deleteGrace).
type vanishedFiles struct {
	mu    sync.Mutex
	since map[string]time.Time
}

// missingFor returns how long the file at p has been found missing, noting
// now as the first time.
func (v *vanishedFiles) missingFor(p string, now time.Time) time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.since == nil {
		v.since = map[string]time.Time{}
	}
	first, ok := v.since[p]
	if !ok {
		v.since[p] = now
		return 0
	}
	return now.Sub(first)
}

// forget drops what is noted of paths: found again, or their deletion
// committed.
func (v *vanishedFiles) forget(paths []string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range paths {
		delete(v.since, p)
	}
}

// holdFreshDeletes takes out of changes the deletions of files that are
// back already, or missing for less than deleteGrace while an editor's
// backup of them is there, unless the file's content was created elsewhere
// in the same changes (a move), and reports them unsettled.
func (p *People) holdFreshDeletes(changes []commits.Change, cands map[string]*candidate, rep *EditReport) []commits.Change {
	created := map[gitver.Hash]bool{}
	var present []string
	for _, c := range changes {
		if !c.Deleted {
			created[gitver.BlobHash(c.Content)] = true
			present = append(present, c.Path)
		}
	}
	p.vanished.forget(present)
	now := time.Now()
	return slices.DeleteFunc(changes, func(c commits.Change) bool {
		if !c.Deleted {
			return false
		}
		if c := cands[c.Path]; c != nil && created[c.committed] {
			return false
		}
		if _, err := p.root.Lstat(c.Path); err == nil {
			rep.Unsettled = append(rep.Unsettled, c.Path) // back already: compared again
			return true
		}
		if _, err := p.root.Lstat(c.Path + "~"); err != nil {
			return false // no editor is saving it
		}
		if p.vanished.missingFor(c.Path, now) < deleteGrace {
			rep.Unsettled = append(rep.Unsettled, c.Path)
			return true
		}
		p.vanished.forget([]string{c.Path})
		return false
	})
}

// BeingWritten reports whether a process holds the changed file open for
// writing: a save half done, a `cat >>` not closed yet. It is compared
// again once they let it go: committed now, its half would be taken for the
// person's whole text. A file let go since its content was read changed
// meanwhile, or may have: what was read is compared again too, unless the
// file is as it was when it was read (its stat, taken before).
func (p *People) BeingWritten(ch *commits.Change) bool {
	if ch.Deleted {
		return false
	}
	if held, _ := p.files.HeldForWriting(ch.Path); held {
		return true
	}
	if ch.Info == nil {
		return false
	}
	now, err := p.root.Lstat(ch.Path)
	return err != nil || !os.SameFile(now, ch.Info) || now.Size() != ch.Info.Size() || !now.ModTime().Equal(ch.Info.ModTime())
}

// A person who saves a note and runs `git commit -a` at once commits the
// save before the program has looked at it: made from an earlier version,
// that commit drops what agents wrote since, as taking the save whole
// would. So a person's commit is looked at as their save would be: where it
// was made from an earlier version, the merge of it is committed on top, as
// the person's next edit (naming the commit, note.TrailerMerged), and what
// the agents wrote is in the note again. A commit whose save conflicts with
// the agents' lines stands as the person made it.
//
// Before every write, the person's commits since the program's last move
// are looked at (a write would build on them); a watching server also
// looks, once a second, at those of the last recentCommits in the branch's
// reflog that no later commit names as merged, should a write have built
// on one first.

// recentCommits is how far back a watching server looks for people's
// commits to merge.
const recentCommits = 10 * time.Minute

// committedSaves remembers the people's commits this process looked at.
type committedSaves struct {
	mu     sync.Mutex
	looked map[gitver.Hash]bool
}

func (c *committedSaves) lookedAt(commit gitver.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.looked[commit]
}

func (c *committedSaves) setLooked(commits []gitver.ReflogEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.looked == nil || len(c.looked) > 10000 {
		c.looked = map[gitver.Hash]bool{} // a bound; one is then looked at again, and found merged
	}
	for _, m := range commits {
		c.looked[m.New] = true
	}
}

// personsCommits returns the moves of the branch by a person's `git commit`
// that this process has not looked at, oldest first: since the program's
// last move, or (recent) within the last recentCommits.
func (p *People) personsCommits(recent bool) ([]gitver.ReflogEntry, error) {
	if !recent {
		head, err := p.repo.Head()
		if err != nil {
			return nil, err
		}
		own, found, err := p.repo.LastMoveBy(history.OwnMove)
		if err != nil || !found || head == own.New {
			return nil, err
		}
	}
	moves, err := p.repo.RecentBranchMoves()
	if err != nil {
		return nil, err
	}
	var out []gitver.ReflogEntry
	for i := len(moves) - 1; i >= 0; i-- {
		m := moves[i]
		if !recent && strings.HasPrefix(m.Message, history.OwnMove) || recent && time.Since(m.Who.When) > recentCommits {
			break
		}
		if byGitCommit(m.Message) && !m.Old.IsZero() && !p.saves.lookedAt(m.New) {
			out = append([]gitver.ReflogEntry{m}, out...)
		}
	}
	return out, nil
}

// ToLookAt reports whether a person's commit of the last recentCommits is
// still to be looked at.
func (p *People) ToLookAt() bool {
	commits, err := p.personsCommits(true)
	return err == nil && len(commits) > 0
}

// mergeCommittedSaves merges the saves people committed with git since the
// program's last move of the branch. The caller holds the write lock.
func (p *People) mergeCommittedSaves() error {
	commits, err := p.personsCommits(false)
	if err != nil || len(commits) == 0 {
		return err
	}
	return p.mergeSavesOf(commits)
}

// MergeRecentCommittedSaves merges the saves people committed with git in
// the last recentCommits that are still to be looked at. The caller holds
// the write lock.
func (p *People) MergeRecentCommittedSaves() error {
	commits, err := p.personsCommits(true)
	if err != nil || len(commits) == 0 {
		return err
	}
	return p.mergeSavesOf(commits)
}

// maxMergedWalk bounds the commits read back from the branch's head for
// the people's commits merged already.
const maxMergedWalk = 2000

// mergeSavesOf merges the saves the person's commits made, those on the
// branch that no later commit names as merged, in one commit on the
// branch's head.
func (p *People) mergeSavesOf(theirs []gitver.ReflogEntry) error {
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
	// up to the head, they hold every version before the person's commit.
	head, _, err := p.catch.CatchUp(nil, nil)
	if err != nil {
		var b *catchup.Building
		if errors.As(err, &b) {
			return nil // looked at once the index is built
		}
		return err
	}
	todo, err := p.notMergedYet(head, theirs)
	if err != nil {
		return err
	}
	restored := map[string][]byte{} // path -> the merge, on what head holds
	var merged []gitver.Hash
	for _, c := range todo {
		paths, err := p.pathsBetween(c.Old, c.New)
		if err != nil {
			return err
		}
		for _, rel := range paths {
			if !note.IsNoteFile(rel) {
				continue
			}
			did, err := p.mergeCommittedSave(c, rel, head, restored)
			if errors.Is(err, errSaveUnplaced) {
				return nil // not looked at: again at the next write, or the watcher's next look
			}
			if err != nil {
				return err
			}
			if did && !slices.Contains(merged, c.New) {
				merged = append(merged, c.New)
			}
		}
	}
	if len(restored) == 0 {
		p.saves.setLooked(theirs)
		return nil
	}
	// Committed as a write is, and put in place by the branch's move: a
	// file the person saved again since stays theirs, to be merged in
	// turn.
	var changes []commits.Change
	for _, rel := range slices.Sorted(maps.Keys(restored)) {
		held, err := p.repo.PathBlob(head, rel)
		if err != nil {
			return err
		}
		changes = append(changes, commits.Change{Path: rel, Content: restored[rel], Base: held})
	}
	p.logf("a person's `git commit` of %d note(s) saved from an earlier version dropped what agents wrote since; "+
		"the merge is committed on top, as their edit", len(changes))
	rep := &EditReport{}
	if _, err := p.commitPersonsEdits(head, changes, rep, false, merged...); err != nil {
		return err
	}
	p.saves.setLooked(theirs)
	if rep.Commit != "" && p.onEdits != nil {
		p.onEdits(rep)
	}
	return nil
}

// notMergedYet keeps of the person's commits those on head's first-parent
// history that no commit after them names as merged.
func (p *People) notMergedYet(head gitver.Hash, commits []gitver.ReflogEntry) ([]gitver.ReflogEntry, error) {
	wanted := map[gitver.Hash]bool{}
	for _, c := range commits {
		wanted[c.New] = true
	}
	done := map[gitver.Hash]bool{}
	onBranch := map[gitver.Hash]bool{}
	at := head
	for n := 0; !at.IsZero() && n < maxMergedWalk && len(onBranch) < len(wanted); n++ {
		c, err := p.repo.ReadCommit(at)
		if err != nil {
			return nil, err
		}
		if wanted[at] {
			onBranch[at] = true
		}
		for _, h := range note.MergedIn(c.Message) {
			if m, err := gitver.ParseHash(h); err == nil {
				done[m] = true
			}
		}
		at = c.FirstParent()
	}
	var out []gitver.ReflogEntry
	for _, c := range commits {
		if onBranch[c.New] && !done[c.New] {
			out = append(out, c)
		}
	}
	return out, nil
}

// mergeCommittedSave merges the save of the note file rel that the
// person's commit c made, when it was made from an earlier version, into
// restored[rel] (what the file is to hold on top of head); did says it was.
func (p *People) mergeCommittedSave(c gitver.ReflogEntry, rel string, head gitver.Hash, restored map[string][]byte) (did bool, err error) {
	parent, err := p.repo.PathBlob(c.Old, rel)
	if err != nil || parent.IsZero() {
		return false, err
	}
	saved, err := p.repo.PathBlob(c.New, rel)
	if err != nil || saved.IsZero() {
		return false, err
	}
	content, err := p.repo.ReadBlob(saved)
	if err != nil || len(content) > maxMergeBytes {
		return false, err
	}
	base, _, err := p.saveBase(rel, parent, content, c.New)
	if err != nil || base == nil {
		return false, err
	}
	before, err := p.repo.ReadBlob(parent)
	if err != nil {
		return false, err
	}
	merged, ok := linemerge.Merge(base, before, content)
	if !ok || !stillReads(merged, before, content) || bytes.Equal(merged, content) {
		return false, nil
	}
	now, ok := restored[rel]
	if !ok {
		held, err := p.repo.PathBlob(head, rel)
		if err != nil || held.IsZero() {
			return false, err
		}
		if now, err = p.repo.ReadBlob(held); err != nil {
			return false, err
		}
	}
	// What came after the person's commit stays, with the lines it
	// dropped back. Only the body is brought back: every write since
	// changed the front matter's author and time lines, which the merge
	// changed too.
	onTop, ok := linemerge.Merge(content, now, withFrontOf(content, merged))
	if !ok {
		return false, nil
	}
	restored[rel] = onTop
	return true, nil
}
