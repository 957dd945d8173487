package fsstore

import (
	"errors"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Summary is what the index knows of a note without reading it: enough to
// decide whether to read it.
type Summary struct {
	URI     string
	Version int
	// Seq is the cursor of the note's last change.
	Seq       int
	Digest    string
	Kind      string
	Author    string
	Updated   string
	Bytes     int
	EstTokens int
	// Problem says why the note's front matter is unreadable.
	Problem string
	// SupersededBy and ContradictedBy name present notes that link here
	// with supersedes or contradicts.
	SupersededBy   []string
	ContradictedBy []string
	// ClaimedBy holds a claim on the note until ClaimUntil (RFC 3339), as
	// its front matter says: lapsed or not, as the reader's clock decides.
	ClaimedBy, ClaimUntil string
	// Commit is the commit that made the version, for a past version named
	// by its address (topic/key@N); "" for the note as it is.
	Commit string
}

// ListOptions select notes for List. The zero value lists every note,
// newest change first, 20 at most.
type ListOptions struct {
	// Topic is a topic or topic prefix ("research", "research/cache");
	// empty lists every topic.
	Topic string
	Kind  string
	// ByName orders by address instead of newest change first.
	ByName bool
	Limit  int
	// Since lists only notes changed after this cursor.
	Since int
	// After continues a newest-first listing past this note, the last of
	// the page before.
	After *index.Position
	// KeyPrefix keeps notes whose key (topic/key...) starts with it.
	KeyPrefix string
	// Open lists only the work that can be taken: notes not done, whose
	// claim is lapsed or was never made, judged by this machine's clock,
	// and whose dependencies are done (index.ListQuery.Open says which
	// hold a task back).
	Open bool
	// Oldest orders by when each note first appeared, oldest first.
	Oldest bool
}

// Listing is a page of List.
type Listing struct {
	Notes []Summary
	// Omitted counts matching notes not shown (over the limit).
	Omitted int
	Cursor  int
}

// DefaultListLimit and MaxListLimit bound a listing.
const (
	DefaultListLimit = 20
	MaxListLimit     = 1000
)

// List returns notes under a topic prefix, newest change first or by name.
func (v *View) List(opts ListOptions) (*Listing, error) {
	scope, err := v.scope(opts.Topic)
	if err != nil {
		return nil, err
	}
	limit := opts.Limit
	switch {
	case limit <= 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	out := &Listing{}
	out.Cursor, err = v.readAsFar(func(s *index.Snapshot) error {
		notes, total, err := s.List(index.ListQuery{Scope: scope, Kind: opts.Kind, ByName: opts.ByName,
			Limit: limit, Since: opts.Since, After: opts.After, KeyPrefix: opts.KeyPrefix,
			Open: opts.Open, Now: time.Now().Unix(), Readable: index.Scope{Prefixes: v.c.read.Narrow("")}, Oldest: opts.Oldest})
		if err != nil {
			return err
		}
		out.Omitted = total - len(notes)
		out.Notes, err = v.summaries(s, notes)
		return err
	})
	return out, err
}

// scope is what a query under topic (a topic prefix, or "" for all) may
// cover for this caller.
func (v *View) scope(topic string) (index.Scope, error) {
	prefix := ""
	if topic != "" {
		segs, err := v.w.reader.parseTopic(topic)
		if err != nil {
			return index.Scope{}, err
		}
		prefix = strings.Join(segs, "/")
	}
	return index.Scope{Prefixes: v.c.read.Narrow(prefix)}, nil
}

// summaries turns index rows into Summaries, with their backlinks (one
// query for all of them).
func (v *View) summaries(s *index.Snapshot, notes []index.Note) ([]Summary, error) {
	w := v.w
	keys := make([]string, len(notes))
	for i, n := range notes {
		keys[i] = n.Key
	}
	back, err := s.BacklinksTo(keys, "supersedes", "contradicts")
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(notes))
	for i, n := range notes {
		var seen []index.Backlink
		for _, b := range back[n.Key] {
			if v.c.CanRead(b.Src) {
				seen = append(seen, b)
			}
		}
		out[i] = w.reader.summaryOf(n, seen)
	}
	return out, nil
}

func (v *View) summary(s *index.Snapshot, n index.Note) (Summary, error) {
	out, err := v.summaries(s, []index.Note{n})
	if err != nil {
		return Summary{}, err
	}
	return out[0], nil
}

// SummaryResult is one address of a batch: its summary, or why there is none.
type SummaryResult struct {
	URI     string
	Summary *Summary
	Err     error // ErrInvalid or ErrNotFound
}

// Summaries reads many notes' summaries at one consistent point of history,
// from the index alone; while the index is being built, from git, without
// their versions (Version 0) and backlinks, at the index's cursor so far.
func (v *View) Summaries(uris []string) ([]SummaryResult, int, error) {
	w := v.w
	out, keys, past := v.batch(uris)
	cursor, err := w.reader.readAtHead(func(s *index.Snapshot) error {
		notes, err := s.Notes(keys)
		if err != nil {
			return err
		}
		var present []index.Note
		for _, n := range notes {
			if n.Present {
				present = append(present, n)
			}
		}
		sums, err := v.summaries(s, present)
		if err != nil {
			return err
		}
		fill(out, sums)
		return nil
	})
	if v.answersPartly(err) {
		out, cursor, err = v.summariesFromGit(out, keys)
	}
	if err != nil {
		return nil, 0, err
	}
	for i, p := range past {
		n, commit, err := v.pastNote(p.addr, p.version)
		if errors.Is(err, ErrNotFound) {
			out[i].Err = err
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		sum := w.reader.summaryOf(n, nil)
		sum.URI, sum.Commit = out[i].URI, commit.String()
		out[i].Summary, out[i].Err = &sum, nil // fill found none by its address
	}
	return out, cursor, nil
}

// pastAddress is an address of a batch that names one version of its note
// (topic/key@N).
type pastAddress struct {
	addr    note.Address
	version int
}

// summariesFromGit is Summaries while the index is being built: each note
// as the branch holds it in git (noteFromGit).
func (v *View) summariesFromGit(out []SummaryResult, keys []string) ([]SummaryResult, int, error) {
	w := v.w
	_, cursor, err := w.idx.Head()
	if err != nil {
		return nil, 0, err
	}
	var sums []Summary
	for _, key := range keys {
		n, err := v.noteFromGit(key)
		if err != nil {
			return nil, 0, err
		}
		if n.Present {
			sums = append(sums, w.reader.summaryOf(n, nil))
		}
	}
	fill(out, sums)
	return out, cursor, nil
}

// batch reads a batch's addresses: a result for each, with its canonical
// address or why it has none, and the keys of those the caller may read
// (the others stay not found, as if missing); past holds those that name
// one version of their note, by their place in the batch, to be read from
// git (pastNote).
func (v *View) batch(uris []string) (out []SummaryResult, keys []string, past map[int]pastAddress) {
	out = make([]SummaryResult, len(uris))
	keys = make([]string, 0, len(uris))
	for i, u := range uris {
		a, version, err := v.w.reader.parseVersioned(u)
		if err != nil {
			// The input as given, cut short: a megabyte of garbage does
			// not come back in full.
			out[i] = SummaryResult{URI: note.Clip(u), Err: err}
			continue
		}
		if version > 0 {
			out[i].URI = note.VersionedURI(a, version)
			if past == nil {
				past = map[int]pastAddress{}
			}
			past[i] = pastAddress{a, version}
			continue
		}
		out[i].URI = a.String()
		if v.c.CanRead(a.Short()) {
			keys = append(keys, a.Short())
		}
	}
	return out, keys, past
}

// fill gives each result of a batch its summary from sums, by address, or
// not_found when sums has none.
func fill(out []SummaryResult, sums []Summary) {
	byURI := make(map[string]*Summary, len(sums))
	for i := range sums {
		byURI[sums[i].URI] = &sums[i]
	}
	for i := range out {
		if out[i].Err != nil {
			continue
		}
		if sum, ok := byURI[out[i].URI]; ok {
			out[i].Summary = sum
		} else {
			out[i].Err = errorf("get", out[i].URI, ErrNotFound, "no note at this address")
		}
	}
}

// Topics lists the topics the caller may read that hold notes.
func (v *View) Topics() ([]string, error) {
	scope, err := v.scope("")
	if err != nil {
		return nil, err
	}
	var out []string
	_, err = v.w.reader.readAtHead(func(s *index.Snapshot) error {
		out, err = s.Topics(scope)
		return err
	})
	return out, err
}

// TopicCounts lists the topics the caller may read with how many notes
// each holds (a note of a topic the caller reads only in part counts only
// where it may read).
func (v *View) TopicCounts() ([]index.TopicCount, error) {
	scope, err := v.scope("")
	if err != nil {
		return nil, err
	}
	var out []index.TopicCount
	_, err = v.w.reader.readAtHead(func(s *index.Snapshot) error {
		out, err = s.TopicCounts(scope)
		return err
	})
	return out, err
}

// Folders lists the folders one level below topic (a topic or a deeper
// prefix) that hold notes the caller may read, each with how many it holds
// at any depth: the topic tree, one level at a time.
func (v *View) Folders(topic string) ([]index.TopicCount, error) {
	segs, err := v.w.reader.parseTopic(topic)
	if err != nil {
		return nil, err
	}
	under := strings.Join(segs, "/")
	scope := index.Scope{Prefixes: v.c.read.Narrow(under)}
	var out []index.TopicCount
	_, err = v.w.reader.readAtHead(func(s *index.Snapshot) error {
		out, err = s.Folders(scope, under)
		return err
	})
	return out, err
}

// claimOf is the claim the index holds of n: its holder and the time it
// lapses, "" for none.
func claimOf(n index.Note) (by, until string) {
	if n.ClaimedBy == "" {
		return "", ""
	}
	return n.ClaimedBy, time.Unix(n.ClaimUntil, 0).UTC().Format(time.RFC3339)
}
