package gitindex

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's index checksum is SHA-1.
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// Whole is git's index file (versions 2 and 3) in its whole form, kept as its bytes: one
// entry is updated by patching its 62 bytes in place, and the file is written
// back with one checksum. go-git's encoder re-encoded every entry through
// reflection, about 125 ms a write for 100,000 notes; this is a copy and a
// SHA-1 of the bytes.
//
// Optional extensions are dropped when the index is written: they are caches
// git rebuilds (the cache tree would otherwise go stale for the paths
// written). The split index's `link` extension is read by split.go; an
// index with another required extension (sparse directories) is refused;
// version 4 (prefix-compressed paths) is read through go-git and written
// back as version 2.
//
// An entry's path and stage are read from its bytes where it is looked up,
// not kept beside them: at 100,000 notes a string for each path was 6.5 MB
// of a board's engine, and 100,000 allocations each time the index was read.
type Whole struct {
	version uint32
	buf     []byte // the 12-byte header and the entries: no extensions, no checksum
	offs    []int  // where each entry starts in buf
}

const (
	indexHeaderLen = 12
	entryFixedLen  = 62 // stat data, object name and flags
	flagExtended   = 0x4000
	flagStageShift = 12
	flagNameMask   = 0x0fff
)

// ErrFormat says an index file is corrupt or of a form this package does
// not keep.
var ErrFormat = errors.New("git index file is corrupt or of an unknown format")

// ParseShared reads a split index's shared index, sum its name: its
// checksum must be sum, and it must link no other.
func ParseShared(data []byte, sum plumbing.Hash) (*Whole, error) {
	if len(data) < sha1.Size || sha1.Sum(data[:len(data)-sha1.Size]) != [sha1.Size]byte(data[len(data)-sha1.Size:]) || //nolint:gosec // see the import.
		!bytes.Equal(data[len(data)-sha1.Size:], sum[:]) {
		return nil, fmt.Errorf("%w: its checksum is not its name", ErrFormat)
	}
	x, link, err := Parse(data)
	if err == nil && link != nil {
		err = fmt.Errorf("%w: a shared index links another", ErrFormat)
	}
	return x, err
}

// Parse reads an index file's entries, and the payload of its `link`
// extension when it is the main file of a split index (nil if not; see
// SplitFrom). x keeps data: the caller must not change it afterwards.
func Parse(data []byte) (x *Whole, link []byte, err error) {
	if len(data) < indexHeaderLen+sha1.Size || string(data[:4]) != "DIRC" {
		return nil, nil, ErrFormat
	}
	version := binary.BigEndian.Uint32(data[4:8])
	count := int(binary.BigEndian.Uint32(data[8:12]))
	if version == 4 {
		x, err := wholeFromGoGit(data)
		return x, nil, err
	}
	if version != 2 && version != 3 {
		return nil, nil, fmt.Errorf("%w: version %d", ErrFormat, version)
	}
	body := data[:len(data)-sha1.Size]
	x = &Whole{version: version, offs: make([]int, 0, count)}
	off := indexHeaderLen
	for range count {
		if off+entryFixedLen > len(body) {
			return nil, nil, ErrFormat
		}
		flags := binary.BigEndian.Uint16(body[off+60:])
		nameStart := off + entryFixedLen
		if flags&flagExtended != 0 {
			if version < 3 {
				return nil, nil, ErrFormat
			}
			nameStart += 2
		}
		// The path ends at a NUL, and is as long as the flags say,
		// unless too long for them (entryName reads it so).
		nul := bytes.IndexByte(body[nameStart:], 0)
		if n := int(flags & flagNameMask); nul < 0 || n != flagNameMask && n != nul || n == flagNameMask && nul < n {
			return nil, nil, ErrFormat
		}
		next := off + entryLen(nameStart-off, nul)
		if next > len(body) {
			return nil, nil, ErrFormat
		}
		x.offs = append(x.offs, off)
		off = next
	}
	// Extensions follow: a required one (signature not starting A-Z) other
	// than the split index's link means a format this package does not keep.
	for ext := off; ext+8 <= len(body); {
		sig := body[ext : ext+4]
		size := int(binary.BigEndian.Uint32(body[ext+4:]))
		if ext+8+size > len(body) {
			return nil, nil, ErrFormat
		}
		switch {
		case string(sig) == "link":
			link = body[ext+8 : ext+8+size]
		case sig[0] < 'A' || sig[0] > 'Z':
			return nil, nil, fmt.Errorf("the git index uses the %q extension (sparse checkout), which blackboard-mcp cannot keep: disable the sparse index (git sparse-checkout init --no-sparse-index)", sig)
		}
		ext += 8 + size
	}
	// The entries are kept where they were read, not copied: an insert
	// past their end makes a new array (the capacity ends with them).
	x.buf = body[:off:off]
	return x, link, nil
}

