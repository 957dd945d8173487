package gitver

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestLooseObjectsReadAsWhole: a loose object read header first, into a
// slice of the size it says, by a decompressor kept between objects, is
// what reading it whole finds, on random objects of every size around the
// header's read, and on streams that lie about their size, are cut short
// or fail zlib's checksum: each of those is refused.
func TestLooseObjectsReadAsWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 5))
	kinds := []string{"blob", "tree", "commit", "tag"}
	for c := range 2000 {
		kind := kinds[rng.IntN(len(kinds))]
		content := make([]byte, []int{0, 1, 15, 20, 21, 40, 1000, 70000}[rng.IntN(8)]+rng.IntN(3))
		for i := range content {
			content[i] = byte(rng.IntN(256))
		}
		size := len(content)
		fault := rng.IntN(5)
		switch fault {
		case 1:
			size++ // says more than it holds
		case 2:
			size = max(0, size-1) // says less
		}
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		fmt.Fprintf(zw, "%s %d\x00", kind, size)
		if _, err := zw.Write(content); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		stream := z.Bytes()
		switch fault {
		case 3:
			stream = stream[:len(stream)-1-rng.IntN(min(4, len(stream)-2))] // cut short
		case 4:
			stream = bytes.Clone(stream)
			stream[len(stream)-1] ^= 0x55 // its checksum
		}
		zr, err := looseReader(bytes.NewReader(stream))
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		gotKind, got, err := readLooseObject(zr)
		looseReaders.Put(zr)
		wantKind, want, werr := readWhole(stream)
		if (err == nil) != (werr == nil) {
			t.Fatalf("case %d (fault %d, %d bytes): read as it comes: %v; read whole: %v", c, fault, len(content), err, werr)
		}
		if err == nil && (gotKind != wantKind || !bytes.Equal(got, want)) {
			t.Fatalf("case %d: %v of %d bytes, whole %v of %d", c, gotKind, len(got), wantKind, len(want))
		}
		if fault == 0 && err != nil {
			t.Fatalf("case %d: a sound object refused: %v", c, err)
		}
	}
}

// readWhole reads a loose object's stream to its end, then takes its
// header apart.
func readWhole(stream []byte) (plumbing.ObjectType, []byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(stream))
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return 0, nil, err
	}
	head, content, ok := bytes.Cut(b, []byte{0})
	kind, size, ok2 := bytes.Cut(head, []byte{' '})
	n, err := strconv.Atoi(string(size))
	if !ok || !ok2 || err != nil || n != len(content) {
		return 0, nil, fmt.Errorf("a bad header")
	}
	t, err := plumbing.ParseObjectType(string(kind))
	return t, content, err
}
