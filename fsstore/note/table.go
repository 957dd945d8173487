package note

import (
	"strconv"
	"strings"
)

// Table limits: a table note is for records an agent reads as rows, not a
// database.
const (
	MaxColumns = 64
	MaxRows    = 10000
)

// tsvEscaper and tsvUnescaper keep every cell on one line and free of tabs,
// so a table body is always one header line plus one line per row.
var (
	tsvEscaper   = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)
	tsvUnescaper = strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n", `\r`, "\r")
)

// EscapeCell is cell as a table's line holds it: on one line, free of tabs.
func EscapeCell(cell string) string { return tsvEscaper.Replace(cell) }

// EncodeRows renders rows as tab-separated lines, each ending in a newline.
func EncodeRows(b *strings.Builder, rows [][]string) {
	for _, row := range rows {
		for i, cell := range row {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(tsvEscaper.Replace(cell))
		}
		b.WriteByte('\n')
	}
}

// EncodeTable renders a header line and the rows.
func EncodeTable(columns []string, rows [][]string) string {
	var b strings.Builder
	EncodeRows(&b, [][]string{columns})
	EncodeRows(&b, rows)
	return b.String()
}

// DecodeTable splits a TSV body into its header and rows.
func DecodeTable(body string) (columns []string, rows [][]string) {
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if len(lines) == 0 || (len(lines) == 1 && lines[0] == "") {
		return nil, nil
	}
	split := func(line string) []string {
		cells := strings.Split(strings.TrimSuffix(line, "\r"), "\t")
		for i, c := range cells {
			cells[i] = tsvUnescaper.Replace(c)
		}
		return cells
	}
	columns = split(lines[0])
	for _, l := range lines[1:] {
		rows = append(rows, split(l))
	}
	return columns, rows
}

// CheckTable validates a table's shape against the limits; it returns the
// reason and its kind (ErrInvalid or ErrTooLarge), or "" and nil.
func CheckTable(columns []string, rows [][]string) (string, error) {
	if len(columns) == 0 {
		return "a table needs at least one column", ErrInvalid
	}
	if len(columns) > MaxColumns {
		return "a table has at most 64 columns", ErrTooLarge
	}
	if len(rows) > MaxRows {
		return "a table has at most 10000 rows", ErrTooLarge
	}
	for i, c := range columns {
		if strings.TrimSpace(c) == "" {
			return "column names must not be empty", ErrInvalid
		}
		for _, d := range columns[:i] {
			if d == c {
				return "column " + c + " appears twice", ErrInvalid
			}
		}
	}
	for i, r := range rows {
		if len(r) != len(columns) {
			return "row " + strconv.Itoa(i+1) + " has " + strconv.Itoa(len(r)) + " cells for " +
				strconv.Itoa(len(columns)) + " columns", ErrInvalid
		}
	}
	return "", nil
}
