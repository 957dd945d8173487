package health

import (
	"fmt"
	"sort"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// checkIndex compares the derived index with git: the commit it reflects,
// the notes of the last commit when it reflects that commit, and, for a
// sample of notes, the version recounted from the first-parent history.
func (c *checker) checkIndex(head gitver.Hash, files map[string]gitver.Hash, opts Options, r *Report) {
	indexed, seq, err := c.ws.IndexHead()
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(),
			Fix:     fixReindex + "; if that fails too, delete .blackboard/index.db* and run any read"})
		return
	}
	const fixStale = "nothing is lost: any read catches the index up (e.g. `blackboard-mcp ls`), or run `blackboard-mcp reindex`"
	if building, ok := c.ws.IndexBuild(); ok {
		r.Add(Finding{Check: "index", Severity: SeverityWarning, Path: note.IndexFile,
			Message: building.Message + " in the background (cursor " + fmt.Sprint(seq) + " so far): listings and searches answer from it as far as it has come, other calls say to retry",
			Fix:     "wait for it: it needs no help"})
		return
	}
	switch {
	case indexed.IsZero():
		r.Add(Finding{Check: "index", Severity: SeverityWarning, Path: note.IndexFile,
			Message: "the derived index is empty", Fix: fixStale})
		return
	case !head.IsZero() && indexed != head:
		r.Add(Finding{Check: "index", Severity: SeverityWarning, Path: note.IndexFile,
			Message: fmt.Sprintf("the derived index is stale: it reflects commit %s (cursor %d), the branch is at %s", indexed.Short(), seq, head.Short()),
			Fix:     fixStale})
	}
	if files != nil && indexed == head {
		c.checkIndexNotes(files, r)
	}
	c.checkVersions(indexed, seq, opts, r)
}

// checkIndexNotes compares the index's present notes with the notes of the
// commit it reflects, file by file: each note file and each out-of-line
// content file with its blob, in one pass over the index.
func (c *checker) checkIndexNotes(files map[string]gitver.Hash, r *Report) {
	readings, err := c.readings()
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
		return
	}
	indexed := make(map[string]gitver.Hash, len(readings))
	for p, rd := range readings {
		indexed[p] = rd.NoteBlob
		if rd.ContentPath != "" {
			indexed[rd.ContentPath] = rd.ContentBlob
		}
	}
	notesIn := func(m map[string]gitver.Hash) int {
		n := 0
		for p := range m {
			if note.IsNoteFile(p) {
				n++
			}
		}
		return n
	}
	if got, want := notesIn(indexed), notesIn(files); got != want {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: fmt.Sprintf("the derived index lists %d notes; the last commit has %d", got, want),
			Fix:     fixReindex})
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		if note.IsNoteFile(p) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		blob, ok := indexed[p]
		switch {
		case !ok:
			r.Add(Finding{Check: "index", Severity: SeverityError, Path: p,
				Message: "the note is in the last commit but the derived index does not list it", Fix: fixReindex})
		case blob != files[p]:
			r.Add(Finding{Check: "index", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the derived index holds blob %s of the note; the last commit has %s", blob.Short(), files[p].Short()),
				Fix:     fixReindex})
		}
	}
	var contents []string
	for p := range indexed {
		if !note.IsNoteFile(p) {
			contents = append(contents, p)
		}
	}
	sort.Strings(contents)
	for _, p := range contents {
		if files[p] != indexed[p] {
			r.Add(Finding{Check: "index", Severity: SeverityError, Path: p,
				Message: "the derived index holds another version of the note's blob file than the last commit", Fix: fixReindex})
		}
	}
}

// checkVersions recounts, from git, the versions of the most recently
// changed notes: a note's version is the number of commits the branch
// reaches whose content at its file or its blob differs from a parent's
// (SPEC 4; the first-parent count on a linear history). The walk starts at the commit the
// index reflects, so a stale index is not mistaken for a wrong one. When the
// history is longer than the walk, the commits walked are compared one by
// one instead of the totals.
func (c *checker) checkVersions(from gitver.Hash, seq int, opts Options, r *Report) {
	var sample []index.Note
	if err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		var err error
		sample, _, err = s.List(index.ListQuery{Limit: opts.SampleNotes})
		return err
	}); err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
		return
	}
	sampled := make(map[string]bool, len(sample))
	for _, n := range sample {
		sampled[n.Key] = true
	}
	touched := map[string]map[gitver.Hash]bool{} // note -> commits that changed it
	walked := map[gitver.Hash]bool{}
	// Walk what the commit reaches, newest first, as far as the bound.
	queue := []gitver.Hash{}
	if !from.IsZero() {
		queue = append(queue, from)
		walked[from] = true
	}
	complete := true // every commit it reaches was walked
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		commit, err := c.repo.ReadCommit(h)
		if err != nil {
			r.Infof("index versions: not recounted, commit %s cannot be read (see objects)", h.Short())
			return
		}
		if err := c.countChanges(commit, sampled, touched); err != nil {
			r.Infof("index versions: not recounted, a tree of commit %s or of a parent cannot be read (see objects)", h.Short())
			return
		}
		for _, p := range commit.Parents {
			switch {
			case walked[p]:
			case len(walked) >= opts.VersionCommits:
				complete = false
			default:
				walked[p] = true
				queue = append(queue, p)
			}
		}
	}
	if complete && len(walked) != seq {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: fmt.Sprintf("the derived index counts %d commits up to %s; git's history has %d", seq, from.Short(), len(walked)),
			Fix:     fixReindex})
	}
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		for _, n := range sample {
			events, err := s.History(n.Key, n.Version+1)
			if err != nil {
				return err
			}
			git := touched[n.Key]
			if complete {
				if n.Version != len(git) {
					r.Add(Finding{Check: "index", Severity: SeverityError, Path: n.Key + ".md",
						Message: fmt.Sprintf("the derived index says version %d; %d commits changed the note's files", n.Version, len(git)),
						Fix:     fixReindex})
				}
				continue
			}
			inWindow := 0
			for _, e := range events {
				if walked[e.Hash] {
					inWindow++
					if !git[e.Hash] {
						inWindow = -1
						break
					}
				}
			}
			if inWindow != len(git) {
				r.Add(Finding{Check: "index", Severity: SeverityError, Path: n.Key + ".md",
					Message: fmt.Sprintf("the derived index and git disagree on which of the last %d commits changed the note", len(walked)),
					Fix:     fixReindex})
			}
		}
		return nil
	})
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
		return
	}
	scope := "the whole history"
	if !complete {
		scope = fmt.Sprintf("the last %d commits", len(walked))
	}
	r.Infof("index: versions of %d notes recounted over %s", len(sample), scope)
}

func (c *checker) countChanges(commit *gitver.CommitInfo, sampled map[string]bool, touched map[string]map[gitver.Hash]bool) error {
	changes, err := c.repo.Changes(commit)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		key, ok := note.KeyOf(ch.Path)
		if !ok || !sampled[key] {
			continue
		}
		if touched[key] == nil {
			touched[key] = map[gitver.Hash]bool{}
		}
		touched[key][commit.Hash] = true
	}
	return nil
}
