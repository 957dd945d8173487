// Package o200k counts the tokens of the o200k_base encoding (GPT-4o and
// later), exactly as the reference tokenizer does and a few times faster:
// the split into pieces is written out by hand instead of run by a
// backtracking regular expression, and the vocabulary is an embedded table,
// not a map built at start-up.
//
// Counting is a tokenizer's two steps. The text is split into pieces by the
// encoding's pattern (split.go), and each piece that is not itself a token
// is merged byte pair by byte pair, lowest rank first (merge.go). Counts are
// checked against github.com/tiktoken-go/tokenizer on random and real text
// by this package's tests.
package o200k

import (
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

// noRank is the rank of a byte string that is not a token.
const noRank = math.MaxUint32

// Count returns the number of o200k_base tokens in s.
func Count(s string) int {
	if !utf8.ValidString(s) {
		// The reference splits runes, and reads each invalid byte as
		// U+FFFD.
		s = string([]rune(s))
	}
	v := vocab()
	n := 0
	for i := 0; i < len(s); {
		end := pieceEnd(s, i)
		n += v.countPiece(s[i:end])
		i = end
	}
	return n
}

// countPiece is the number of tokens byte-pair encoding makes of piece.
func (v *vocabulary) countPiece(piece string) int {
	if len(piece) == 1 || v.rank(piece) != noRank {
		return 1
	}
	if n, ok := merged.get(piece); ok {
		return n
	}
	n := 0
	if len(piece) < heapFrom {
		n = v.mergeScan(piece)
	} else {
		n = v.mergeHeap(piece)
	}
	merged.put(piece, n)
	return n
}

// merged remembers the counts of pieces that are not tokens themselves:
// merging is most of the cost of counting an answer, and an answer is
// counted several times over (fitting it to its budget) and made of the
// same addresses call after call.
var merged = pieceCache{counts: map[string]int{}}

// pieceCache is a bounded map of piece counts, emptied when full.
type pieceCache struct {
	mu     sync.Mutex
	counts map[string]int
}

// pieceCacheSize bounds the cache: about 3 MB of short pieces.
const pieceCacheSize = 1 << 16

func (c *pieceCache) get(piece string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.counts[piece]
	return n, ok
}

func (c *pieceCache) put(piece string, n int) {
	if len(piece) > 64 {
		return // a long run of symbols or spaces: rare, and big to keep
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.counts) >= pieceCacheSize {
		clear(c.counts)
	}
	c.counts[strings.Clone(piece)] = n // not a slice of a whole answer
}
