package packidx

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git names packs and checks indexes by SHA-1.
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// header starts every version 2 pack index: a magic number no version 1
// index can start with, and the version.
var header = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// fanoutLen is the size of the header and the fan-out table, 256 counts.
const fanoutLen = 8 + 256*4

// Entry is one object of a pack: its name, where its entry starts in the
// pack, and the CRC-32 of the entry as stored.
type Entry struct {
	Hash   plumbing.Hash
	Offset uint64
	CRC    uint32
}

// Encode writes a version 2 pack index of entries (in any order, names
// unique) for the pack whose checksum is packSum.
func Encode(entries []Entry, packSum plumbing.Hash) []byte {
	sorted := slices.Clone(entries)
	sort.Slice(sorted, func(i, j int) bool { return bytes.Compare(sorted[i].Hash[:], sorted[j].Hash[:]) < 0 })
	b := make([]byte, 0, fanoutLen+len(sorted)*28+40)
	b = append(b, header...)
	var fanout [256]uint32
	for _, e := range sorted {
		fanout[e.Hash[0]]++
	}
	total := uint32(0)
	for i := range fanout {
		total += fanout[i]
		b = binary.BigEndian.AppendUint32(b, total)
	}
	for _, e := range sorted {
		b = append(b, e.Hash[:]...)
	}
	for _, e := range sorted {
		b = binary.BigEndian.AppendUint32(b, e.CRC)
	}
	var large []uint64
	for _, e := range sorted {
		if e.Offset < 1<<31 {
			b = binary.BigEndian.AppendUint32(b, uint32(e.Offset))
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(1<<31|len(large)))
		large = append(large, e.Offset)
	}
	for _, o := range large {
		b = binary.BigEndian.AppendUint64(b, o)
	}
	b = append(b, packSum[:]...)
	sum := sha1.Sum(b) //nolint:gosec // git's index checksum.
	return append(b, sum[:]...)
}

// Index is a parsed pack index: the objects sorted by name, with their
// offsets and CRCs at the same positions.
type Index struct {
	IDs     []plumbing.Hash
	Offsets []uint64
	CRCs    []uint32
	// PackSum is the checksum of the pack the index describes: its last
	// 20 bytes.
	PackSum plumbing.Hash
}

// ErrTooMany says an index lists more objects than Parse was allowed.
var ErrTooMany = errors.New("too many objects in the pack")

// Parse reads a version 2 pack index, checked against its own checksum. It
// refuses one of more than limit objects (ErrTooMany) before reading them.
func Parse(b []byte, limit int) (*Index, error) {
	if len(b) < fanoutLen+40 || !bytes.Equal(b[:8], header) {
		return nil, errors.New("not a version 2 pack index")
	}
	if sum := sha1.Sum(b[:len(b)-20]); !bytes.Equal(sum[:], b[len(b)-20:]) { //nolint:gosec // git's checksum.
		return nil, errors.New("its index is damaged")
	}
	n := int(binary.BigEndian.Uint32(b[8+255*4:]))
	if n > limit {
		return nil, fmt.Errorf("%w: %d objects, more than %d", ErrTooMany, n, limit)
	}
	names := fanoutLen
	crcs := names + 20*n
	offs := crcs + 4*n
	large := offs + 4*n
	if len(b) < large+40 {
		return nil, errors.New("its index is cut short")
	}
	x := &Index{IDs: make([]plumbing.Hash, n), Offsets: make([]uint64, n), CRCs: make([]uint32, n)}
	copy(x.PackSum[:], b[len(b)-40:])
	for i := range n {
		copy(x.IDs[i][:], b[names+20*i:])
		x.CRCs[i] = binary.BigEndian.Uint32(b[crcs+4*i:])
		o := binary.BigEndian.Uint32(b[offs+4*i:])
		if o&(1<<31) == 0 {
			x.Offsets[i] = uint64(o)
			continue
		}
		at := large + 8*int(o&^(1<<31))
		if at+8 > len(b)-40 {
			return nil, errors.New("a bad large offset in its index")
		}
		x.Offsets[i] = binary.BigEndian.Uint64(b[at:])
	}
	return x, nil
}

// Find returns the position of h in the index.
func (x *Index) Find(h plumbing.Hash) (int, bool) {
	return sort.Find(len(x.IDs), func(i int) int { return bytes.Compare(h[:], x.IDs[i][:]) })
}
