package gitindex

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// appendEWAH appends git's EWAH serialization of the set bits at positions
// (ascending): bit size, word count, the words (each run-length word says how
// many all-zero words precede the literal words it counts), and the position
// of the last run-length word.
func appendEWAH(out []byte, positions []int) []byte {
	type literal struct {
		at   int // the word's index in the uncompressed bitmap
		bits uint64
	}
	var lits []literal
	for _, p := range positions {
		if len(lits) == 0 || lits[len(lits)-1].at != p/64 {
			lits = append(lits, literal{at: p / 64})
		}
		lits[len(lits)-1].bits |= 1 << (p % 64)
	}
	words := []uint64{0}
	rlw, next := 0, 0
	for k := 0; k < len(lits); {
		j := k + 1 // lits[k:j] are consecutive words
		for j < len(lits) && lits[j].at == lits[j-1].at+1 {
			j++
		}
		if k > 0 {
			words = append(words, 0)
			rlw = len(words) - 1
		}
		words[rlw] = uint64(lits[k].at-next)<<1 | uint64(j-k)<<33
		for _, l := range lits[k:j] {
			words = append(words, l.bits)
		}
		next = lits[j-1].at + 1
		k = j
	}
	bitSize := 0
	if len(positions) > 0 {
		bitSize = positions[len(positions)-1] + 1
	}
	out = binary.BigEndian.AppendUint32(out, uint32(bitSize))
	out = binary.BigEndian.AppendUint32(out, uint32(len(words)))
	for _, w := range words {
		out = binary.BigEndian.AppendUint64(out, w)
	}
	return binary.BigEndian.AppendUint32(out, uint32(rlw))
}

// readEWAH reads one EWAH bitmap and returns its set positions and the
// bytes it took.
func readEWAH(b []byte) (positions []int, n int, err error) {
	bad := fmt.Errorf("%w: corrupt bitmap in the link extension", ErrFormat)
	if len(b) < 8 {
		return nil, 0, bad
	}
	count := int(binary.BigEndian.Uint32(b[4:]))
	n = 8 + 8*count + 4
	if count < 0 || len(b) < n {
		return nil, 0, bad
	}
	word := func(i int) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	const maxPositions = 1 << 26 // far past any index
	pos := 0
	for i := 0; i < count; {
		rlw := word(i)
		i++
		run := int(rlw >> 1 & 0xffffffff)
		lits := int(rlw >> 33)
		if rlw&1 != 0 {
			if len(positions)+run*64 > maxPositions {
				return nil, 0, bad
			}
			for k := range run * 64 {
				positions = append(positions, pos+k)
			}
		}
		pos += run * 64
		if i+lits > count {
			return nil, 0, bad
		}
		for range lits {
			w := word(i)
			i++
			for bit := 0; w != 0; bit++ {
				if w&1 != 0 {
					positions = append(positions, pos+bit)
				}
				w >>= 1
			}
			pos += 64
		}
	}
	if !sort.IntsAreSorted(positions) {
		return nil, 0, bad
	}
	return positions, n, nil
}
