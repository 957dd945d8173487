package fsstore

import (
	"errors"
	"strconv"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// catchUp brings the derived index to the branch's current commit and returns
// that commit and its cursor. It is cheap when nothing moved (one ref read and
// one query); otherwise it applies only the commits the index has not seen,
// whoever made them (this or another process, a person's git commit, a pull).
// When the branch was reset or rewritten, it forgets the commits that are no
// longer on it and applies the new ones from the last commit both share.
//
// hint gives the changes of commits the caller just made, so they need not be
// diffed again. extra runs in the same index transaction.
func (w *Workspace) catchUp(hint map[gitver.Hash][]gitver.PathChange, extra func(*index.Tx) error) (gitver.Hash, int, error) {
	head, err := w.repo.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	indexed, seq, err := w.idx.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	if head.IsZero() && !indexed.IsZero() {
		return gitver.ZeroHash, 0, w.branchGone(indexed)
	}
	if indexed == head && extra == nil {
		return head, seq, nil
	}
	err = w.idx.Update(func(tx *index.Tx) error {
		// Read the branch again inside the index's write transaction: another
		// process may have caught up meanwhile, to a newer commit than ours.
		if head, seq, err = w.syncToBranch(tx, hint); err != nil || extra == nil {
			return err
		}
		return extra(tx)
	})
	return head, seq, err
}

// syncToBranch brings the index in tx to the branch's current commit, and
// returns that commit and its cursor.
func (w *Workspace) syncToBranch(tx *index.Tx, hint map[gitver.Hash][]gitver.PathChange) (gitver.Hash, int, error) {
	head, err := w.repo.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	indexed, seq, err := tx.Head()
	if err != nil {
		return gitver.ZeroHash, 0, err
	}
	if head.IsZero() && !indexed.IsZero() {
		return gitver.ZeroHash, 0, w.branchGone(indexed)
	}
	if indexed != head {
		seq, err = w.syncIndex(tx, head, hint, nil)
	}
	return head, seq, err
}

// readAtHead runs fn on the derived index caught up to the branch, and
// returns the cursor there. When the index cannot be caught up because the
// disk is full (the writes that filled it moved the branch, and their
// catch-up could not be committed), the catch-up is made for this read
// alone and never written (index.DB.ReadAhead): reads keep answering from
// git while writes are refused.
func (w *Workspace) readAtHead(fn func(s *index.Snapshot) error) (int, error) {
	_, cursor, err := w.catchUp(nil, nil)
	if err == nil {
		return cursor, w.idx.Read(fn)
	}
	if !index.IsFull(err) {
		return 0, err
	}
	w.logf("the derived index cannot catch up, the disk is full: reads catch up in memory, one at a time")
	err = w.idx.ReadAhead(func(tx *index.Tx) error {
		_, cursor, err = w.syncToBranch(tx, nil)
		return err
	}, fn)
	return cursor, err
}

// ErrBranchGone means the board's branch does not exist any more, although
// the board has history (a person deleted it): nothing is read or written
// until it is restored, so that no write starts a new history beside the
// old. It comes as the cause of an ErrConflict: the caller may try again
// once a person has restored the branch.
var ErrBranchGone = errors.New("the board's branch is gone")

func (w *Workspace) branchGone(last gitver.Hash) error {
	branch := strings.TrimPrefix(w.repo.Branch(), "refs/heads/")
	return errorf("read", "", ErrConflict, "the board's branch %s does not exist (deleted?); its last commit the board knows is %s; "+
		"nothing is read or written until a person restores it: git branch %s %s", branch, last.Short(), branch, last).because(ErrBranchGone)
}

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
func (w *Workspace) syncIndex(tx *index.Tx, target gitver.Hash, hint map[gitver.Hash][]gitver.PathChange, progress Progress) (int, error) {
	indexed, seq, err := tx.Head()
	if err != nil {
		return 0, err
	}
	plan, err := w.planSync(tx, target, indexed, progress)
	if err != nil {
		return 0, err
	}
	refresh := map[string]bool{}
	if !plan.reachesIndexed {
		base, baseSeq, err := w.cutPoint(tx, plan.boundary)
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
		if plan, err = w.planSync(tx, target, base, progress); err != nil {
			return 0, err
		}
	}
	if len(plan.order) >= bulkCommits {
		if err := tx.Bulk(); err != nil {
			return 0, err
		}
	}
	for i, c := range plan.order {
		if progress != nil && i%500 == 0 {
			progress("commits", i, len(plan.order))
		}
		changes, ok := hint[c.Hash]
		if !ok {
			if changes, err = w.repo.Changes(c); err != nil {
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
			Seq: seq, Hash: c.Hash, Author: c.Author.Name, Email: c.Author.Email,
			Time: c.Author.When.Unix(), Subject: c.Subject(), ByProgram: note.ByProgram(c.Message),
			Closed: plan.closed[i],
		}, rows)
		if err != nil {
			return 0, err
		}
		for _, n := range touched {
			refresh[n] = true
		}
	}
	done := 0
	for key := range refresh {
		if progress != nil && done%500 == 0 {
			progress("notes", done, len(refresh))
		}
		done++
		if err := w.refreshNote(tx, key); err != nil {
			return 0, err
		}
	}
	if progress != nil {
		progress("notes", len(refresh), len(refresh))
	}
	return seq, tx.SetHead(target)
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
// everything before it in the order is what it reaches.
func (w *Workspace) planSync(tx *index.Tx, target, indexed gitver.Hash, progress Progress) (*syncPlan, error) {
	plan := &syncPlan{reachesIndexed: indexed.IsZero() || target == indexed}
	if target.IsZero() || target == indexed {
		return plan, nil
	}
	met := map[gitver.Hash]bool{}
	isIndexed := func(h gitver.Hash) (bool, error) {
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
	top, err := w.repo.ReadCommit(target)
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
			c, err := w.repo.ReadCommit(p)
			if err != nil {
				return nil, err
			}
			reaches[p] = false // walked: a DAG never meets it again before it is done
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
func (w *Workspace) cutPoint(tx *index.Tx, boundary []gitver.Hash) (gitver.Hash, int, error) {
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
			c, err := w.repo.ReadCommit(h)
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
func (w *Workspace) refreshNote(tx *index.Tx, key string) error {
	n := index.Note{Key: key}
	noteBlob, err := tx.FileBlob(key + ".md")
	if err != nil {
		return err
	}
	if noteBlob.IsZero() {
		return tx.SetNoteState(n, index.Text{}, nil)
	}
	n.Present, n.NoteBlob = true, noteBlob
	for _, p := range note.BlobFiles(key) {
		b, err := tx.FileBlob(p)
		if err != nil {
			return err
		}
		if !b.IsZero() {
			n.ContentBlob, n.ContentPath = b, p
		}
	}
	raw, err := w.repo.ReadBlob(noteBlob)
	if err != nil {
		return err
	}
	f, err := note.Parse(raw)
	if err != nil {
		// Unreadable front matter: the address stays listed and searchable,
		// and reads say what is wrong.
		n.Problem = err.Error()
		n.Bytes = len(raw)
		n.EstTokens = EstimateTokens(len(raw))
		return tx.SetNoteState(n, index.Text{Addr: key, Body: string(raw)}, nil)
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
			b, err := w.repo.ReadBlob(n.ContentBlob)
			if err != nil {
				return err
			}
			content = f.ContentWith(b)
		}
	}
	n.Bytes = len(content)
	if n.Digest == "" && n.Problem == "" {
		n.Problem = "the front matter has no digest"
	}
	n.EstTokens = EstimateTokens(n.Bytes)
	var links []index.Link
	rels, targets := f.Links()
	for _, rel := range rels {
		for _, t := range targets[rel] {
			if a, err := w.parseAddress(t); err == nil {
				links = append(links, index.Link{Rel: rel, Dst: a.Short()})
			}
		}
	}
	return tx.SetNoteState(n, index.Text(note.TextOf(key, f, content)), links)
}

// Progress reports a long rebuild: stage is "commits", "notes" or
// "vectors" (total 0: unknown).
type Progress func(stage string, done, total int)

// Reindex rebuilds the derived index from git, in one transaction: other
// processes keep reading the old index until the new one is complete, and
// their writes wait for it.
func (w *Workspace) Reindex(progress Progress) (int, error) {
	var seq int
	err := w.idx.Update(func(tx *index.Tx) error {
		if err := tx.Reset(); err != nil {
			return err
		}
		head, err := w.repo.Head()
		if err != nil {
			return err
		}
		seq, err = w.syncIndex(tx, head, nil, progress)
		return err
	})
	if err != nil {
		return seq, err
	}
	// The notes' vectors, made again from the start (Reset forgot them
	// and where the last pass finished).
	_, err = w.EmbedPending(true, func(done int) {
		if progress != nil {
			progress("vectors", done, 0)
		}
	})
	return seq, err
}

// commitsUntil lists the commits on the first-parent history of from that
// come after stop, newest first. found is false when stop is not on that
// history within limit commits.
func (w *Workspace) commitsUntil(from, stop gitver.Hash, limit int) (chain []*gitver.CommitInfo, found bool, err error) {
	for h := from; h != stop; {
		if h.IsZero() || len(chain) == limit {
			return chain, false, nil
		}
		c, err := w.repo.ReadCommit(h)
		if err != nil {
			return chain, false, err
		}
		chain = append(chain, c)
		h = c.FirstParent()
	}
	return chain, true, nil
}

// changedSince lists the files whose content differs between a commit and
// a later one.
func (w *Workspace) changedSince(from, to gitver.Hash) ([]gitver.PathChange, error) {
	a, err := w.repo.ReadCommit(from)
	if err != nil {
		return nil, err
	}
	b, err := w.repo.ReadCommit(to)
	if err != nil {
		return nil, err
	}
	return w.repo.DiffTrees(a.Tree, b.Tree)
}
