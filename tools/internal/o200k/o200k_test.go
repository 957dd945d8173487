package o200k

import (
	"bytes"
	"encoding/binary"
	"flag"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

var update = flag.Bool("update", false, "write vocab.bin anew from the reference tokenizer")

// reference is github.com/tiktoken-go/tokenizer's o200k_base.
func reference(t testing.TB) tokenizer.Codec {
	t.Helper()
	c, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// referenceVocabFile is vocab.bin as the reference tokenizer's vocabulary
// makes it: every rank from 0 up, until one does not decode.
func referenceVocabFile(t *testing.T) []byte {
	ref := reference(t)
	var tokens []string
	for r := 0; ; r++ {
		s, err := ref.Decode([]uint{uint(r)})
		if err != nil {
			break
		}
		tokens = append(tokens, s)
	}
	var b bytes.Buffer
	b.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(tokens))))
	for _, s := range tokens {
		if len(s) > 255 {
			t.Fatalf("a token of %d bytes does not fit the format", len(s))
		}
		b.WriteByte(byte(len(s)))
	}
	for _, s := range tokens {
		b.WriteString(s)
	}
	return b.Bytes()
}

func TestVocabularyIsO200k(t *testing.T) {
	want := referenceVocabFile(t)
	if *update {
		if err := os.WriteFile("vocab.bin", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(vocabFile, want) {
		t.Fatalf("vocab.bin (%d bytes) is not the reference's vocabulary (%d bytes); run go test -run TestVocabularyIsO200k -update", len(vocabFile), len(want))
	}
	v := vocab()
	for r := range len(v.offsets) - 1 {
		if got := v.rank(string(v.token(r))); got != uint32(r) {
			t.Fatalf("rank of token %d %q is %d", r, v.token(r), got)
		}
	}
}

// same fails unless Count and the reference agree on s, where the
// reference keeps to the pattern (see referenceStrays).
func same(t *testing.T, ref tokenizer.Codec, s string) {
	t.Helper()
	if referenceStrays(s) {
		return
	}
	want, err := ref.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := Count(s); got != want {
		t.Fatalf("Count(%q) = %d, the reference counts %d", s, got, want)
	}
}

// referenceStrays says whether the reference's matcher, generated from the
// pattern, strays from the pattern on s: it leaves U+007F out of
// [^\s\p{L}\p{N}], and, backtracking \s*[\r\n]+, it ends the piece after the
// first group of line breaks in a run of white space instead of the last.
// OpenAI's tokenizer keeps to the pattern, as Count does: TestWhereTheReferenceStrays.
func referenceStrays(s string) bool {
	if strings.ContainsRune(s, 0x7f) {
		return true
	}
	groups, inBreaks := 0, false
	for _, r := range s {
		switch {
		case r == '\r' || r == '\n':
			if !inBreaks {
				groups++
			}
			inBreaks = true
		case unicode.IsSpace(r):
			inBreaks = false
		default:
			groups, inBreaks = 0, false
		}
		if groups > 1 {
			return true
		}
	}
	return false
}

// TestWhereTheReferenceStrays: counts by OpenAI's tokenizer (tiktoken
// 1.0's o200k_base) where the reference's differ. Count agreed with that
// tokenizer on 30,300 random texts of the alphabet below with U+007F and
// runs of line breaks and spaces added.
func TestWhereTheReferenceStrays(t *testing.T) {
	for s, want := range map[string]int{
		"\x7f":               1,
		"a\x7fb":             3,
		"x\n \ny":            3,
		"a\n\t\n\n b":        4,
		"\r\n \r\nz":         3,
		"'d🙂},{'数据库\n \n}# ": 9,
	} {
		if !referenceStrays(s) {
			t.Errorf("referenceStrays(%q) is false", s)
		}
		if got := Count(s); got != want {
			t.Errorf("Count(%q) = %d, OpenAI's tokenizer counts %d", s, got, want)
		}
	}
}

// alphabet is what random texts are made of: every class the split
// pattern tells apart, and the places where they meet.
var alphabet = []string{
	"a", "z", "A", "Z", "the", "The", "THE", "camelCase", "HTTPServer", "x9", "0", "12", "1234567", "٣", "Ⅻ", "½",
	" ", "  ", "\t", "\n", "\r\n", "\r", " \n", "\n\n", "\u00a0", "\u2003", "\u3000", "\u2028", "\u0085", "\v", "\f",
	"'s", "'S", "'t", "'re", "'RE", "'Ve", "'m", "'ll", "'LL", "'d", "'ſ", "'", "'x", "ſ",
	".", ",", "!", "?", "{", "}", "[", "]", "(", ")", `"`, `\`, "/", "//", "://", "-", "_", "@", "#", "$", "%", "&", "*", "+", "=", "<", ">", "|", "~", "`", "^",
	"é", "É", "e\u0301", "\u0301", "\u0301a", "ß", "ǅ", "ʰ", "ˆ", "数据库", "한국어", "ไทย", "עברית", "العربية", "Ελληνικά", "кириллица",
	"🙂", "👍🏽", "\u200d", "\ufeff", "\ufffd", "\x00", "\x7f", "\n \n", "\r\n\t\r\n", "\xff", "\xe2\x82", "—", "…", "€", "™",
	"bb://acme/ops/db-latency", "v1.10.19", "eu-west-1", `{"uri":"bb://x","version":3}`, "},{", "\t0\t", "```go\n", "# ",
}

func randomText(rng *rand.Rand, n int) string {
	var b strings.Builder
	for range rng.IntN(n + 1) {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// TestCountsAsTheReference compares counts on random texts of every class,
// on long runs that take the heap, and on this repository's own files.
func TestCountsAsTheReference(t *testing.T) {
	ref := reference(t)
	rng := rand.New(rand.NewPCG(200, 0))
	cases := 20000
	if testing.Short() {
		cases = 2000
	}
	for range cases {
		same(t, ref, randomText(rng, 12))
	}
	for range cases / 20 {
		same(t, ref, randomText(rng, 400))
	}
	for _, unit := range []string{" ", "-", "=", "\n", "a", "ab", "数", "🙂", "}{", "\t ", "0"} {
		for _, n := range []int{95, 96, 97, 200, 1000, 5000} {
			same(t, ref, strings.Repeat(unit, n))
			same(t, ref, "x"+strings.Repeat(unit, n)+"y")
		}
	}
	// Every rune of the Basic Multilingual Plane and some beyond, alone and
	// between letters: the classes come from the unicode tables.
	for r := rune(0); r < 0x20000; r++ {
		if r == 0x10000 {
			r = 0x1f000
		}
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		same(t, ref, "a"+s+"b"+s+s+" "+s+"'s")
	}
	root := filepath.Join("..", "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return skipDir(d, err)
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" || strings.HasSuffix(path, "_vocab.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		same(t, ref, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func skipDir(d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	return filepath.SkipDir
}

// FuzzCount: go test ./tools/internal/o200k -fuzz FuzzCount
func FuzzCount(f *testing.F) {
	for _, s := range alphabet {
		f.Add(s)
	}
	ref := reference(f)
	f.Fuzz(func(t *testing.T, s string) { same(t, ref, s) })
}

// BenchmarkCount counts 8 KB of the README (English prose and code) and
// of random text of every class, as the reference and as Count.
func BenchmarkCount(b *testing.B) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		b.Fatal(err)
	}
	ref := reference(b)
	for name, text := range map[string]string{
		"readme": string(readme[:8000]),
		"random": strings.Repeat(randomText(rand.New(rand.NewPCG(200, 1)), 3000), 4)[:8000],
	} {
		b.Run(name+"/reference", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_, _ = ref.Count(text)
			}
		})
		b.Run(name+"/o200k", func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				Count(text)
			}
		})
	}
}
