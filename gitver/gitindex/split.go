package gitindex

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's index checksum is SHA-1.
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// git's split index (index-format.txt, "Split index"): most entries live in
// a shared index file, $GIT_DIR/sharedindex.<SHA-1>, written once; the index
// file itself holds only what changed since, and a `link` extension naming
// the shared file with two EWAH bitmaps over its positions: entries deleted,
// and entries replaced by the first entries of the index file (stored without
// their names). The remaining entries of the index file are added ones.
//
// At 100,000 notes the whole index is about 11 MB; rewriting and hashing it
// on every write was the largest cost that grew with the board. Split, a
// write rewrites a few kilobytes. git reads and keeps this form (since 2.1),
// and so does this package whoever wrote it.

// Index is git's index in memory: whole (*Whole) or split (*Split).
type Index interface {
	// Entry returns path's stage-0 entry.
	Entry(path string) (Entry, bool)
	// Set records path (see Whole.Set).
	Set(path string, blob plumbing.Hash, st Stat)
	// Remove drops path, all its stages.
	Remove(path string)
	// Len is the number of entries.
	Len() int
}

// Split is an index in split form. The shared index is never changed: it
// is parsed once and kept by its checksum.
type Split struct {
	shared    *Whole
	sharedSum plumbing.Hash
	replaced  map[int][]byte // shared position -> its new entry, with its name
	deleted   map[int]bool   // shared positions removed
	added     *Whole         // entries the shared index lacks, in order
}

// NewSplit starts a split index over shared, whose checksum is sum: all
// its entries, nothing changed yet. shared must not be changed afterwards.
func NewSplit(shared *Whole, sum plumbing.Hash) *Split {
	return &Split{shared: shared, sharedSum: sum, replaced: map[int][]byte{}, deleted: map[int]bool{},
		added: Empty()}
}

// SharedSum is the checksum of the shared index, its name.
func (s *Split) SharedSum() plumbing.Hash { return s.sharedSum }

// Len is the number of entries.
func (s *Split) Len() int { return s.shared.Len() - len(s.deleted) + s.added.Len() }

// Entry returns path's stage-0 entry.
func (s *Split) Entry(path string) (Entry, bool) {
	if i, ok := s.added.find(path, 0); ok {
		return s.added.buf[s.added.offs[i]:s.added.entryEnd(i)], true
	}
	i, ok := s.shared.find(path, 0)
	if !ok || s.deleted[i] {
		return nil, false
	}
	if e, ok := s.replaced[i]; ok {
		return e, true
	}
	return s.shared.buf[s.shared.offs[i]:s.shared.entryEnd(i)], true
}

// Set records path (see Whole.Set): a shared entry is replaced, another
// added.
func (s *Split) Set(path string, blob plumbing.Hash, st Stat) { s.set(path, blob, &st) }

// Remove drops path, all its stages.
func (s *Split) Remove(path string) { s.set(path, plumbing.ZeroHash, nil) }

// set is Set, or Remove for st nil.
func (s *Split) set(path string, blob plumbing.Hash, st *Stat) {
	for stage := uint8(1); stage <= 3; stage++ {
		if i, ok := s.added.find(path, stage); ok {
			s.added.removeAt(i)
		}
		if i, ok := s.shared.find(path, stage); ok {
			delete(s.replaced, i)
			s.deleted[i] = true
		}
	}
	if _, ok := s.added.find(path, 0); ok {
		s.added.set(path, blob, st)
		return
	}
	i, inShared := s.shared.find(path, 0)
	switch {
	case inShared && st == nil:
		delete(s.replaced, i)
		s.deleted[i] = true
	case inShared && s.deleted[i]:
		delete(s.deleted, i)
		s.replaced[i] = encodeEntry(path, 0, blob, *st, 0)
	case inShared:
		r, ok := s.replaced[i]
		if !ok {
			r = bytes.Clone(s.shared.buf[s.shared.offs[i]:s.shared.entryEnd(i)])
		}
		putStat(r, *st, blob)
		s.replaced[i] = r
	case st != nil:
		s.added.set(path, blob, st)
	}
}

// NotShared is how many entries the index file itself holds.
func (s *Split) NotShared() int { return len(s.replaced) + s.added.Len() }

// Merged returns the whole index as one.
func (s *Split) Merged() *Whole {
	sh, ad := s.shared, s.added
	x := Empty()
	x.version = max(sh.version, ad.version)
	x.buf = append(make([]byte, 0, len(sh.buf)+len(ad.buf)), x.buf...)
	x.offs = make([]int, 0, s.Len())
	i, j := 0, 0
	for i < sh.Len() || j < ad.Len() {
		if i < sh.Len() && s.deleted[i] {
			i++
			continue
		}
		takeAdded := i == sh.Len()
		if !takeAdded && j < ad.Len() {
			order := bytes.Compare(ad.name(j), sh.name(i))
			takeAdded = order < 0 || order == 0 && ad.stage(j) <= sh.stage(i)
			if order == 0 && ad.stage(j) == sh.stage(i) {
				i++ // the added entry stands for the shared one
			}
		}
		if takeAdded {
			x.appendEntry(ad.buf[ad.offs[j]:ad.entryEnd(j)])
			j++
			continue
		}
		e, ok := s.replaced[i]
		if !ok {
			e = sh.buf[sh.offs[i]:sh.entryEnd(i)]
		} else if binary.BigEndian.Uint16(e[60:])&flagExtended != 0 {
			x.version = 3
		}
		x.appendEntry(e)
		i++
	}
	return x
}

