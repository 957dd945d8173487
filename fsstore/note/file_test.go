package note

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestParseNoteShapes(t *testing.T) {
	tests := []struct {
		name, in string
		body     string
		bad      string // a substring of the error, "" for success
	}{
		{"plain", "---\ndigest: d\n---\nbody\n", "body\n", ""},
		{"crlf", "---\r\ndigest: d\r\n---\r\nbody\r\n", "body\r\n", ""},
		{"empty front matter", "---\n---\nbody", "body", ""},
		{"no body", "---\ndigest: d\n---\n", "", ""},
		{"no newline at end", "---\ndigest: d\n---", "", ""},
		{"body with rule", "---\ndigest: d\n---\na\n---\nb\n", "a\n---\nb\n", ""},
		{"no front matter", "just text\n", "", "does not start with a front-matter block"},
		{"unclosed", "---\ndigest: d\nbody\n", "", "no closing ---"},
		{"not a mapping", "---\n- a\n- b\n---\n", "", "not a mapping"},
		{"bad yaml", "---\ndigest: [unclosed\n---\n", "", "not valid YAML"},
		{"anchor", "---\na: &x 1\nb: *x\n---\n", "", "anchors or aliases"},
		{"too deep", "---\na: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "\n---\n", "", "deeper than"},
		{"too large", "---\na: " + strings.Repeat("x", MaxFrontMatterBytes) + "\n---\n", "", "over the limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse([]byte(tt.in))
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("parseNote error = %v, want one containing %q", err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseNote: %v", err)
			}
			if got := string(n.Body); got != tt.body {
				t.Errorf("body = %q, want %q", got, tt.body)
			}
		})
	}
}

// A YAML bomb (a billion laughs) is refused without being expanded.
func TestParseNoteRefusesYAMLBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("---\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		b.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + strconv.Itoa(i-1))
		}
		b.WriteString("]\n")
	}
	b.WriteString("---\n")
	if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "anchors") {
		t.Fatalf("parseNote of a YAML bomb = %v, want the anchors error", err)
	}
}

// A person's front matter comes back byte for byte when no field changes,
// and keeps unknown keys, comments and scalar spellings when one does.
func TestFrontMatterSurvivesRewrite(t *testing.T) {
	in := "---\n" +
		"digest: old\n" +
		"# a person's comment\n" +
		"ticket: 08\n" +
		"code: 01234\n" +
		"flag: yes\n" +
		"ratio: 1.10\n" +
		"when: 2026-11-29\n" +
		"owner:   Ada   # aligned by hand\n" +
		"tags: [a, b]\n" +
		"---\nbody\n"
	n, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := n.Render()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("unchanged note rendered differently:\n%s\nwant:\n%s", out, in)
	}
	if err := n.Set(KeyDigest, "old"); err != nil {
		t.Fatal(err)
	}
	if out, _ := n.Render(); string(out) != in {
		t.Errorf("setting a field to its own value rewrote the front matter:\n%s", out)
	}
	if err := n.Set(KeyDigest, "new digest"); err != nil {
		t.Fatal(err)
	}
	out, err = n.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"digest: new digest\n", "# a person's comment\n", "ticket: 08\n", "code: 01234\n",
		"flag: yes\n", "ratio: 1.10\n", "when: 2026-11-29\n", "owner: Ada # aligned by hand\n", "tags: [a, b]\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rewritten front matter lacks %q:\n%s", want, out)
		}
	}
	again, err := Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Str("ticket"); got != "08" {
		t.Errorf("ticket = %q after the rewrite, want 08", got)
	}
}

// Values that YAML would read as another type are written so they read back
// as the same string.
func TestSetQuotesAmbiguousStrings(t *testing.T) {
	for _, v := range []string{"yes", "08", "1.10", "null", "2026-11-29", "a: b", "#x", "- item", "'q'", "line\nbreak"} {
		n := New()
		if err := n.Set(KeyDigest, v); err != nil {
			t.Fatal(err)
		}
		out, err := n.Render()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("render of %q does not parse: %v\n%s", v, err, out)
		}
		if got := back.Str(KeyDigest); got != v {
			t.Errorf("digest %q came back as %q:\n%s", v, got, out)
		}
	}
}

