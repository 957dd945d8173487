package pack

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git's pack checksum.
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/blackboard-mcp/blackboard-mcp/gitver/packidx"
	"github.com/go-git/go-git/v5/plumbing"
)

// ErrDelta says an entry is stored as a delta, which this package does not
// read (go-git does).
var ErrDelta = errors.New("pack entry is a delta")

// Reader is a pack file, open, and its index.
type Reader struct {
	idx  *packidx.Index
	ends []uint64 // where each entry ends, by index position
	f    *os.File
	size int64
}

// Open opens the pack file at path, described by idx, and checks that the
// pack is the one idx describes (its trailer is idx's pack checksum).
func Open(path string, idx *packidx.Index) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := &Reader{idx: idx, f: f}
	fi, err := f.Stat()
	var trailer [20]byte
	if err == nil {
		r.size = fi.Size()
		_, err = f.ReadAt(trailer[:], r.size-20)
	}
	if err == nil && !bytes.Equal(trailer[:], idx.PackSum[:]) {
		err = errors.New("the pack does not match its index")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	r.ends = entryEnds(idx.Offsets, r.size)
	return r, nil
}

// Close closes the pack file.
func (r *Reader) Close() error { return r.f.Close() }

// Len is the number of objects in the pack.
func (r *Reader) Len() int { return len(r.idx.IDs) }

// Find returns the position of h in the pack's index.
func (r *Reader) Find(h plumbing.Hash) (int, bool) { return r.idx.Find(h) }

// entryEnds returns where each entry ends (the next entry's start, or the
// pack's checksum), by index position.
func entryEnds(offsets []uint64, size int64) []uint64 {
	order := make([]int, len(offsets))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return offsets[order[a]] < offsets[order[b]] })
	ends := make([]uint64, len(offsets))
	for k, i := range order {
		if k+1 < len(order) {
			ends[i] = offsets[order[k+1]]
		} else {
			ends[i] = uint64(size) - 20
		}
	}
	return ends
}

// Read returns the object at index position i: ErrDelta for a delta.
func (r *Reader) Read(i int) (plumbing.ObjectType, []byte, error) {
	// The whole entry in one read, inflated from memory.
	entry := make([]byte, r.ends[i]-r.idx.Offsets[i])
	if _, err := r.f.ReadAt(entry, int64(r.idx.Offsets[i])); err != nil {
		return 0, nil, err
	}
	t, size, used, err := parseEntryHeader(entry)
	if err != nil {
		return 0, nil, err
	}
	if t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		return 0, nil, ErrDelta
	}
	if t < plumbing.CommitObject || t > plumbing.TagObject {
		return 0, nil, fmt.Errorf("object %s: bad type %d", r.idx.IDs[i], t)
	}
	content, err := inflate(bytes.NewReader(entry[used:]), size)
	if err != nil {
		return 0, nil, fmt.Errorf("object %s: %w", r.idx.IDs[i], err)
	}
	return t, content, nil
}

// RawEntry is one object of a pack, as the pack stores it: its header and
// compressed content.
type RawEntry struct {
	Hash  plumbing.Hash
	Entry []byte
}

// Entries reads the pack in one read and returns it and its entries as
// stored, each checked against its CRC. A delta is an error: it names an
// offset in its own pack, and the program writes whole objects only.
func (r *Reader) Entries() ([]byte, []RawEntry, error) {
	data := make([]byte, r.size)
	if _, err := r.f.ReadAt(data, 0); err != nil {
		return nil, nil, err
	}
	x := r.idx
	entries := make([]RawEntry, len(x.IDs))
	for i, h := range x.IDs {
		if x.Offsets[i] >= r.ends[i] || r.ends[i] > uint64(len(data)) {
			return nil, nil, fmt.Errorf("object %s out of bounds", h)
		}
		entry := data[x.Offsets[i]:r.ends[i]]
		t, _, _, err := parseEntryHeader(entry)
		if err != nil || t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject || crc32.ChecksumIEEE(entry) != x.CRCs[i] {
			return nil, nil, fmt.Errorf("object %s is not a whole object as stored", h)
		}
		entries[i] = RawEntry{Hash: h, Entry: entry}
	}
	return data, entries, nil
}

// Checksum is the SHA-1 of a pack's bytes but its trailer: the pack's name
// when it is whole.
func Checksum(data []byte) plumbing.Hash {
	if len(data) < 20 {
		return plumbing.ZeroHash
	}
	return plumbing.Hash(sha1.Sum(data[:len(data)-20])) //nolint:gosec // git's checksum.
}

// zlibReaders keeps decompressors between objects.
var zlibReaders sync.Pool

// inflate decompresses size bytes from a zlib stream.
func inflate(src io.Reader, size int) ([]byte, error) {
	var zr io.ReadCloser
	if v, ok := zlibReaders.Get().(io.ReadCloser); ok {
		if err := v.(zlib.Resetter).Reset(src, nil); err != nil {
			return nil, err
		}
		zr = v
	} else {
		var err error
		if zr, err = zlib.NewReader(src); err != nil {
			return nil, err
		}
	}
	defer zlibReaders.Put(zr)
	content := make([]byte, size)
	if _, err := io.ReadFull(zr, content); err != nil {
		return nil, err
	}
	return content, nil
}

// parseEntryHeader reads an entry's type and inflated size, and how many
// bytes the header took.
func parseEntryHeader(b []byte) (t plumbing.ObjectType, size int, used int, err error) {
	if len(b) == 0 {
		return 0, 0, 0, errors.New("pack entry cut short")
	}
	c := b[0]
	t = plumbing.ObjectType(c >> 4 & 7)
	size = int(c & 0x0f)
	shift := 4
	used = 1
	for c&0x80 != 0 {
		if used >= len(b) || shift > 56 {
			return 0, 0, 0, errors.New("bad pack entry header")
		}
		c = b[used]
		used++
		size |= int(c&0x7f) << shift
		shift += 7
	}
	return t, size, used, nil
}
