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
		if head, err = w.repo.Head(); err != nil {
			return err
		}
		indexed, seq, err = tx.Head()
		if err != nil {
			return err
		}
		if head.IsZero() && !indexed.IsZero() {
			return w.branchGone(indexed)
		}
		if indexed != head {
			if seq, err = w.syncIndex(tx, head, seq, hint, nil); err != nil {
				return err
			}
		}
		if extra != nil {
			return extra(tx)
		}
		return nil
	})
	return head, seq, err
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

func (w *Workspace) syncIndex(tx *index.Tx, target gitver.Hash, indexedSeq int,
	hint map[gitver.Hash][]gitver.PathChange, progress Progress) (int, error) {
	var chain []*gitver.CommitInfo
	base := 0
	h := target
	for !h.IsZero() {
		seq, ok, err := tx.SeqOf(h)
		if err != nil {
			return 0, err
		}
		if ok {
			base = seq
			break
		}
		c, err := w.repo.ReadCommit(h)
		if err != nil {
			return 0, err
		}
		chain = append(chain, c)
		if progress != nil && len(chain)%1000 == 0 {
			progress("history", len(chain), 0)
		}
		h = c.FirstParent()
	}
	refresh := map[string]bool{}
	if base < indexedSeq {
		notes, err := tx.Truncate(base)
		if err != nil {
			return 0, err
		}
		for _, n := range notes {
			refresh[n] = true
		}
	}
	var parentTree gitver.Hash
	if !h.IsZero() {
		pc, err := w.repo.ReadCommit(h)
		if err != nil {
			return 0, err
		}
		parentTree = pc.Tree
	}
	seq := base
	for i := len(chain) - 1; i >= 0; i-- {
		if progress != nil && (seq-base)%500 == 0 {
			progress("commits", seq-base, len(chain))
		}
		c := chain[i]
		changes, ok := hint[c.Hash]
		if !ok {
			var err error
			if changes, err = w.repo.DiffTrees(parentTree, c.Tree); err != nil {
				return 0, err
			}
		}
		parentTree = c.Tree
		seq++
		rows := make([]index.Change, 0, len(changes))
		for _, ch := range changes {
			key, _ := note.KeyOf(ch.Path)
			rows = append(rows, index.Change{Path: ch.Path, Note: key, Old: ch.Old, New: ch.New})
		}
		touched, err := tx.AddCommit(index.Commit{
			Seq: seq, Hash: c.Hash, Author: c.Author.Name, Email: c.Author.Email,
			Time: c.Author.When.Unix(), Subject: c.Subject(), ByProgram: note.ByProgram(c.Message),
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

// EstimateTokens is the index's estimate of what reading n bytes of content
// costs a model: about four bytes a token for English prose and Markdown.
func EstimateTokens(n int) int {
	return (n + 3) / 4
}

// Progress reports a long rebuild: stage is "commits" or "notes".
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
		seq, err = w.syncIndex(tx, head, 0, nil, progress)
		return err
	})
	return seq, err
}
