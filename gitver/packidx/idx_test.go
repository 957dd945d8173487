package packidx

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // test object names.
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// entries is n entries with made-up names, offsets and CRCs, as a pack of n
// objects would have them; one offset past 2 GiB when large.
func entries(n int, large bool) []Entry {
	out := make([]Entry, n)
	off := uint64(12)
	for i := range out {
		out[i] = Entry{Hash: plumbing.Hash(sha1.Sum(fmt.Appendf(nil, "object %d", i))), //nolint:gosec // test names.
			Offset: off, CRC: crc32.ChecksumIEEE(fmt.Appendf(nil, "%d", i))}
		off += 100 + uint64(i%50)
		if large && i == n/2 {
			off += 3 << 30
		}
	}
	return out
}

var packSum = plumbing.Hash(sha1.Sum([]byte("pack"))) //nolint:gosec // a test checksum.

// goGit encodes entries with go-git's idxfile.Writer and Encoder.
func goGit(t testing.TB, es []Entry) []byte {
	t.Helper()
	var w idxfile.Writer
	if err := w.OnHeader(uint32(len(es))); err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		w.Add(e.Hash, e.Offset, e.CRC)
	}
	if err := w.OnFooter(packSum); err != nil {
		t.Fatal(err)
	}
	m, err := w.Index()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := idxfile.NewEncoder(&b).Encode(m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestEncodeAsGoGit proves Encode writes the bytes go-git's idxfile encoder
// writes for the same entries (see the package doc for why it is kept).
func TestEncodeAsGoGit(t *testing.T) {
	for _, c := range []struct {
		n     int
		large bool
	}{{0, false}, {1, false}, {3, false}, {300, false}, {2000, false}, {300, true}} {
		es := entries(c.n, c.large)
		if got, want := Encode(es, packSum), goGit(t, es); !bytes.Equal(got, want) {
			t.Errorf("%d entries (large %v): Encode wrote %d bytes, go-git %d, not the same", c.n, c.large, len(got), len(want))
		}
	}
}

// TestParseReadsEncode proves an index reads back as written, and that its
// damage is found: every byte flipped, every cut.
func TestParseReadsEncode(t *testing.T) {
	es := entries(300, true)
	b := Encode(es, packSum)
	x, err := Parse(b, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if x.PackSum != packSum {
		t.Errorf("pack checksum %s, want %s", x.PackSum, packSum)
	}
	for _, e := range es {
		i, ok := x.Find(e.Hash)
		if !ok || x.Offsets[i] != e.Offset || x.CRCs[i] != e.CRC {
			t.Fatalf("%s: found %v at %d, offset %d crc %d; want offset %d crc %d", e.Hash, ok, i, x.Offsets[i], x.CRCs[i], e.Offset, e.CRC)
		}
	}
	if _, ok := x.Find(plumbing.Hash{}); ok {
		t.Error("the zero name is found")
	}
	if !slices.IsSortedFunc(x.IDs, func(a, b plumbing.Hash) int { return bytes.Compare(a[:], b[:]) }) {
		t.Error("names not sorted")
	}
	if _, err := Parse(b, 299); !errors.Is(err, ErrTooMany) {
		t.Errorf("past the limit: %v, want ErrTooMany", err)
	}
	for i := range b {
		d := bytes.Clone(b)
		d[i] ^= 0x10
		if _, err := Parse(d, 1000); err == nil {
			t.Fatalf("byte %d flipped: parsed", i)
		}
	}
	for cut := range len(b) {
		if _, err := Parse(b[:cut], 1000); err == nil {
			t.Fatalf("cut at %d: parsed", cut)
		}
	}
}

// BenchmarkLookup compares finding an object's offset and CRC here and
// through go-git's MemoryIndex, in an index of a merged pack's size.
func BenchmarkLookup(b *testing.B) {
	es := entries(2000, false)
	data := Encode(es, packSum)
	b.Run("packidx", func(b *testing.B) {
		x, err := Parse(data, 1<<16)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			e := es[i%len(es)]
			k, ok := x.Find(e.Hash)
			if !ok || x.Offsets[k] != e.Offset || x.CRCs[k] != e.CRC {
				b.Fatal("not found")
			}
		}
	})
	b.Run("idxfile", func(b *testing.B) {
		m := idxfile.NewMemoryIndex()
		if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(m); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			e := es[i%len(es)]
			off, err := m.FindOffset(e.Hash)
			if err != nil || uint64(off) != e.Offset {
				b.Fatal("not found", err)
			}
			if crc, err := m.FindCRC32(e.Hash); err != nil || crc != e.CRC {
				b.Fatal("bad crc", err)
			}
		}
	})
}

// BenchmarkParse compares reading an index here and through go-git's
// Decoder.
func BenchmarkParse(b *testing.B) {
	data := Encode(entries(2000, false), packSum)
	b.Run("packidx", func(b *testing.B) {
		for range b.N {
			if _, err := Parse(data, 1<<16); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("idxfile", func(b *testing.B) {
		for range b.N {
			if err := idxfile.NewDecoder(bytes.NewReader(data)).Decode(idxfile.NewMemoryIndex()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEncode compares writing an index here and through go-git's
// Writer and Encoder.
func BenchmarkEncode(b *testing.B) {
	es := entries(2000, false)
	b.Run("packidx", func(b *testing.B) {
		for range b.N {
			Encode(es, packSum)
		}
	})
	b.Run("idxfile", func(b *testing.B) {
		for range b.N {
			goGit(b, es)
		}
	})
}
