package o200k

import (
	_ "embed"
	"encoding/binary"
	"hash/maphash"
	"sync"
)

// vocabFile is the o200k_base vocabulary: the token count (4 bytes, little
// endian), then each token's length in bytes, one byte each, in rank order,
// then the tokens' bytes, concatenated in the same order. A token's rank is
// its place in that order. TestVocabularyIsO200k checks it against the
// reference tokenizer; README.md says where it comes from.
//
//go:embed vocab.bin
var vocabFile []byte

// vocabulary finds a byte string's rank: an open-addressed hash table over
// the tokens, kept in the embedded file itself (no copy of the tokens).
type vocabulary struct {
	blob    []byte   // the tokens, concatenated
	offsets []uint32 // token r is blob[offsets[r]:offsets[r+1]]
	slots   []uint32 // rank+1 of the token hashed there, 0 when empty
	mask    uint64
	seed    maphash.Seed
}

// vocab is loaded on first use: a few milliseconds, and 3 MB a process.
var vocab = sync.OnceValue(func() *vocabulary {
	n := int(binary.LittleEndian.Uint32(vocabFile))
	lengths := vocabFile[4 : 4+n]
	v := &vocabulary{blob: vocabFile[4+n:], offsets: make([]uint32, n+1), seed: maphash.MakeSeed()}
	for r, l := range lengths {
		v.offsets[r+1] = v.offsets[r] + uint32(l)
	}
	size := 1
	for size < 2*n {
		size <<= 1
	}
	v.slots = make([]uint32, size)
	v.mask = uint64(size - 1)
	for r := range n {
		i := maphash.Bytes(v.seed, v.token(r)) & v.mask
		for v.slots[i] != 0 {
			i = (i + 1) & v.mask
		}
		v.slots[i] = uint32(r + 1)
	}
	return v
})

// token returns the bytes of rank r.
func (v *vocabulary) token(r int) []byte { return v.blob[v.offsets[r]:v.offsets[r+1]] }

// rank returns the rank of s, or noRank when s is not a token.
func (v *vocabulary) rank(s string) uint32 {
	i := maphash.String(v.seed, s) & v.mask
	for {
		slot := v.slots[i]
		if slot == 0 {
			return noRank
		}
		if string(v.token(int(slot-1))) == s {
			return slot - 1
		}
		i = (i + 1) & v.mask
	}
}