func TestTableRoundTrip(t *testing.T) {
	cols := []string{"name", "value"}
	rows := [][]string{{"tab\there", "new\nline"}, {`back\slash`, "cr\rx"}, {"", "é 漢字"}}
	body := EncodeTable(cols, rows)
	if strings.Count(body, "\n") != 4 {
		t.Fatalf("table body is not one line per row:\n%q", body)
	}
	gotCols, gotRows := DecodeTable(body)
	if strings.Join(gotCols, ",") != "name,value" || len(gotRows) != len(rows) {
		t.Fatalf("decodeTable = %v %v", gotCols, gotRows)
	}
	for i := range rows {
		for j := range rows[i] {
			if gotRows[i][j] != rows[i][j] {
				t.Errorf("cell %d,%d = %q, want %q", i, j, gotRows[i][j], rows[i][j])
			}
		}
	}
}

// FuzzParseNote: any file either fails to parse with an error, or parses,
// renders and parses again to the same fields and body.
func FuzzParseNote(f *testing.F) {
	for _, s := range []string{"---\ndigest: d\n---\nbody\n", "---\n---\n", "---\na: &x 1\n---\n",
		"---\nticket: 08\nflag: yes\n# c\nlinks:\n  cites: [bb://a/b/c]\n---\nx", "---\r\ndigest: d\r\n---\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Parse(data)
		if err != nil {
			return
		}
		n.dirty = true
		out, err := n.Render()
		if err != nil {
			return // yaml.v3 refuses to encode some decoded trees; nothing is written then
		}
		m, err := Parse(out)
		if err != nil {
			t.Fatalf("rendered note does not parse: %v\nin:  %q\nout: %q", err, data, out)
		}
		if !bytes.Equal(m.Body, n.Body) {
			t.Fatalf("body changed: %q -> %q", n.Body, m.Body)
		}
		if m.Str(KeyDigest) != n.Str(KeyDigest) {
			t.Fatalf("digest changed: %q -> %q", n.Str(KeyDigest), m.Str(KeyDigest))
		}
	})
}

// Text a person types into the body of a note stored out of line follows the
// blob's content: no text of the note file is out of reach.
func TestContentWith(t *testing.T) {
	for _, tt := range []struct{ body, blob, want string }{
		{"", "big\n", "big\n"},
		{"typed by hand\n", "big\n", "big\ntyped by hand\n"},
		{"typed by hand\n", "big", "big\ntyped by hand\n"},
		{"typed\n", "", "typed\n"},
	} {
		f := New()
		f.Body = []byte(tt.body)
		if got := f.ContentWith([]byte(tt.blob)); got != tt.want {
			t.Errorf("body %q, blob %q: content %q, want %q", tt.body, tt.blob, got, tt.want)
		}
	}
}

// A note some editor saved with a UTF-8 byte-order mark parses, and keeps
// its mark when rewritten.
func TestByteOrderMark(t *testing.T) {
	in := "\xef\xbb\xbf---\ndigest: d\n---\nbody\n"
	n, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if n.Str(KeyDigest) != "d" || string(n.Body) != "body\n" {
		t.Errorf("digest %q, body %q", n.Str(KeyDigest), n.Body)
	}
	if err := n.Set(KeyDigest, "new"); err != nil {
		t.Fatal(err)
	}
	out, err := n.Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := "\xef\xbb\xbf---\ndigest: new\n---\nbody\n"; string(out) != want {
		t.Errorf("rendered %q, want %q", out, want)
	}
}

// A note a person keeps with CRLF line endings comes back byte for byte,
// and keeps CRLF when a field changes.
func TestCRLFNote(t *testing.T) {
	in := "---\r\ndigest: d\r\nticket: 08\r\n---\r\nline one\r\n"
	n, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := n.Render(); err != nil || string(out) != in {
		t.Errorf("unchanged CRLF note rendered %q (%v), want %q", out, err, in)
	}
	if err := n.Set(KeyDigest, "new"); err != nil {
		t.Fatal(err)
	}
	out, err := n.Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := "---\r\ndigest: new\r\nticket: 08\r\n---\r\nline one\r\n"; string(out) != want {
		t.Errorf("rewritten CRLF note %q, want %q", out, want)
	}
}