// appendEntry adds an entry known to sort after every other.
func (x *Whole) appendEntry(e []byte) {
	x.offs = append(x.offs, len(x.buf))
	x.buf = append(x.buf, e...)
}

// Bytes returns the index file: the replacing entries without their names
// in the order of their positions, the added entries, the link extension and
// the checksum.
func (s *Split) Bytes() []byte {
	version := uint32(2)
	positions := slices.Sorted(maps.Keys(s.replaced))
	deleted := slices.Sorted(maps.Keys(s.deleted))
	link := append([]byte(nil), s.sharedSum[:]...)
	link = appendEWAH(link, deleted)
	link = appendEWAH(link, positions)
	// Made as long as the file, once: grown as it went, it was twice that.
	size := indexHeaderLen + len(positions)*entryLen(entryFixedLen+2, 0) + len(s.added.buf) + 8 + len(link) + sha1.Size
	out := make([]byte, indexHeaderLen, size)
	copy(out, "DIRC")
	for _, p := range positions {
		e := s.replaced[p]
		flags := binary.BigEndian.Uint16(e[60:])
		fixed := entryFixedLen
		if flags&flagExtended != 0 {
			fixed += 2
			version = 3
		}
		n := len(out)
		out = append(out, make([]byte, entryLen(fixed, 0))...)
		copy(out[n:], e[:fixed])
		binary.BigEndian.PutUint16(out[n+60:], flags&^flagNameMask)
	}
	out = append(out, s.added.buf[indexHeaderLen:]...)
	version = max(version, s.added.version)
	binary.BigEndian.PutUint32(out[4:], version)
	binary.BigEndian.PutUint32(out[8:], uint32(len(positions)+s.added.Len()))

	out = append(out, "link"...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(link)))
	out = append(out, link...)
	sum := sha1.Sum(out) //nolint:gosec // see the import.
	return append(out, sum[:]...)
}

// SplitFrom reads the main file of a split index: x holds its entries, link
// the link extension's payload (see Parse), shared gives the shared index
// it names.
func SplitFrom(x *Whole, link []byte, shared func(plumbing.Hash) (*Whole, error)) (*Split, error) {
	if len(link) < sha1.Size {
		return nil, fmt.Errorf("%w: link extension too short", ErrFormat)
	}
	var sum plumbing.Hash
	copy(sum[:], link)
	base, err := shared(sum)
	if err != nil {
		return nil, err
	}
	s := NewSplit(base, sum)
	var deleted, replaced []int
	if rest := link[sha1.Size:]; len(rest) > 0 {
		d, n, err := readEWAH(rest)
		if err != nil {
			return nil, err
		}
		r, m, err := readEWAH(rest[n:])
		if err != nil {
			return nil, err
		}
		if n+m != len(rest) {
			return nil, fmt.Errorf("%w: garbage after the link extension's bitmaps", ErrFormat)
		}
		deleted, replaced = d, r
	}
	if len(replaced) > x.Len() {
		return nil, fmt.Errorf("%w: %d replaced entries, %d in the index file", ErrFormat, len(replaced), x.Len())
	}
	for _, p := range deleted {
		if p >= base.Len() {
			return nil, fmt.Errorf("%w: deleted position %d past the shared index", ErrFormat, p)
		}
		s.deleted[p] = true
	}
	for k, p := range replaced {
		if p >= base.Len() || s.deleted[p] || len(x.name(k)) != 0 {
			return nil, fmt.Errorf("%w: bad replacement of shared position %d", ErrFormat, p)
		}
		e := bytes.Clone(x.buf[x.offs[k]:x.entryEnd(k)])
		// The entry takes the shared entry's name back: it is kept whole in
		// memory, and written without it again.
		flags := binary.BigEndian.Uint16(e[60:])
		fixed := entryFixedLen
		if flags&flagExtended != 0 {
			fixed += 2
		}
		name := base.name(p)
		whole := append(make([]byte, 0, entryLen(fixed, len(name))), e[:fixed]...)
		whole = append(whole, name...)
		whole = append(whole, make([]byte, entryLen(fixed, len(name))-len(whole))...)
		nameLen := min(len(name), flagNameMask)
		binary.BigEndian.PutUint16(whole[60:], flags&^flagNameMask|uint16(nameLen))
		s.replaced[p] = whole
	}
	for k := len(replaced); k < x.Len(); k++ {
		if len(x.name(k)) == 0 {
			return nil, fmt.Errorf("%w: an added entry without a name", ErrFormat)
		}
		e := x.buf[x.offs[k]:x.entryEnd(k)]
		i, _ := s.added.find(string(x.name(k)), x.stage(k))
		s.added.insertAt(i, bytes.Clone(e))
	}
	s.added.version = x.version
	return s, nil
}
