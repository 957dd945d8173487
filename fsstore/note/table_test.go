package note

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzTable: the TSV parser takes any body a person may have written
// without panicking, and a table within the limits survives encodeTable and
// decodeTable unchanged, one line per row, also when rows are appended to it
// (update_state's rows alone). body is parsed as it is; cells, split on the
// record separator \x1e, are laid out as a header and rows of ncols cells, so
// that cells hold tabs, newlines, backslashes and escapes of their own.
func FuzzTable(f *testing.F) {
	seeds := []struct {
		body, cells string
		ncols       uint8
	}{
		{"service\tp50_ms\nsearch\t12\nauth\t7\n", "service\x1ep50_ms\x1esearch\x1e12", 2},
		{"", "", 0},
		{"\n", "a", 1},
		{"\n\n", "a\x1e\x1e", 1},
		{"a\\tb\tc\\nd\\\\\n\\\\t\t\\r\n", "a\tb\x1ec\nd\\\x1e\\t\x1e\r", 2},
		{"a\r\nb\r\n", "a\r\x1eb\r\n", 1},
		{"\\", "\\", 1},
		{"a\tb\n1\n", "a\x1eb\x1e1", 2},
		{"\x00\t\x00\n\x00\n", "\x00\x1e\x00", 2},
		{"a\ta\n1\t2\n", "a\x1ea\x1e1\x1e2", 2},
		{" \t\n", " \x1e\t", 2},
		{"x\t\ty\n\t\t\n", "x\x1e\x1ey", 3},
		{"\\x\\\t\\", "\\x\\\x1e\\", 2},
		{"h\n" + strings.Repeat("r\n", 100), strings.Repeat("c\x1e", 100), 64},
		{strings.Repeat("c\t", 64) + "c\n", strings.Repeat("c\x1e", 65), 65},
		{"\xff\xfe\t\xc0\xae\n", "\xff\x1e\xfe", 1},
	}
	for _, s := range seeds {
		f.Add(s.body, s.cells, s.ncols)
	}
	f.Fuzz(func(t *testing.T, body, cells string, ncols uint8) {
		cols, rows := DecodeTable(body)
		if _, kind := CheckTable(cols, rows); kind == nil {
			tableRoundTrip(t, cols, rows)
		}
		cols, rows = layoutTable(cells, int(ncols))
		if why, kind := CheckTable(cols, rows); kind != nil {
			t.Fatalf("layoutTable made a table checkTable refuses (%s): %q %q", why, cols, rows)
		}
		tableRoundTrip(t, cols, rows)
	})
}

// layoutTable lays cells (split on \x1e) out as a table of n columns, 1 to
// MaxColumns: a header of unique, non-blank names, then rows, the last one
// padded with empty cells.
func layoutTable(cells string, n int) ([]string, [][]string) {
	n = n%MaxColumns + 1
	parts := strings.Split(cells, "\x1e")
	cols := make([]string, n)
	for i := range cols {
		if i < len(parts) {
			cols[i] = parts[i]
		}
		if strings.TrimSpace(cols[i]) == "" || slices.Contains(cols[:i], cols[i]) {
			cols[i] = "c" + strconv.Itoa(i)
			for slices.Contains(cols[:i], cols[i]) {
				cols[i] += "_"
			}
		}
	}
	var rows [][]string
	for i := n; i < len(parts) && len(rows) < MaxRows; i += n {
		row := make([]string, n)
		copy(row, parts[i:min(i+n, len(parts))])
		rows = append(rows, row)
	}
	return cols, rows
}

// tableRoundTrip checks that a valid table encodes to one header line and
// one line per row and decodes back to itself, and that appending its rows
// again yields the rows twice.
func tableRoundTrip(t *testing.T, cols []string, rows [][]string) {
	t.Helper()
	body := EncodeTable(cols, rows)
	if lines := strings.Count(body, "\n"); lines != 1+len(rows) {
		t.Fatalf("EncodeTable(%q, %q) = %q: %d lines, want %d", cols, rows, body, lines, 1+len(rows))
	}
	gotCols, gotRows := DecodeTable(body)
	if !sameTable(gotCols, gotRows, cols, rows) {
		t.Fatalf("round trip of %q %q\nbody %q\ngot  %q %q", cols, rows, body, gotCols, gotRows)
	}
	var b strings.Builder
	b.WriteString(body)
	EncodeRows(&b, rows)
	gotCols, gotRows = DecodeTable(b.String())
	if !sameTable(gotCols, gotRows, cols, append(slices.Clone(rows), rows...)) {
		t.Fatalf("appending %q to %q: got %q %q", rows, body, gotCols, gotRows)
	}
}

func sameTable(cols []string, rows [][]string, wantCols []string, wantRows [][]string) bool {
	return slices.Equal(cols, wantCols) && slices.EqualFunc(rows, wantRows, slices.Equal[[]string])
}
