package fsstore

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// readSource reads a file an agent named by source_path, so its content goes
// onto the board without passing through the agent's context. The file must
// lie under one of the source roots once every symbolic link is resolved; it
// must be a regular file (a FIFO would block, a device never ends) and at most
// note.MaxContentBytes, checked before and while reading.
func (w *Workspace) readSource(op, uri, p string, from *sourceFiles) (content []byte, summary string, err error) {
	bad := func(kind error, format string, args ...any) ([]byte, string, error) {
		return nil, "", errorf(op, uri, kind, format, args...)
	}
	if p == "" || strings.ContainsRune(p, 0) {
		return bad(ErrInvalid, "source_path is empty or not a path")
	}
	roots, abs := w.sourceRoots, p
	if from != nil {
		roots = from.roots
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(from.dir, abs)
		}
	}
	abs, err = filepath.Abs(abs)
	if err != nil {
		return bad(ErrInvalid, "source_path %q is not a usable path", p)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return bad(ErrNotFound, "source_path %s does not exist or cannot be read", p)
	}
	board := w.dir
	if r, err := filepath.EvalSymlinks(board); err == nil {
		board = r
	}
	if rel, err := filepath.Rel(board, real); err == nil && filepath.IsLocal(rel) {
		return bad(ErrForbidden, "source_path %s lies inside the board itself; read notes with get_state", p)
	}
	root := ""
	for _, r := range roots {
		if rel, err := filepath.Rel(r, real); err == nil && filepath.IsLocal(rel) {
			root = r
			break
		}
	}
	if root == "" {
		return bad(ErrForbidden, "source_path %s is outside the directories this server may read; the operator can add one with --source-root", p)
	}
	// O_NONBLOCK: opening a FIFO must not wait for a writer.
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return bad(ErrNotFound, "source_path %s cannot be opened", p)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return bad(ErrInvalid, "source_path %s is not a regular file", p)
	}
	if fi.Size() > note.MaxContentBytes {
		return bad(ErrTooLarge, "source_path %s is %d bytes; a note holds at most %d", p, fi.Size(), note.MaxContentBytes)
	}
	content, err = io.ReadAll(io.LimitReader(f, note.MaxContentBytes+1))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", real, err)
	}
	if len(content) > note.MaxContentBytes {
		return bad(ErrTooLarge, "source_path %s grew past %d bytes while being read", p, note.MaxContentBytes)
	}
	if !utf8.Valid(content) || bytes.IndexByte(content, 0) >= 0 {
		return bad(ErrInvalid, "source_path %s is not text (UTF-8); the board stores text", p)
	}
	return content, summarize(filepath.Base(real), content), nil
}

// summarize describes a source file extractively, so the agent learns what
// it stored without reading it: format, size and lines, then the headings of
// Markdown, the columns and row count of CSV or TSV, or the first lines.
func summarize(name string, content []byte) string {
	lines := bytes.Count(content, []byte("\n"))
	if len(content) > 0 && content[len(content)-1] != '\n' {
		lines++
	}
	ext := strings.ToLower(filepath.Ext(name))
	format := map[string]string{".md": "markdown", ".markdown": "markdown", ".csv": "csv", ".tsv": "tsv",
		".json": "json", ".yaml": "yaml", ".yml": "yaml", ".go": "go", ".py": "python", ".txt": "text",
		".log": "log", ".html": "html", ".sql": "sql", ".ts": "typescript", ".js": "javascript"}[ext]
	if format == "" {
		format = "text"
	}
	head := fmt.Sprintf("%s, %d bytes, %d lines", format, len(content), lines)
	switch format {
	case "markdown":
		var heads []string
		sc := bufio.NewScanner(bytes.NewReader(content))
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		inFence := false
		for sc.Scan() && len(heads) < 12 {
			l := sc.Text()
			if strings.HasPrefix(l, "```") {
				inFence = !inFence
			}
			if !inFence && strings.HasPrefix(l, "#") {
				heads = append(heads, strings.TrimSpace(l))
			}
		}
		if len(heads) > 0 {
			return head + "; headings: " + strings.Join(heads, " | ")
		}
	case "csv", "tsv":
		r := csv.NewReader(bytes.NewReader(content))
		if format == "tsv" {
			r.Comma = '\t'
		}
		r.FieldsPerRecord = -1
		r.LazyQuotes = true
		header, err := r.Read()
		if err == nil {
			rows := 0
			for {
				if _, err := r.Read(); errors.Is(err, io.EOF) {
					break
				} else if err != nil && !errors.Is(err, csv.ErrFieldCount) {
					break
				}
				rows++
			}
			return fmt.Sprintf("%s; columns: %s; %d rows", head, strings.Join(header, ", "), rows)
		}
	}
	var first []string
	for _, l := range strings.SplitN(string(content), "\n", 4)[:min(3, lines)] {
		if l = strings.TrimSpace(l); l != "" {
			if utf8.RuneCountInString(l) > 120 {
				l = string([]rune(l)[:120]) + "…"
			}
			first = append(first, l)
		}
	}
	if len(first) == 0 {
		return head
	}
	return head + "; begins: " + strings.Join(first, " / ")
}

// defaultSourceRoots is the workspace's parent directory: the project an
// agent works in usually holds the board beside its files.
func defaultSourceRoots(dir string) []string {
	return []string{filepath.Dir(dir)}
}

// sourceFiles are the files a caller's source_path may name: relative to
// dir, under roots (absolute, links resolved). A relay's caller names files
// of its own process, which the engine does not share a directory with.
type sourceFiles struct {
	dir   string
	roots []string
}

func resolveRoots(roots []string) []string {
	var out []string
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		out = append(out, abs)
	}
	return out
}
