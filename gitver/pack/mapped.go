package pack

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// Mapped is a pack of any size and any shape (deltas included, as git gc
// and git fast-import write them), read in place: its index is mapped into
// memory, not parsed, and each object is found by a binary search of the
// index's names and inflated from the pack file. Its memory is the pages
// of the index a search touches and a small cache of delta bases, whatever
// the pack holds: go-git's reader keeps every name and an offset map in the
// heap, about 120 bytes an object (60 MB for a board of 100,000 notes).
//
// A Mapped is safe for use by several goroutines.
type Mapped struct {
	idx  []byte // the index file, mapped
	n    int
	f    *os.File
	size int64
	// bases keeps objects that deltas were applied to, by offset: a delta
	// chain is resolved once, not once for each object built on it.
	bases baseCache
}

// Index layout (version 2): header 8, fan-out 256*4, names 20*n, CRCs 4*n,
// offsets 4*n, large offsets 8*k, pack checksum 20, index checksum 20.
const (
	fanoutLen = 8 + 256*4
	// maxDeltaDepth bounds a delta chain: git's default is 50, its
	// --depth at most 4095.
	maxDeltaDepth = 4096
)

// OpenMapped opens the pack at packPath with its version 2 index at
// idxPath, checked for shape and against the pack's trailer.
func OpenMapped(packPath, idxPath string) (*Mapped, error) {
	fi, err := os.Open(idxPath)
	if err != nil {
		return nil, err
	}
	st, err := fi.Stat()
	if err != nil {
		fi.Close()
		return nil, err
	}
	if st.Size() < fanoutLen+40 || st.Size() > 1<<40 {
		fi.Close()
		return nil, errors.New("not a version 2 pack index")
	}
	idx, err := unix.Mmap(int(fi.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	fi.Close() // the mapping stays
	if err != nil {
		return nil, err
	}
	m := &Mapped{idx: idx}
	if err := m.checkIndex(); err != nil {
		m.Close()
		return nil, err
	}
	if m.f, err = os.Open(packPath); err == nil {
		var pst os.FileInfo
		if pst, err = m.f.Stat(); err == nil {
			m.size = pst.Size()
			var trailer [20]byte
			if _, err = m.f.ReadAt(trailer[:], m.size-20); err == nil && !bytes.Equal(trailer[:], idx[len(idx)-40:len(idx)-20]) {
				err = errors.New("the pack does not match its index")
			}
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// checkIndex checks the index's header, fan-out and length.
func (m *Mapped) checkIndex() error {
	b := m.idx
	if !bytes.Equal(b[:8], []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}) {
		return errors.New("not a version 2 pack index")
	}
	prev := uint32(0)
	for i := range 256 {
		c := binary.BigEndian.Uint32(b[8+4*i:])
		if c < prev {
			return errors.New("its index's fan-out is not sorted")
		}
		prev = c
	}
	m.n = int(prev)
	if len(b) < fanoutLen+28*m.n+40 {
		return errors.New("its index is cut short")
	}
	return nil
}

// Close unmaps the index and closes the pack.
func (m *Mapped) Close() error {
	var err error
	if m.f != nil {
		err = m.f.Close()
	}
	if m.idx != nil {
		err = errors.Join(err, unix.Munmap(m.idx))
		m.idx = nil
	}
	return err
}

// Release gives back the memory reading the pack took: the pages of the
// index it touched (the file stays mapped; the next read faults them in
// again from the page cache), and the delta bases it kept.
func (m *Mapped) Release() {
	if m.idx != nil {
		_ = unix.Madvise(m.idx, unix.MADV_DONTNEED)
	}
	m.bases.mu.Lock()
	m.bases.items, m.bases.order, m.bases.bytes = nil, nil, 0
	m.bases.mu.Unlock()
}

// Len is the number of objects in the pack.
func (m *Mapped) Len() int { return m.n }

// Find returns the offset in the pack of the object h.
func (m *Mapped) Find(h plumbing.Hash) (int64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(binary.BigEndian.Uint32(m.idx[8+4*(int(h[0])-1):]))
	}
	hi := int(binary.BigEndian.Uint32(m.idx[8+4*int(h[0]):]))
	names := m.idx[fanoutLen:]
	i := lo + sort.Search(hi-lo, func(k int) bool { return bytes.Compare(names[20*(lo+k):20*(lo+k)+20], h[:]) >= 0 })
	if i >= hi || !bytes.Equal(names[20*i:20*i+20], h[:]) {
		return 0, false
	}
	return m.offset(i)
}

// offset is the pack offset of the object at index position i.
func (m *Mapped) offset(i int) (int64, bool) {
	offs := fanoutLen + 24*m.n
	o := binary.BigEndian.Uint32(m.idx[offs+4*i:])
	if o&(1<<31) == 0 {
		return int64(o), true
	}
	at := offs + 4*m.n + 8*int(o&^(1<<31))
	if at+8 > len(m.idx)-40 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(m.idx[at:])), true
}

// Read returns the object h: its type and content, deltas applied.
func (m *Mapped) Read(h plumbing.Hash) (plumbing.ObjectType, []byte, bool, error) {
	off, ok := m.Find(h)
	if !ok {
		return 0, nil, false, nil
	}
	t, b, err := m.readAt(off, 0)
	if err != nil {
		return 0, nil, true, fmt.Errorf("object %s: %w", h, err)
	}
	return t, b, true, nil
}

// readAt reads the entry at off, depth deltas above the object read.
func (m *Mapped) readAt(off int64, depth int) (plumbing.ObjectType, []byte, error) {
	if depth > maxDeltaDepth {
		return 0, nil, errors.New("a delta chain too deep")
	}
	if t, b, ok := m.bases.get(off); ok {
		return t, b, nil
	}
	if off < 12 || off >= m.size-20 {
		return 0, nil, errors.New("an offset outside the pack")
	}
	r := bufio.NewReaderSize(io.NewSectionReader(m.f, off, m.size-20-off), 4096)
	var head [32]byte // a header, and an offset or a name
	n, _ := io.ReadFull(r, head[:])
	t, size, used, err := parseEntryHeader(head[:n])
	if err != nil {
		return 0, nil, err
	}
	var base struct {
		off  int64
		hash plumbing.Hash
	}
	switch t {
	case plumbing.OFSDeltaObject:
		rel, k, err := ofsDeltaOffset(head[used:n])
		if err != nil {
			return 0, nil, err
		}
		base.off, used = off-rel, used+k
	case plumbing.REFDeltaObject:
		if n < used+20 {
			return 0, nil, errors.New("pack entry cut short")
		}
		copy(base.hash[:], head[used:used+20])
		used += 20
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return 0, nil, fmt.Errorf("bad entry type %d", t)
	}
	// The zlib stream starts after the header (and the base): read again
	// from there, the few bytes of the header buffered aside.
	r.Reset(io.NewSectionReader(m.f, off+int64(used), m.size-20-off-int64(used)))
	content, err := inflate(r, size)
	if err != nil {
		return 0, nil, err
	}
	if t != plumbing.OFSDeltaObject && t != plumbing.REFDeltaObject {
		return t, content, nil
	}
	if base.off == 0 {
		o, ok := m.Find(base.hash)
		if !ok {
			return 0, nil, fmt.Errorf("delta base %s is not in the pack", base.hash)
		}
		base.off = o
	}
	if base.off <= 0 || base.off >= off && t == plumbing.OFSDeltaObject {
		return 0, nil, errors.New("a delta base outside the pack")
	}
	bt, bb, err := m.readAt(base.off, depth+1)
	if err != nil {
		return 0, nil, err
	}
	m.bases.put(base.off, bt, bb)
	out, err := applyDelta(bb, content)
	return bt, out, err
}

// ofsDeltaOffset decodes the distance back to an offset delta's base, and
// how many bytes it took.
func ofsDeltaOffset(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, errors.New("pack entry cut short")
	}
	c := b[0]
	rel := int64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) {
			return 0, 0, errors.New("bad delta base offset")
		}
		c = b[i]
		i++
		rel = (rel+1)<<7 | int64(c&0x7f)
	}
	return rel, i, nil
}