// entryLen is the padded length of an entry whose name starts at nameOff
// and is n bytes long: at least one NUL, to a multiple of 8.
func entryLen(nameOff, n int) int {
	return (nameOff + n + 8) &^ 7
}

// wholeFromGoGit decodes a version-4 index with go-git and re-encodes its
// entries as version 2.
func wholeFromGoGit(data []byte) (*Whole, error) {
	idx := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
		return nil, fmt.Errorf("read git index: %w", err)
	}
	x := &Whole{version: 2, buf: make([]byte, indexHeaderLen)}
	copy(x.buf, "DIRC")
	binary.BigEndian.PutUint32(x.buf[4:], 2)
	for _, e := range idx.Entries {
		if e.IntentToAdd || e.SkipWorktree {
			x.version = 3
		}
	}
	binary.BigEndian.PutUint32(x.buf[4:], x.version)
	for _, e := range idx.Entries {
		var ext uint16
		if e.IntentToAdd {
			ext |= 1 << 13
		}
		if e.SkipWorktree {
			ext |= 1 << 14
		}
		st := Stat{CTime: e.CreatedAt, MTime: e.ModifiedAt, Dev: e.Dev, Ino: e.Inode, Mode: uint32(e.Mode),
			UID: e.UID, GID: e.GID, Size: e.Size}
		x.insertAt(len(x.offs), encodeEntry(e.Name, uint8(e.Stage), e.Hash, st, ext))
	}
	return x, nil
}

// Stat is what the index records of a file.
type Stat struct {
	CTime, MTime             time.Time
	Dev, Ino, Mode, UID, GID uint32
	Size                     uint32
}

// StatOf is what the index records of the file fi describes: a regular
// file, mode 100644.
func StatOf(fi os.FileInfo) Stat {
	st := Stat{MTime: fi.ModTime(), Mode: 0o100644, Size: uint32(fi.Size())}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.CTime = time.Unix(sys.Ctim.Sec, sys.Ctim.Nsec)
		st.Dev, st.Ino, st.UID, st.GID = uint32(sys.Dev), uint32(sys.Ino), sys.Uid, sys.Gid
	}
	return st
}

func putStat(b []byte, st Stat, h plumbing.Hash) {
	be := binary.BigEndian
	put := func(off int, t time.Time) {
		if t.IsZero() {
			be.PutUint64(b[off:], 0)
			return
		}
		be.PutUint32(b[off:], uint32(t.Unix()))
		be.PutUint32(b[off+4:], uint32(t.Nanosecond()))
	}
	put(0, st.CTime)
	put(8, st.MTime)
	be.PutUint32(b[16:], st.Dev)
	be.PutUint32(b[20:], st.Ino)
	be.PutUint32(b[24:], st.Mode)
	be.PutUint32(b[28:], st.UID)
	be.PutUint32(b[32:], st.GID)
	be.PutUint32(b[36:], st.Size)
	copy(b[40:60], h[:])
}

// encodeEntry renders one entry; ext is the version-3 extended flags (0
// for none).
func encodeEntry(name string, stage uint8, h plumbing.Hash, st Stat, ext uint16) []byte {
	nameOff := entryFixedLen
	if ext != 0 {
		nameOff += 2
	}
	b := make([]byte, entryLen(nameOff, len(name)))
	putStat(b, st, h)
	flags := uint16(stage&3) << flagStageShift
	if len(name) < flagNameMask {
		flags |= uint16(len(name))
	} else {
		flags |= flagNameMask
	}
	if ext != 0 {
		flags |= flagExtended
		binary.BigEndian.PutUint16(b[entryFixedLen:], ext)
	}
	binary.BigEndian.PutUint16(b[60:], flags)
	copy(b[nameOff:], name)
	return b
}

// find returns the position of (name, stage), or where it would go.
func (x *Whole) find(name string, stage uint8) (int, bool) {
	i := sort.Search(len(x.offs), func(i int) bool {
		if n := x.name(i); string(n) != name {
			return string(n) > name
		}
		return x.stage(i) >= stage
	})
	return i, i < len(x.offs) && string(x.name(i)) == name && x.stage(i) == stage
}

// name is the path of entry i, as its bytes in buf.
func (x *Whole) name(i int) []byte { return entryName(x.buf[x.offs[i]:]) }

