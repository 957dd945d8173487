// Package vectors is the notes' meaning as search uses it: making the
// vectors the derived index lacks (a pass in the background, one process
// of the board at a time), and holding them in memory to search.
//
// It knows the index's vector tables, the repository's blobs and the word
// table (fsstore/meaning); when a pass runs is the engine's.
package vectors

import (
	"container/heap"
	"errors"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/meaning"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// Vectors are the notes' vectors: made into the index, held to search.
// They are safe for concurrent use.
type Vectors struct {
	repo Blobs
	idx  *index.DB
	held set
}

// Blobs reads a blob's content.
type Blobs interface {
	ReadBlob(h gitver.Hash) ([]byte, error)
}

// New returns the vectors of the notes idx holds, read from repo.
func New(repo Blobs, idx *index.DB) *Vectors { return &Vectors{repo: repo, idx: idx} }

// Search by meaning needs a vector for each note (package meaning). They
// belong to the derived index, made off the write path: a watching server
// makes those missing after writes, pulls and people's edits (one process
// of the board at a time, each pass going on from where the last one of
// any process finished), reindex makes them all. Each process holds the
// vectors in memory to search them, and loads what is newer before a
// search.

// embedBatch is how many notes' vectors are made and stored at a time.
const embedBatch = 256

// EmbedPending makes the vectors the index lacks: of notes new or changed
// since the last pass of any process of the board (the index records where
// it finished), or of every note when there was none, the model changed or
// the branch moved back past it. It returns how many it made; none when
// another process is making them, unless wait, which waits for it to
// finish first. progress, if not nil, is told of each batch.
func (v *Vectors) EmbedPending(wait bool, progress func(done int)) (int, error) {
	lock, ok, err := v.embedLock(wait)
	if err != nil || !ok {
		return 0, err
	}
	defer lock.Close()
	head, _, err := v.idx.Head()
	if err != nil {
		return 0, err
	}
	var madeHead gitver.Hash
	var since int
	if err := v.idx.Read(func(s *index.Snapshot) error {
		madeHead, since, err = s.VectorsMade(meaning.Model)
		return err
	}); err != nil {
		return 0, err
	}
	if madeHead == head && !head.IsZero() {
		return 0, nil
	}
	made := 0
	var after int64
	for {
		var batch []index.Unembedded
		if err := v.idx.Read(func(s *index.Snapshot) error {
			var err error
			batch, err = s.Unembedded(meaning.Model, since, after, embedBatch)
			return err
		}); err != nil {
			return made, err
		}
		if len(batch) == 0 {
			break
		}
		vs := make([]index.NewVector, 0, len(batch))
		for _, u := range batch {
			text, err := v.meaningText(u.NoteBlob, u.ContentBlob)
			if err != nil {
				return made, err
			}
			vec, _ := meaning.Embed(text) // no word known: a zero vector, near nothing
			b := make([]byte, meaning.Dims)
			for i, x := range vec {
				b[i] = byte(x)
			}
			vs = append(vs, index.NewVector{ID: u.ID, Source: u.Source(), Vec: b})
		}
		if err := v.idx.Update(func(tx *index.Tx) error { return tx.PutVectors(meaning.Model, vs) }); err != nil {
			return made, err
		}
		made += len(vs)
		after = batch[len(batch)-1].ID
		if progress != nil {
			progress(made)
		}
	}
	return made, v.idx.Update(func(tx *index.Tx) error { return tx.SetVectorsMade(meaning.Model, head) })
}

// embedLock takes the lock that lets one process of the board make vectors
// at a time; ok is false when another holds it and not wait. Its file sits
// beside the index, and is ignored by git as the index is.
func (v *Vectors) embedLock(wait bool) (*os.File, bool, error) {
	f, err := os.OpenFile(v.idx.Path()+"-vectors", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	how := unix.LOCK_EX | unix.LOCK_NB
	if wait {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// meaningText is what a note's vector is made from: its digest and content.
func (v *Vectors) meaningText(noteBlob, contentBlob gitver.Hash) (string, error) {
	raw, err := v.repo.ReadBlob(noteBlob)
	if err != nil {
		return "", err
	}
	f, err := note.Parse(raw)
	if err != nil {
		return string(raw), nil // unreadable front matter: the whole file
	}
	content := string(f.Body)
	if !contentBlob.IsZero() {
		b, err := v.repo.ReadBlob(contentBlob)
		if err != nil {
			return "", err
		}
		content = f.ContentWith(b)
	}
	return f.Str(note.KeyDigest) + "\n" + content, nil
}

// set is the notes' vectors as this process holds them, by address.
type set struct {
	mu   sync.RWMutex
	gen  int64 // the newest loaded
	slot map[string]int
	keys []string
	vecs []meaning.Vector
}

// Refresh loads the vectors made since the last look.
func (v *Vectors) Refresh(s *index.Snapshot) error { return v.held.refresh(s) }

// refresh loads the vectors made since the last look.
func (vs *set) refresh(s *index.Snapshot) error {
	vs.mu.RLock()
	gen := vs.gen
	vs.mu.RUnlock()
	newer, err := s.VectorsSince(meaning.Model, gen)
	if err != nil || len(newer) == 0 {
		return err
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.slot == nil {
		vs.slot = make(map[string]int, len(newer))
	}
	for _, v := range newer {
		if v.Gen <= vs.gen || len(v.Vec) != meaning.Dims {
			continue
		}
		var vec meaning.Vector
		for i, b := range v.Vec {
			vec[i] = int8(b)
		}
		if i, ok := vs.slot[v.Key]; ok {
			vs.vecs[i] = vec
			continue
		}
		vs.slot[v.Key] = len(vs.keys)
		vs.keys = append(vs.keys, v.Key)
		vs.vecs = append(vs.vecs, vec)
	}
	vs.gen = newer[len(newer)-1].Gen
	return nil
}

// Near is a note and its cosine to a query.
type Near struct {
	Key    string
	Cosine float64
}

// Nearest returns the k notes in scope whose vectors are nearest q,
// nearest first.
func (v *Vectors) Nearest(q *meaning.Vector, k int, scope index.Scope) []Near {
	return v.held.nearest(q, k, scope)
}

// Cosines returns the cosine of each of keys to q, of those that have a
// vector.
func (v *Vectors) Cosines(q *meaning.Vector, keys []string) map[string]float64 {
	return v.held.cosines(q, keys)
}

// Of returns the vectors of those of keys that have one.
func (v *Vectors) Of(keys []string) map[string]meaning.Vector {
	return v.held.of(keys)
}

// nearest returns the k notes in scope whose vectors are nearest q, nearest
// first. A large set is read in parts at once, one per processor.
func (vs *set) nearest(q *meaning.Vector, k int, scope index.Scope) []Near {
	vs.mu.RLock()
	defer vs.mu.RUnlock()
	parts := min(runtime.GOMAXPROCS(0), 1+len(vs.vecs)/nearestPart)
	heaps := make([]nearHeap, parts)
	var wg sync.WaitGroup
	for p := range parts {
		from, to := p*len(vs.vecs)/parts, (p+1)*len(vs.vecs)/parts
		wg.Go(func() { heaps[p] = vs.nearestIn(q, k, scope, from, to) })
	}
	wg.Wait()
	h := heaps[0]
	for _, other := range heaps[1:] {
		for _, sd := range other {
			if h.Len() < k {
				heap.Push(&h, sd)
			} else if sd.dot > h[0].dot {
				h[0] = sd
				heap.Fix(&h, 0)
			}
		}
	}
	out := make([]Near, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		sd := heap.Pop(&h).(slotDot)
		out[i] = Near{vs.keys[sd.slot], meaning.Cosine(sd.dot)}
	}
	return out
}

// nearestPart is how many vectors are worth a processor of their own.
const nearestPart = 20000

// nearestIn keeps the k best of the slots from up to to, in scope, in a
// heap with the worst on top.
func (vs *set) nearestIn(q *meaning.Vector, k int, scope index.Scope, from, to int) nearHeap {
	h := nearHeap{}
	var dots [nearestRun]int32
	for start := from; start < to; start += nearestRun {
		run := vs.vecs[start:min(to, start+nearestRun)]
		meaning.Dots(q, run, dots[:])
		for j, d := range dots[:len(run)] {
			if h.Len() == k && d <= h[0].dot {
				continue
			}
			i := start + j
			if !scope.Contains(vs.keys[i]) {
				continue
			}
			if h.Len() == k {
				h[0] = slotDot{i, d}
				heap.Fix(&h, 0)
			} else {
				heap.Push(&h, slotDot{i, d})
			}
		}
	}
	return h
}

// nearestRun is how many products nearestIn takes at once (meaning.Dots).
const nearestRun = 512

// cosines returns the cosine of q to each of keys that has a vector.
func (vs *set) cosines(q *meaning.Vector, keys []string) map[string]float64 {
	vs.mu.RLock()
	defer vs.mu.RUnlock()
	out := make(map[string]float64, len(keys))
	for _, k := range keys {
		if i, ok := vs.slot[k]; ok {
			out[k] = meaning.Cosine(meaning.Dot(q, &vs.vecs[i]))
		}
	}
	return out
}

// of returns the vectors of those of keys that have one.
func (vs *set) of(keys []string) map[string]meaning.Vector {
	vs.mu.RLock()
	defer vs.mu.RUnlock()
	out := make(map[string]meaning.Vector, len(keys))
	for _, k := range keys {
		if i, ok := vs.slot[k]; ok {
			out[k] = vs.vecs[i]
		}
	}
	return out
}

type slotDot struct {
	slot int
	dot  int32
}

// nearHeap keeps the best k, the worst of them on top.
type nearHeap []slotDot

func (h nearHeap) Len() int           { return len(h) }
func (h nearHeap) Less(i, j int) bool { return h[i].dot < h[j].dot }
func (h nearHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *nearHeap) Push(x any)        { *h = append(*h, x.(slotDot)) }
func (h *nearHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
