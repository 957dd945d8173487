package people

import (
	"slices"
	"sync"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// A merged save is put in the file before it is committed (replaceSave),
// and its commit can fail: a person's `git commit` of the save, read
// before the merge replaced it, moves the branch in between. The file then
// holds a text no version holds, and what the person saves next is made
// from it: without it among the texts compared, the save would look
// nearest some other version, maybe the branch's, and be taken whole,
// dropping what agents wrote since. So the merges placed are remembered
// for a while, with the saves they were merged from (a later save from
// the same buffer, or the person's commit of the save itself, is made from
// that), and compared like versions (saveBase). A save nearest one of
// them is merged from it when the branch holds the person's changes in it
// (the merge committed, their commit of the save), and otherwise from the
// version those changes were made over: they are in no version, and must
// not be taken for lines the agents removed (placedBase).

const (
	// placedFor is how long a placed text stays a possible base: as long
	// as a person's commit is looked back for (recentCommits).
	placedFor = recentCommits
	// maxPlacedPerFile bounds the texts remembered of one file.
	maxPlacedPerFile = 8
)

// placedTexts are the merged saves put in note files, newest last.
type placedTexts struct {
	mu     sync.Mutex
	byPath map[string][]placedText
}

type placedText struct {
	blob  gitver.Hash // the merge
	onto  gitver.Hash // the branch's version it was merged onto
	saved gitver.Hash // the person's save it was merged from
	made  gitver.Hash // the version the save was made from, its base
	at    time.Time
}

// add remembers merged, a merge of a person's save just put in the file
// at rel, as t says, and stores it in git's objects to be read back.
func (t *placedTexts) add(repo Git, rel string, merged []byte, placed placedText) error {
	blob, err := repo.WriteBlob(merged)
	if err != nil {
		return err
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byPath == nil {
		t.byPath = map[string][]placedText{}
	}
	for p, texts := range t.byPath {
		if now.Sub(texts[len(texts)-1].at) > placedFor {
			delete(t.byPath, p)
		}
	}
	placed.blob, placed.at = blob, now
	t.byPath[rel] = append(t.byPath[rel], placed)
	if texts := t.byPath[rel]; len(texts) > maxPlacedPerFile {
		t.byPath[rel] = texts[len(texts)-maxPlacedPerFile:]
	}
	return nil
}

// before returns the texts placed in the file at rel, newest first, that
// a save could be made from: all of them for a save in the work tree
// (madeBy zero), those placed before the person's commit madeBy for one
// that commit holds (commit times keep whole seconds).
func (t *placedTexts) before(repo Git, rel string, madeBy gitver.Hash) ([]placedText, error) {
	t.mu.Lock()
	texts := slices.Clone(t.byPath[rel])
	t.mu.Unlock()
	if len(texts) == 0 {
		return nil, nil
	}
	until := time.Now()
	if !madeBy.IsZero() {
		c, err := repo.ReadCommit(madeBy)
		if err != nil {
			return nil, err
		}
		until = c.Committer.When.Add(time.Second)
	}
	var out []placedText
	for i := len(texts) - 1; i >= 0; i-- {
		if texts[i].at.Before(until) && time.Since(texts[i].at) <= placedFor {
			out = append(out, texts[i])
		}
	}
	return out, nil
}
