package catchup

import (
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// bulkCommits is how many commits make a catch-up a bulk write, with the
// larger page cache for its transaction (index.Tx.Bulk).
const bulkCommits = 1000

// syncIndex brings the index from the commit it reflects to target, in tx,
// and returns target's cursor.
//
// The index holds every commit target reaches, parents before children, in
// the order a depth-first walk that follows first parents first finishes
// them, each with the files whose content differs from a parent's. A note's
// version is the number of its commits: the same number on every clone,
// whichever side a merge has first, never lower on a commit that reaches
// another, and equal to the first-parent count on a linear history. The
// cursor is the number of commits.
//
// When the branch moved forward, only the commits new to the index are
// added. When it moved to a commit that does not reach the indexed one (a
// reset, a rewritten history), the index is first cut back to the newest
// commit both share at which the index was whole, undoing the version
// counts of what came after.
func (c *Catcher) sync(tx *index.Tx, target gitver.Hash, hint map[gitver.Hash][]gitver.PathChange, progress Progress) (int, error) {
	indexed, seq, err := tx.Head()
	if err != nil {
		return 0, err
	}
	plan, err := c.planSync(tx, target, indexed, 0, progress)
	if err != nil {
		return 0, err
	}
	refresh := map[string]bool{}
	if !plan.reachesIndexed {
		base, baseSeq, err := c.cutPoint(tx, plan.boundary)
		if err != nil {
			return 0, err
		}
		notes, err := tx.Truncate(baseSeq)
		if err != nil {
			return 0, err
		}
		for _, n := range notes {
			refresh[n] = true
		}
		seq = baseSeq
		if plan, err = c.planSync(tx, target, base, 0, progress); err != nil {
			return 0, err
		}
	}
	if len(plan.order) >= bulkCommits {
		if err := tx.Bulk(); err != nil {
			return 0, err
		}
	}
	if seq, err = c.apply(tx, plan, 0, len(plan.order), seq, hint, refresh, progress); err != nil {
		return 0, err
	}
	if err := c.refreshNotes(tx, refresh, progress); err != nil {
		return 0, err
	}
	return seq, tx.SetHead(target)
}

// apply adds the plan's commits from..to-1 to the index in tx, in order,
// numbering them from after seq, and returns the last one's number. The
// notes they touched are added to refresh; hint gives the changes of
// commits already diffed.
func (c *Catcher) apply(tx *index.Tx, plan *syncPlan, from, to, seq int, hint map[gitver.Hash][]gitver.PathChange,
	refresh map[string]bool, progress Progress) (int, error) {
	for i := from; i < to; i++ {
		ci := plan.order[i]
		if progress != nil && i%500 == 0 {
			progress("commits", i, len(plan.order))
		}
		changes, ok := hint[ci.Hash]
		if !ok {
			var err error
			if changes, err = c.repo.Changes(ci); err != nil {
				return 0, err
			}
		}
		seq++
		rows := make([]index.Change, 0, len(changes))
		for _, ch := range changes {
			key, _ := note.KeyOf(ch.Path)
			rows = append(rows, index.Change{Path: ch.Path, Note: key, Old: ch.Old, New: ch.New})
		}
		touched, err := tx.AddCommit(index.Commit{
			Seq: seq, Hash: ci.Hash, Author: ci.Author.Name, Email: ci.Author.Email,
			Time: ci.Author.When.Unix(), Subject: ci.Subject(), ByProgram: note.ByProgram(ci.Message),
			Closed: plan.closed[i],
		}, rows)
		if err != nil {
			return 0, err
		}
		for _, n := range touched {
			refresh[n] = true
		}
	}
	return seq, nil
}

// refreshNotes reads the notes in refresh afresh from git into the index.
func (c *Catcher) refreshNotes(tx *index.Tx, refresh map[string]bool, progress Progress) error {
	done := 0
	for key := range refresh {
		if progress != nil && done%500 == 0 {
			progress("notes", done, len(refresh))
		}
		done++
		if err := c.refreshNote(tx, key); err != nil {
			return err
		}
	}
	if progress != nil {
		progress("notes", len(refresh), len(refresh))
	}
	return nil
}

// commitLookup finds a commit in the index: a write transaction or a
// snapshot.
type commitLookup interface {
	CommitOf(h gitver.Hash) (index.IndexedCommit, bool, error)
}

// syncPlan is what target adds to an index that holds exactly the commits
// its head reaches.
type syncPlan struct {
	order  []*gitver.CommitInfo // the commits new to the index, parents first
	closed []bool               // for each: the index is then exactly what it reaches
	// boundary lists the indexed commits the walk met.
	boundary []gitver.Hash
	// reachesIndexed is false when target does not reach the index's head:
	// the index must be cut back before the plan can be applied.
	reachesIndexed bool
}

// planSync walks from target to the commits the index holds. A commit on
// target's first-parent history that reaches the index's head is closed:
// everything before it in the order is what it reaches. With a limit, a
// walk that would read more commits than that stops with errTooFar.
func (c *Catcher) planSync(tx commitLookup, target, indexed gitver.Hash, limit int, progress Progress) (*syncPlan, error) {
	plan := &syncPlan{reachesIndexed: indexed.IsZero() || target == indexed}
	if target.IsZero() || target == indexed {
		return plan, nil
	}
	met := map[gitver.Hash]bool{}
	isIndexed := func(h gitver.Hash) (bool, error) {
		if indexed.IsZero() {
			return false, nil // an empty index: nothing to look up
		}
		if met[h] {
			return true, nil
		}
		_, ok, err := tx.CommitOf(h)
		if ok {
			met[h] = true
			plan.boundary = append(plan.boundary, h)
		}
		return ok, err
	}
	if ok, err := isIndexed(target); err != nil || ok {
		return plan, err
	}
	type frame struct {
		c        *gitver.CommitInfo
		next     int  // the parent to look at next
		mainline bool // on target's first-parent history
		reaches  bool // reaches the index's head
	}
	top, err := c.repo.ReadCommit(target)
	if err != nil {
		return nil, err
	}
	stack := []frame{{c: top, mainline: true}}
	reaches := map[gitver.Hash]bool{} // of the commits walked
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		if f.next < len(f.c.Parents) {
			p := f.c.Parents[f.next]
			first := f.next == 0
			f.next++
			if p == indexed {
				f.reaches = true
			}
			if r, walked := reaches[p]; walked {
				f.reaches = f.reaches || r
				continue
			}
			if ok, err := isIndexed(p); err != nil || ok {
				if err != nil {
					return nil, err
				}
				continue
			}
			c, err := c.repo.ReadCommit(p)
			if err != nil {
				return nil, err
			}
			reaches[p] = false // walked: a DAG never meets it again before it is done
			if limit > 0 && len(reaches) > limit {
				return nil, errTooFar
			}
			stack = append(stack, frame{c: c, mainline: f.mainline && first})
			if progress != nil && len(reaches)%1000 == 0 {
				progress("history", len(reaches), 0)
			}
			continue
		}
		done := *f
		stack = stack[:len(stack)-1]
		reaches[done.c.Hash] = done.reaches
		if len(stack) > 0 && done.reaches {
			stack[len(stack)-1].reaches = true
		}
		plan.order = append(plan.order, done.c)
		plan.closed = append(plan.closed, done.mainline && (indexed.IsZero() || done.reaches))
	}
	plan.reachesIndexed = indexed.IsZero() || met[indexed]
	return plan, nil
}

