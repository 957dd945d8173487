package importer

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// A folder of Markdown notes (a basic-memory project, an Obsidian vault):
// each .md file becomes the note its path names (folders as segments, under
// topic when one is given; a file at the top under "notes"). Its digest is
// the front matter's digest, title, summary or description, else the first
// line of text; its kind the front matter's kind or type when that is one
// word; every other field is kept as it was (the board's own names, such as
// author or links, with "source_" before them). Hidden folders (.obsidian,
// .git) and files other than Markdown are left out and listed.

// maxImportFile bounds one file read: larger ones are listed, not read.
const maxImportFile = 16 << 20

// Markdown plans the notes of the folder root.
func Markdown(root, topic string) (*Plan, error) {
	p := &Plan{}
	var k keys
	err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, abs)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				p.Unmapped = append(p.Unmapped, rel+"/: a hidden folder, left out")
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !strings.EqualFold(path.Ext(rel), ".md") || !d.Type().IsRegular() {
			p.Unmapped = append(p.Unmapped, rel+": not a Markdown file, left out")
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxImportFile {
			p.Unmapped = append(p.Unmapped, fmt.Sprintf("%s: %d bytes, over the %d a note holds", rel, info.Size(), maxImportFile))
			return nil
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		n, problems := markdownNote(rel, data)
		segs := strings.Split(strings.TrimSuffix(rel, path.Ext(rel)), "/")
		switch {
		case topic != "":
			segs = append([]string{topic}, segs...)
		case len(segs) == 1:
			segs = append([]string{"notes"}, segs...)
		}
		n.Key = k.key(rel, segs...)
		for _, pr := range problems {
			p.Unmapped = append(p.Unmapped, n.Key+": "+pr)
		}
		p.Notes = append(p.Notes, n)
		return nil
	})
	return p, err
}

// markdownNote reads one file: front matter (when it has any) and body.
func markdownNote(rel string, data []byte) (Note, []string) {
	n := Note{From: rel, Fields: map[string]any{}}
	var problems []string
	front := map[string]any{}
	body := string(data)
	f, err := note.Parse(data)
	if err != nil && strings.HasPrefix(body, "---") {
		problems = append(problems, "front matter unreadable, kept in the body: "+err.Error())
	}
	if err == nil {
		body = string(f.Body)
		if err := f.DecodeFront(&front); err != nil {
			problems = append(problems, "front matter unreadable, kept in the body: "+err.Error())
			body, front = string(data), map[string]any{}
		}
	}
	text := func(k string) string {
		if s, ok := front[k].(string); ok {
			return s
		}
		return ""
	}
	for _, k := range []string{"digest", "title", "summary", "description"} {
		if d := text(k); strings.TrimSpace(d) != "" {
			var whole string
			n.Digest, whole = digestOf(d)
			if k == "digest" || whole != "" {
				delete(front, "digest")
				if whole != "" {
					n.Fields["source_digest"] = whole
				}
			}
			break
		}
	}
	if n.Digest == "" {
		for _, line := range strings.Split(body, "\n") {
			if l := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#")); l != "" && l != "---" {
				n.Digest, _ = digestOf(l)
				break
			}
		}
	}
	if n.Digest == "" {
		n.Digest = strings.TrimSuffix(path.Base(rel), path.Ext(rel))
	}
	for _, k := range []string{"kind", "type"} {
		if t := text(k); t != "" && !strings.ContainsAny(t, " \t:#") && len(t) <= 64 {
			n.Kind = t
			if k == "kind" {
				delete(front, k)
			}
			break
		}
	}
	for name, v := range front {
		field := fieldName(name)
		switch {
		case field == "":
			problems = append(problems, fmt.Sprintf("the field %q has no name a note can carry, left out", name))
			continue
		case note.IsOwnKey(field):
			field = "source_" + field
		}
		n.Fields[field] = v
	}
	n.Body = body
	return n, problems
}

// fieldName is a front-matter key as a note's field name (lower case, _
// for spaces and dashes), or "" when nothing is left of it.
func fieldName(k string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(k)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '-' || r == ' ' || r == '.':
			b.WriteByte('_')
		}
	}
	out := strings.Trim(b.String(), "_")
	if out == "" || out[0] < 'a' || out[0] > 'z' || len(out) > 64 {
		return ""
	}
	return out
}
