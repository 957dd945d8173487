package pack

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git names packs by SHA-1.
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"

	"github.com/blackboard-mcp/blackboard-mcp/gitver/packidx"
	"github.com/go-git/go-git/v5/plumbing"
)

// Deflate writes content, an object of type t, to w as one zlib stream.
// How hard to compress is the caller's choice.
type Deflate func(w io.Writer, t plumbing.ObjectType, content []byte) error

// defaultDeflate compresses at zlib's default level.
func defaultDeflate(w io.Writer, _ plumbing.ObjectType, content []byte) error {
	zw := zlib.NewWriter(w)
	if _, err := zw.Write(content); err != nil {
		return err
	}
	return zw.Close()
}

// Writer builds a pack of whole objects in memory.
type Writer struct {
	buf     bytes.Buffer
	deflate Deflate
	entries []packidx.Entry
	seen    map[plumbing.Hash]bool
}

// NewWriter starts a pack of about count objects (Finish sets the count
// it holds), compressed by deflate (nil: zlib's default level).
func NewWriter(count int, deflate Deflate) *Writer {
	if deflate == nil {
		deflate = defaultDeflate
	}
	w := &Writer{deflate: deflate, seen: map[plumbing.Hash]bool{}}
	w.buf.WriteString("PACK")
	_ = binary.Write(&w.buf, binary.BigEndian, uint32(2))
	_ = binary.Write(&w.buf, binary.BigEndian, uint32(count)) // set again by Finish
	return w
}

// Add compresses the object h, of type t, into the pack; an object added
// before is not added again.
func (w *Writer) Add(h plumbing.Hash, t plumbing.ObjectType, content []byte) error {
	if w.seen[h] {
		return nil
	}
	start := w.buf.Len()
	writeEntryHeader(&w.buf, t, len(content))
	if err := w.deflate(&w.buf, t, content); err != nil {
		return err
	}
	w.record(h, w.buf.Bytes()[start:], uint64(start))
	return nil
}

// CopyEntry appends the entry of object h as another pack stored it
// (Reader.Entries): header and compressed content, not a delta.
func (w *Writer) CopyEntry(h plumbing.Hash, entry []byte) {
	if w.seen[h] {
		return
	}
	start := w.buf.Len()
	w.buf.Write(entry)
	w.record(h, entry, uint64(start))
}

// record notes an entry written at offset.
func (w *Writer) record(h plumbing.Hash, entry []byte, offset uint64) {
	w.seen[h] = true
	w.entries = append(w.entries, packidx.Entry{Hash: h, Offset: offset, CRC: crc32.ChecksumIEEE(entry)})
}

// writeEntryHeader writes an entry's type and inflated size: the type and
// the low four bits of the size, then seven bits a byte, each byte but the
// last with its high bit set.
func writeEntryHeader(b *bytes.Buffer, t plumbing.ObjectType, size int) {
	c := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		b.WriteByte(c | 0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	b.WriteByte(c)
}

// Finish ends the pack with its checksum and returns the pack, its index,
// and its name (the checksum in hex). The Writer is done with.
func (w *Writer) Finish() (pack, idx []byte, name string) {
	pack = w.buf.Bytes()
	binary.BigEndian.PutUint32(pack[8:12], uint32(len(w.entries)))
	sum := sha1.Sum(pack) //nolint:gosec // git's pack checksum.
	pack = append(pack, sum[:]...)
	return pack, packidx.Encode(w.entries, sum), hex.EncodeToString(sum[:])
}