// cutPoint returns the newest closed commit that the boundary's commits
// reach along their first parents, and its cursor: the index cut back to it
// holds only commits the new head reaches too. Zero when there is none.
func (c *Catcher) cutPoint(tx *index.Tx, boundary []gitver.Hash) (gitver.Hash, int, error) {
	var best gitver.Hash
	bestSeq := 0
	for _, h := range boundary {
		for !h.IsZero() {
			ic, ok, err := tx.CommitOf(h)
			if err != nil {
				return gitver.ZeroHash, 0, err
			}
			if ok && ic.Closed {
				if ic.Seq > bestSeq {
					best, bestSeq = h, ic.Seq
				}
				break
			}
			c, err := c.repo.ReadCommit(h)
			if err != nil {
				return gitver.ZeroHash, 0, err
			}
			h = c.FirstParent()
		}
	}
	return best, bestSeq, nil
}

// refreshNote reads a note's current fields, search text and links from git
// into the index.
func (c *Catcher) refreshNote(tx *index.Tx, key string) error {
	noteBlob, err := tx.FileBlob(key + ".md")
	if err != nil {
		return err
	}
	if noteBlob.IsZero() {
		return tx.SetNoteState(index.Note{Key: key}, index.Text{}, nil)
	}
	var contentBlob gitver.Hash
	var contentPath string
	for _, p := range note.BlobFiles(key) {
		b, err := tx.FileBlob(p)
		if err != nil {
			return err
		}
		if !b.IsZero() {
			contentBlob, contentPath = b, p
		}
	}
	n, text, links, err := c.readNote(key, noteBlob, contentBlob, contentPath)
	if err != nil {
		return err
	}
	return tx.SetNoteState(n, text, links)
}

