package importer_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/importer"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Ada Lovelace":           "ada-lovelace",
		"  --Ada__x  ":           "ada__x",
		"deploy v2.4.7":          "deploy-v2.4.7",
		"notes.md":               "notes.md-note", // a name the grammar refuses
		"CON":                    "con-note",
		"a/b\\c":                 "a-b-c",
		strings.Repeat("x", 100): strings.Repeat("x", 64),
	} {
		if got := importer.Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
	// Nothing to keep: a short hash, the same every time.
	if a, b := importer.Slug("東京"), importer.Slug("東京"); a != b || !strings.HasPrefix(a, "n-") || a == importer.Slug("大阪") {
		t.Errorf("Slug of names without letters: %q %q %q", a, b, importer.Slug("大阪"))
	}
	for _, s := range []string{"Ada Lovelace", "notes.md", "CON", "東京", strings.Repeat("é", 80)} {
		if _, err := note.ParseAddress("t/"+importer.Slug(s), "w"); err != nil {
			t.Errorf("Slug(%q) = %q is no valid segment: %v", s, importer.Slug(s), err)
		}
	}
}

// memoryFile has what a hand-edited memory.jsonl may hold besides what the
// reference server writes.
const memoryFile = `{"type":"entity","name":"Ada Lovelace","entityType":"person","observations":["Wrote the first program","Worked with Babbage"]}
{"type":"entity","name":"ada  lovelace","entityType":"person","observations":["Another Ada"]}
{"type":"entity","name":"東京","entityType":"city","observations":[]}
{"type":"entity","name":"Engine","entityType":"open question","observations":["` + "LONG" + `"]}

{"type":"relation","from":"Ada Lovelace","to":"Engine","relationType":"depends_on"}
{"type":"relation","from":"Ada Lovelace","to":"東京","relationType":"visited"}
{"type":"relation","from":"Ada Lovelace","to":"Gone","relationType":"cites"}
{"type":"relation","from":"Nobody","to":"Engine","relationType":"cites"}
{"type":"comment","text":"?"}
`

func TestMemoryPlan(t *testing.T) {
	long := strings.Repeat("a long observation ", 30)
	p, err := importer.Memory(strings.NewReader(strings.Replace(memoryFile, "LONG", long, 1)), "memory")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, n := range p.Notes {
		keys = append(keys, n.Key)
	}
	want := []string{"memory/person/ada-lovelace", "memory/person/ada-lovelace-2", "memory/city/" + importer.Slug("東京"),
		"memory/open-question/engine"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
	ada := p.Notes[0]
	if ada.Digest != "Wrote the first program" || ada.Body != "- Worked with Babbage\n" || ada.Kind != "person" ||
		!slices.Equal(ada.Links["depends_on"], []string{"memory/open-question/engine"}) || len(ada.Links) != 1 {
		t.Errorf("Ada: %+v", ada)
	}
	if rels := ada.Fields["relations"].([]map[string]string); len(rels) != 3 || rels[1]["type"] != "visited" || rels[2]["to_name"] != "Gone" {
		t.Errorf("Ada's relations field %v; want all three kept", rels)
	}
	engine := p.Notes[3]
	if !strings.HasSuffix(engine.Digest, "…") || len(engine.Digest) > note.DigestWarnChars+3 || engine.Body != "- "+long+"\n" {
		t.Errorf("a long first observation: digest %q, body %q; want it cut in the digest and whole in the body", engine.Digest, engine.Body)
	}
	if p.Notes[2].Digest != "city 東京" {
		t.Errorf("an entity without observations has digest %q", p.Notes[2].Digest)
	}
	unmapped := strings.Join(p.Unmapped, "\n")
	for _, s := range []string{"no link means visited", "no entity Gone", "no entity Nobody", `unknown type "comment"`} {
		if !strings.Contains(unmapped, s) {
			t.Errorf("unmapped does not say %q:\n%s", s, unmapped)
		}
	}
}

func TestMarkdownPlan(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".obsidian/app.json":      "{}",
		"Projects/Alpha Plan.md":  "---\ntitle: Alpha launch plan\ntags: [launch, q3]\nCreated-At: 2026-01-02\nauthor: Ada\nkind: plan\n---\n# Alpha\nShip it.\n",
		"Inbox.md":                "# Groceries\n- milk\n",
		"Projects/img.png":        "png",
		"Deep/a/b/c/d/e/f/g/h.md": "---\nsummary: Deep note\n---\nbody\n",
		"broken.md":               "---\ntitle: [unclosed\n---\nbody\n",
	}
	for p, c := range files {
		abs := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := importer.Markdown(root, "")
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]importer.Note{}
	for _, n := range p.Notes {
		byKey[n.Key] = n
	}
	alpha, ok := byKey["projects/alpha-plan"]
	if !ok || alpha.Digest != "Alpha launch plan" || alpha.Kind != "plan" || alpha.Body != "# Alpha\nShip it.\n" ||
		alpha.Fields["source_author"] != "Ada" || alpha.Fields["created_at"] == nil || alpha.Fields["title"] != "Alpha launch plan" {
		t.Errorf("projects/alpha-plan: %+v (found %v)", alpha, ok)
	}
	if in := byKey["notes/inbox"]; in.Digest != "Groceries" {
		t.Errorf("a file without front matter at the top: %+v", in)
	}
	if d := byKey["deep/a/b/c/d/e/f/g-h"]; d.Digest != "Deep note" || d.Fields["source_summary"] != "Deep note" {
		t.Errorf("a deep file: keys %v", p.Notes)
	}
	if b := byKey["notes/broken"]; b.Digest != "title: [unclosed" || !strings.Contains(b.Body, "[unclosed") {
		t.Errorf("broken front matter: %+v", b)
	}
	unmapped := strings.Join(p.Unmapped, "\n")
	for _, s := range []string{".obsidian/: a hidden folder", "Projects/img.png: not a Markdown file", "notes/broken: front matter unreadable"} {
		if !strings.Contains(unmapped, s) {
			t.Errorf("unmapped does not say %q:\n%s", s, unmapped)
		}
	}
}

// TestApplyTwiceChangesNothing writes a plan on a real board, then again:
// the second run writes nothing and makes no commit.
func TestApplyTwiceChangesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acme")
	if err := fsstore.Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	w, err := fsstore.Open(dir, fsstore.Options{NoSync: true, Agent: "importer"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	p, err := importer.Memory(strings.NewReader(strings.Replace(memoryFile, "LONG", "short", 1)), "memory")
	if err != nil {
		t.Fatal(err)
	}
	v := w.As(fsstore.OpenCaller("importer"))
	commits := func() int {
		n := 0
		for _, c := range fixtures.Git(t, dir, "rev-list", "--count", "HEAD") {
			n = n*10 + int(c-'0')
		}
		return n
	}
	before := commits()
	r := importer.Apply(v, p, nil)
	if r.Written != 4 || r.Unchanged != 0 || len(r.Failed) != 0 || commits() != before+4 {
		t.Fatalf("first import: %+v, %d commits after %d", r, commits(), before)
	}
	r = importer.Apply(v, p, nil)
	if r.Written != 0 || r.Unchanged != 4 || commits() != before+4 {
		t.Errorf("second import: %+v, %d commits; want nothing written", r, commits())
	}
	n, err := v.Get("memory/person/ada-lovelace", true)
	if err != nil || n.Author != "importer" || n.Links["depends_on"][0] != "bb://acme/memory/open-question/engine" {
		t.Errorf("ada-lovelace on the board: %+v, %v", n, err)
	}
}