// applyDelta builds an object from its base and a git delta (a copy or an
// insert at a time; gitformat-pack(5), "Deltified representation").
func applyDelta(base, delta []byte) ([]byte, error) {
	bad := errors.New("a damaged delta")
	varint := func() (int, bool) {
		v, shift := 0, 0
		for {
			if len(delta) == 0 || shift > 56 {
				return 0, false
			}
			c := delta[0]
			delta = delta[1:]
			v |= int(c&0x7f) << shift
			shift += 7
			if c&0x80 == 0 {
				return v, true
			}
		}
	}
	srcSize, ok1 := varint()
	dstSize, ok2 := varint()
	if !ok1 || !ok2 || srcSize != len(base) || dstSize > 1<<32 {
		return nil, bad
	}
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0: // copy from the base
			var off, n int
			for bit, shift := 0, 0; bit < 7; bit, shift = bit+1, shift+8 {
				if op&(1<<bit) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, bad
				}
				if bit < 4 {
					off |= int(delta[0]) << shift
				} else {
					n |= int(delta[0]) << (shift - 32)
				}
				delta = delta[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) || len(out)+n > dstSize {
				return nil, bad
			}
			out = append(out, base[off:off+n]...)
		case op != 0: // insert the next op bytes
			n := int(op)
			if n > len(delta) || len(out)+n > dstSize {
				return nil, bad
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		default:
			return nil, bad
		}
	}
	if len(out) != dstSize {
		return nil, bad
	}
	return out, nil
}

// baseCache keeps recent delta bases by offset, up to baseCacheBytes.
type baseCache struct {
	mu    sync.Mutex
	items map[int64]cachedBase
	order []int64 // oldest first
	bytes int
}

type cachedBase struct {
	t plumbing.ObjectType
	b []byte
}

// baseCacheBytes bounds the cache of one pack: a chain of git's default
// depth of small notes fits many times over.
const baseCacheBytes = 4 << 20

func (c *baseCache) get(off int64) (plumbing.ObjectType, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[off]
	return e.t, e.b, ok
}

func (c *baseCache) put(off int64, t plumbing.ObjectType, b []byte) {
	if len(b) > baseCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.items == nil {
		c.items = map[int64]cachedBase{}
	}
	if _, ok := c.items[off]; ok {
		return
	}
	c.items[off] = cachedBase{t, b}
	c.order = append(c.order, off)
	c.bytes += len(b)
	for c.bytes > baseCacheBytes && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.bytes -= len(c.items[old].b)
		delete(c.items, old)
	}
}