// readNote reads the note at key from its note file's blob and its content
// file's (zero when none): its row, search text and links as the index
// holds them.
func (c *Catcher) readNote(key string, noteBlob, contentBlob gitver.Hash, contentPath string) (index.Note, index.Text, []index.Link, error) {
	n := index.Note{Key: key, Present: true, NoteBlob: noteBlob, ContentBlob: contentBlob, ContentPath: contentPath}
	raw, err := c.repo.ReadBlob(noteBlob)
	if err != nil {
		return n, index.Text{}, nil, err
	}
	f, err := note.Parse(raw)
	if err != nil {
		// Unreadable front matter: the address stays listed and searchable,
		// and reads say what is wrong.
		n.Problem = err.Error()
		n.Bytes = len(raw)
		n.EstTokens = note.EstimateTokens(len(raw))
		return n, index.Text{Addr: key, Body: string(raw)}, nil, nil
	}
	n.Digest = f.Str(note.KeyDigest)
	n.Kind = f.Str(note.KeyKind)
	if n.Kind == "" {
		n.Kind = "note"
	}
	n.Author = f.Str(note.KeyAuthor)
	n.Updated = f.Str(note.KeyUpdated)
	claim := f.Claim()
	n.ClaimedBy, n.Done = claim.By, claim.DoneBy != ""
	if claim.By != "" && !claim.Until.IsZero() {
		n.ClaimUntil = claim.Until.Unix()
	}
	content := string(f.Body)
	if blob := f.Str(note.KeyBlob); blob != "" {
		want := note.SiblingBlobPath(key, blob)
		switch {
		case want != "" && n.ContentPath == "":
			n.Problem = "its blob file " + want + " is missing, so its content cannot be read; restore it from history (git log -- " + want + ")"
		case want == "" || want != n.ContentPath:
			n.Problem = "the front matter names blob " + strconv.Quote(blob) + ", which is not this note's blob file"
		default:
			b, err := c.repo.ReadBlob(n.ContentBlob)
			if err != nil {
				return n, index.Text{}, nil, err
			}
			content = f.ContentWith(b)
		}
	}
	n.Bytes = len(content)
	if n.Digest == "" && n.Problem == "" {
		n.Problem = "the front matter has no digest"
	}
	n.EstTokens = note.EstimateTokens(n.Bytes)
	n.SaysWhen = note.SaysWhen(n.Digest, content)
	if head, ok := note.ReadLineHead(content); ok {
		n.Speaker = head.Speaker
		if !head.Said.IsZero() {
			n.Said = head.Said.Unix()
		}
	}
	var links []index.Link
	rels, targets := f.Links()
	for _, rel := range rels {
		for _, t := range targets[rel] {
			if a, err := note.ParseAddress(t, c.workspace); err == nil {
				links = append(links, index.Link{Rel: rel, Dst: a.Short()})
			}
		}
	}
	return n, index.Text(note.TextOf(key, f, content)), links, nil
}
