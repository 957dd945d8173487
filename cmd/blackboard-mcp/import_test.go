package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportReferenceMemory: a memory.jsonl written by the real reference
// memory server (npm @modelcontextprotocol/server-memory) is imported, and
// every entity (name, type, observations) and every relation (from, type,
// to) can be read back from the board; importing it again writes nothing.
// It needs npm.
func TestImportReferenceMemory(t *testing.T) {
	t.Parallel()
	npmDir := installReferenceServer(t)
	memoryFile := filepath.Join(t.TempDir(), "memory.jsonl")
	ref := startReferenceServer(t, npmDir, memoryFile)
	type entity struct {
		name, typ string
		obs       []string
	}
	entities := []entity{
		{"Ada Lovelace", "person", []string{"Wrote the first program", "Worked with Babbage", "Line one\nline two"}},
		{"Analytical Engine", "machine", []string{"A mechanical computer"}},
		{"Charles Babbage", "person", nil},
		{"ada lovelace", "person", []string{"Another Ada, whose name slugs the same"}},
		{"東京", "city", []string{"A city"}},
		{"Q3 launch", "Open Question", []string{strings.Repeat("Why so long? ", 40)}},
	}
	relations := [][3]string{
		{"Ada Lovelace", "Analytical Engine", "wrote programs for"},
		{"Analytical Engine", "Charles Babbage", "depends on"},
		{"Ada Lovelace", "Charles Babbage", "works with"},
		{"Q3 launch", "Analytical Engine", "part_of"},
		{"東京", "Ada Lovelace", "mentions"},
	}
	var ents, rels []map[string]any
	for _, e := range entities {
		obs := e.obs
		if obs == nil {
			obs = []string{}
		}
		ents = append(ents, map[string]any{"name": e.name, "entityType": e.typ, "observations": obs})
	}
	for _, r := range relations {
		rels = append(rels, map[string]any{"from": r[0], "to": r[1], "relationType": r[2]})
	}
	ref.call(t, "create_entities", map[string]any{"entities": ents})
	ref.call(t, "create_relations", map[string]any{"relations": rels})

	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	out := runCLI(t, dir, "import", memoryFile)
	if !strings.Contains(out, fmt.Sprintf("imported %d notes", len(entities))) || !strings.Contains(out, "6 written") {
		t.Fatalf("import said:\n%s", out)
	}
	for _, s := range []string{"no link means wrote programs for", "no link means works with"} {
		if !strings.Contains(out, s) {
			t.Errorf("import does not list %q as not mapped:\n%s", s, out)
		}
	}

	// Read every note back: entity by entity_name.
	type back struct {
		key       string
		fm        map[string]any
		body      string
		relations []any
	}
	byName := map[string]back{}
	err := filepath.WalkDir(filepath.Join(dir, "memory"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		key := strings.TrimSuffix(filepath.ToSlash(rel), ".md")
		fm, body := readNote(t, dir, key)
		rs, _ := fm["relations"].([]any)
		byName[fmt.Sprint(fm["entity_name"])] = back{key: key, fm: fm, body: body, relations: rs}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byName) != len(entities) {
		t.Fatalf("%d notes with an entity_name, want %d: %v", len(byName), len(entities), byName)
	}
	for _, e := range entities {
		b, ok := byName[e.name]
		if !ok {
			t.Errorf("no note for %q", e.name)
			continue
		}
		if b.fm["entity_type"] != e.typ || b.fm["author"] != "importer" {
			t.Errorf("%s: entity_type %v, author %v", b.key, b.fm["entity_type"], b.fm["author"])
		}
		// The observations: the digest, then the body's list (the whole first
		// one stays in the body when the digest had to cut it).
		var got []string
		digest := fmt.Sprint(b.fm["digest"])
		if !strings.HasSuffix(digest, "…") && len(e.obs) > 0 {
			got = append(got, digest)
		}
		for _, item := range strings.Split(strings.TrimSuffix(b.body, "\n"), "\n- ") {
			if item = strings.TrimPrefix(item, "- "); item != "" {
				got = append(got, strings.ReplaceAll(item, "\n  ", "\n"))
			}
		}
		want := e.obs
		if want == nil {
			want = []string{}
			if got == nil {
				got = []string{}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: observations read back %q, want %q", b.key, got, want)
		}
	}
	for _, r := range relations {
		from, to := byName[r[0]], byName[r[1]]
		found := false
		for _, x := range from.relations {
			m, _ := x.(map[string]any)
			if m["type"] == r[2] && m["to_name"] == r[1] && m["to"] == to.key {
				found = true
			}
		}
		if !found {
			t.Errorf("relation %s -[%s]-> %s not in %s's relations: %v", r[0], r[2], r[1], from.key, from.relations)
		}
	}
	if links, _ := byName["Analytical Engine"].fm["links"].(map[string]any); fmt.Sprint(links["depends_on"]) != "["+uri(byName["Charles Babbage"].key)+"]" {
		t.Errorf("depends on is not a depends_on link: %v", byName["Analytical Engine"].fm["links"])
	}

	commits := gitLog(t, dir, ".")
	again := runCLI(t, dir, "import", memoryFile)
	if !strings.Contains(again, "0 written, 6 unchanged") || len(gitLog(t, dir, ".")) != len(commits) {
		t.Errorf("a second import changed something:\n%s", again)
	}
	checkWorkspace(t, dir)
}

// TestImportMarkdownFolder: an Obsidian-like vault comes in with addresses
// from its paths, digests from titles or first lines, its other fields
// kept; hidden folders and other files are listed, not imported; a second
// run writes nothing.
func TestImportMarkdownFolder(t *testing.T) {
	t.Parallel()
	vault := t.TempDir()
	for p, c := range map[string]string{
		".obsidian/workspace.json":   "{}",
		"Projects/Launch Plan.md":    "---\ntitle: Launch plan for Q3\ntags: [launch]\naliases: [LP]\n---\n# Launch\nShip on the 3rd.\n",
		"Projects/Research/Cache.md": "Cache hit rate fell to 71%.\n\nMore later.\n",
		"attachments/chart.png":      "png",
	} {
		abs := filepath.Join(vault, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := newWorkspaceDir(t)
	runBinaryEnv(t, "init", dir)
	out := runCLI(t, dir, "import", vault, "--topic", "vault")
	if !strings.Contains(out, "imported 2 notes") || !strings.Contains(out, ".obsidian/: a hidden folder") ||
		!strings.Contains(out, "attachments/chart.png: not a Markdown file") {
		t.Errorf("import said:\n%s", out)
	}
	fm, body := readNote(t, dir, "vault/projects/launch-plan")
	if fm["digest"] != "Launch plan for Q3" || fmt.Sprint(fm["tags"]) != "[launch]" || fmt.Sprint(fm["aliases"]) != "[LP]" ||
		body != "# Launch\nShip on the 3rd.\n" {
		t.Errorf("vault/projects/launch-plan: %v %q", fm, body)
	}
	if fm, _ := readNote(t, dir, "vault/projects/research/cache"); fm["digest"] != "Cache hit rate fell to 71%." {
		t.Errorf("vault/projects/research/cache: %v", fm)
	}
	if again := runCLI(t, dir, "import", vault, "--topic", "vault"); !strings.Contains(again, "0 written, 2 unchanged") {
		t.Errorf("a second import changed something:\n%s", again)
	}
	checkWorkspace(t, dir)
}
