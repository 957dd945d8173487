// Package meaning turns text into a vector of what its words mean, so that
// a question finds a note written in other words: "why did checkout get
// slower" and "p99 of the payment client rose" share no word, but their
// vectors point the same way.
//
// A text's vector is the weighted mean of its words' vectors, from a table
// of English word vectors built into the program (words.bin: GloVe's 100
// numbers for each of the 100,000 most frequent words; TABLE.md says where
// it comes from and under what licence). A word counts the less the more
// common it is (smooth inverse frequency: "the" next to nothing, a rare
// word fully), and what every English text shares is taken out, so a
// note's vector leans to what it is about. Words the
// table does not know (code identifiers, misspellings, other languages)
// add nothing: the full-text search still finds those by their letters.
//
// Vectors are unit length, stored as 100 signed bytes; the dot product of
// two is their cosine times VectorScale².
package meaning

import (
	_ "embed"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Model names the table and the way texts are turned into vectors. It is
// stored with each vector: when it changes, vectors made before are made
// again.
const Model = "glove6b-100d-100k-sif-common1"

// Dims is the length of a vector.
const Dims = 100

// VectorScale is what a vector's unit length is stored as.
const VectorScale = 127

// Vector is a text's meaning: unit length times VectorScale.
type Vector [Dims]int8

//go:embed words.bin
var tableData []byte

// sifA weighs words by how common they are: a word of probability p counts
// sifA / (sifA + p).
const sifA = 1e-3

type table struct {
	index  map[string]int32
	scales []float32     // per word
	nums   []int8        // Dims per word
	weight []float32     // per word: how much it counts
	common [Dims]float32 // unit length: what every text shares
}

var (
	loadOnce sync.Once
	loaded   *table
)

// words is the table, read from the program the first time it is needed.
func words() *table {
	loadOnce.Do(func() { loaded = parseTable(tableData) })
	return loaded
}

func parseTable(b []byte) *table {
	if len(b) < 16 || string(b[:8]) != "BBWORDS1" || binary.LittleEndian.Uint32(b[12:]) != Dims {
		panic("meaning: the built-in word table is damaged")
	}
	n := int(binary.LittleEndian.Uint32(b[8:]))
	t := &table{index: make(map[string]int32, n), weight: make([]float32, n)}
	p := 16
	// The words come most frequent first; by Zipf's law the word of rank r
	// has probability about 1/(r·H), H the harmonic number of the table.
	h := math.Log(float64(n)) + 0.5772
	for i := range n {
		l := int(b[p])
		t.index[string(b[p+1:p+1+l])] = int32(i)
		p += 1 + l
		prob := 1 / (float64(i+1) * h)
		t.weight[i] = float32(sifA / (sifA + prob))
	}
	t.scales = make([]float32, n)
	for i := range n {
		t.scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[p:]))
		p += 4
	}
	// The numbers are read where the program holds them, not copied.
	t.nums = unsafe.Slice((*int8)(unsafe.Pointer(&b[p])), n*Dims)
	t.common = commonDirection(t, h)
	return t
}

// commonDirection is what every text shares: the mean direction of the
// words as they come in text, each by its probability and weight. It is
// taken out of each text's vector, so that what is left says what the text
// is about, not that it is English prose. h is the table's harmonic number.
func commonDirection(t *table, h float64) [Dims]float32 {
	var u [Dims]float64
	for i := range t.weight {
		prob := 1 / (float64(i+1) * h)
		k := prob * float64(t.weight[i]) * float64(t.scales[i])
		for d := range Dims {
			u[d] += k * float64(t.nums[i*Dims+d])
		}
	}
	var norm float64
	for _, x := range u {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	var out [Dims]float32
	for d := range u {
		out[d] = float32(u[d] / norm)
	}
	return out
}

// maxWords bounds the words of one text that count: a note's first few
// thousand words say what it is about.
const maxWords = 4000

// Embed returns the vector of text, and false when the table knows none of
// its words.
func Embed(text string) (Vector, bool) {
	t := words()
	var sum [Dims]float32
	known, seen := 0, 0
	eachWord(text, func(w string) bool {
		seen++
		if i, ok := t.index[w]; ok {
			known++
			k := t.weight[i] * t.scales[i]
			row := t.nums[int(i)*Dims : int(i+1)*Dims]
			for d, x := range row {
				sum[d] += k * float32(x)
			}
		}
		return seen < maxWords
	})
	var v Vector
	if known == 0 {
		return v, false
	}
	var common float32
	for d := range sum {
		common += sum[d] * t.common[d]
	}
	for d := range sum {
		sum[d] -= common * t.common[d]
	}
	var norm float64
	for _, x := range sum {
		norm += float64(x) * float64(x)
	}
	if norm == 0 {
		return v, false
	}
	inv := VectorScale / math.Sqrt(norm)
	for d, x := range sum {
		v[d] = int8(math.Round(float64(x) * inv))
	}
	return v, true
}

// eachWord calls fn with each word of text in lower case (runs of letters
// and digits), until fn returns false.
func eachWord(text string, fn func(string) bool) {
	var buf []byte
	start := -1
	flush := func(end int) bool {
		word := text[start:end]
		start = -1
		if isLower(word) {
			return fn(word)
		}
		buf = buf[:0]
		for _, r := range word {
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
		}
		return fn(string(buf))
	}
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && !flush(i) {
			return
		}
	}
	if start >= 0 {
		flush(len(text))
	}
}

func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Dot is the dot product of two vectors: their cosine times VectorScale².
func Dot(a, b *Vector) int32 {
	// Four sums at once: the loop is what a search by meaning spends its
	// time on, once per note.
	var s0, s1, s2, s3 int32
	for i := 0; i < Dims; i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	return s0 + s1 + s2 + s3
}

// Cosine is the cosine of two vectors, from their dot product.
func Cosine(dot int32) float64 {
	return float64(dot) / (VectorScale * VectorScale)
}

// Known reports whether the table knows word (lower case).
func Known(word string) bool {
	_, ok := words().index[strings.ToLower(word)]
	return ok
}