// stage is the stage of entry i: 0, or 1-3 for the sides of a conflict.
func (x *Whole) stage(i int) uint8 { return entryStage(x.buf[x.offs[i]:]) }

// entryName is the path of the entry e starts with: after its fixed part
// (and its extended flags), as long as its flags say, or up to its NUL
// when too long for them to say.
func entryName(e []byte) []byte {
	flags := binary.BigEndian.Uint16(e[60:])
	nameOff := entryFixedLen
	if flags&flagExtended != 0 {
		nameOff += 2
	}
	n := int(flags & flagNameMask)
	if n == flagNameMask {
		n = bytes.IndexByte(e[nameOff:], 0)
	}
	return e[nameOff : nameOff+n]
}

// entryStage is the stage of the entry e starts with.
func entryStage(e []byte) uint8 { return uint8(binary.BigEndian.Uint16(e[60:]) >> flagStageShift & 3) }

// Entry returns path's stage-0 entry.
func (x *Whole) Entry(path string) (Entry, bool) {
	i, ok := x.find(path, 0)
	if !ok {
		return nil, false
	}
	return x.buf[x.offs[i]:x.entryEnd(i)], true
}

// Len is the number of entries.
func (x *Whole) Len() int { return len(x.offs) }

func (x *Whole) entryEnd(i int) int {
	if i+1 < len(x.offs) {
		return x.offs[i+1]
	}
	return len(x.buf)
}

// insertAt puts an encoded entry at position i, moving the entries after
// it in place.
func (x *Whole) insertAt(i int, entry []byte) {
	off := len(x.buf)
	if i < len(x.offs) {
		off = x.offs[i]
	}
	x.buf = slices.Insert(x.buf, off, entry...)
	for j := i; j < len(x.offs); j++ {
		x.offs[j] += len(entry)
	}
	x.offs = slices.Insert(x.offs, i, off)
}

// removeAt drops the entry at position i.
func (x *Whole) removeAt(i int) {
	start, end := x.offs[i], x.entryEnd(i)
	n := end - start
	x.buf = slices.Delete(x.buf, start, end)
	for j := i + 1; j < len(x.offs); j++ {
		x.offs[j] -= n
	}
	x.offs = slices.Delete(x.offs, i, i+1)
}

// Set records path as blob with the stat data st: its stage-0 entry is
// patched in place, or inserted in order; conflict stages of the path are
// dropped (it now has one committed content).
func (x *Whole) Set(path string, blob plumbing.Hash, st Stat) { x.set(path, blob, &st) }

// Remove drops path, all its stages.
func (x *Whole) Remove(path string) { x.set(path, plumbing.ZeroHash, nil) }

// set is Set, or Remove for st nil.
func (x *Whole) set(path string, blob plumbing.Hash, st *Stat) {
	for stage := uint8(1); stage <= 3; stage++ {
		if i, ok := x.find(path, stage); ok {
			x.removeAt(i)
		}
	}
	i, ok := x.find(path, 0)
	switch {
	case st == nil && ok:
		x.removeAt(i)
	case st == nil:
	case ok:
		putStat(x.buf[x.offs[i]:], *st, blob)
	default:
		x.insertAt(i, encodeEntry(path, 0, blob, *st, 0))
	}
}

// Bytes returns the complete file: header with the entry count, entries,
// checksum.
func (x *Whole) Bytes() []byte {
	binary.BigEndian.PutUint32(x.buf[4:], x.version)
	binary.BigEndian.PutUint32(x.buf[8:], uint32(len(x.offs)))
	sum := sha1.Sum(x.buf) //nolint:gosec // see the import.
	return append(x.buf, sum[:]...)
}

// Empty is the index of a repository that has none yet.
func Empty() *Whole {
	b := make([]byte, indexHeaderLen)
	copy(b, "DIRC")
	return &Whole{version: 2, buf: b}
}

// Entry is one entry of the index as stored: stat data, the object name at
// 40..60, flags, the path.
type Entry []byte

// Blob is the object the entry records.
func (e Entry) Blob() plumbing.Hash {
	var h plumbing.Hash
	copy(h[:], e[40:60])
	return h
}

// Matches reports whether e records st's modification time (to the
// nanosecond), inode and size, as the index keeps them (32 bits each).
func (e Entry) Matches(st Stat) bool {
	be := binary.BigEndian
	return be.Uint32(e[8:]) == uint32(st.MTime.Unix()) && be.Uint32(e[12:]) == uint32(st.MTime.Nanosecond()) &&
		be.Uint32(e[20:]) == st.Ino && be.Uint32(e[36:]) == st.Size
}
