package gitindex

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEWAHRoundTrip proves the bitmaps of the split index's link extension
// read back as written, for sets that are empty, sparse, dense, with gaps of
// many words and with bits at word edges.
func TestEWAHRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := [][]int{nil, {0}, {63}, {64}, {0, 63, 64, 127, 128}, {100_000}, {5, 70_000, 70_001, 70_063, 70_064}}
	for range 200 {
		var s []int
		limit := 1 + rng.IntN(200_000)
		for range rng.IntN(300) {
			s = append(s, rng.IntN(limit))
		}
		slices.Sort(s)
		sets = append(sets, slices.Compact(s))
	}
	for _, want := range sets {
		b := appendEWAH([]byte("x"), want)
		got, n, err := readEWAH(b[1:])
		if err != nil || n != len(b)-1 || !slices.Equal(got, want) {
			t.Fatalf("EWAH of %v read back as %v (n %d of %d, %v)", want, got, n, len(b)-1, err)
		}
	}
}

// TestEWAHRuns proves a run-length word of ones (as git writes for a run of
// full words) is read as every bit it covers, and truncated input is an
// error, never a panic.
func TestEWAHRuns(t *testing.T) {
	// A run-length word: run bit 1 over two words, then one literal word
	// with bit 3 set: positions 0..127 and 131.
	words := []uint64{1<<33 | 2<<1 | 1, 1 << 3}
	b := binary.BigEndian.AppendUint32(nil, 132)
	b = binary.BigEndian.AppendUint32(b, uint32(len(words)))
	for _, w := range words {
		b = binary.BigEndian.AppendUint64(b, w)
	}
	b = binary.BigEndian.AppendUint32(b, 0)
	got, n, err := readEWAH(b)
	if err != nil || n != len(b) || len(got) != 129 || got[127] != 127 || got[128] != 131 {
		t.Fatalf("run of ones read as %d positions (%v), n %d, %v", len(got), got, n, err)
	}
	for cut := range len(b) {
		if _, _, err := readEWAH(b[:cut]); err == nil {
			t.Errorf("a bitmap cut at %d bytes read without error", cut)
		}
	}
}
