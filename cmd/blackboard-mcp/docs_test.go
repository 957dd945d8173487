package main

import (
	"bytes"
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README and docs/ are how people learn the product: a link that
// points nowhere, a verb or flag of the program that no page documents, a
// test named as proof that does not exist, or a README that grew past what
// a newcomer reads in five minutes, fails here. These tests read files and
// run the program's usage in process; they start no server.

// readmeMaxLines is the most the README may hold: a front door, with the
// rest in docs/.
const readmeMaxLines = 250

// docSubjects are the pages docs/ must have, one a subject.
var docSubjects = []string{"guarantees.md", "remote.md", "people.md", "access.md", "search.md",
	"performance.md", "cli.md", "architecture.md", "development.md"}

// docPage is one Markdown page of the repository's documentation.
type docPage struct {
	rel  string // its path from the repository's root, with slashes
	text string
}

// docRoot is the repository's root, two levels above this package.
func docRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the repository's root is not two levels above cmd/blackboard-mcp: %v", err)
	}
	return root
}

// docPages reads README.md and every page under docs/.
func docPages(t *testing.T) []docPage {
	t.Helper()
	root := docRoot(t)
	names := []string{"README.md"}
	matches, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range matches {
		names = append(names, "docs/"+filepath.Base(m))
	}
	pages := make([]docPage, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			t.Fatalf("read %s: %v", n, err)
		}
		pages = append(pages, docPage{rel: n, text: string(b)})
	}
	return pages
}

// docPageAt is the page at rel, read from the repository.
func docPageAt(t *testing.T, rel string) docPage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docRoot(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return docPage{rel: rel, text: string(b)}
}

// docFence opens or closes a fenced code block.
var docFence = regexp.MustCompile("^\\s*(```|~~~)")

// docProse is text with its fenced code blocks and code spans blanked
// out: what is left is what Markdown renders as prose, links and headings,
// at the offsets it has in text.
func docProse(text string) string {
	return docCodeSpan.ReplaceAllStringFunc(docProseKeepingHeadingCode(text), docBlank)
}

// docBlank is s with every byte but its line breaks made a space, so that
// byte offsets and line numbers stay those of the page.
func docBlank(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// docCodeSpan is a code span: backticks around text, over line breaks too.
var docCodeSpan = regexp.MustCompile("`[^`]+`")

// docCode is what a page shows as code: its fenced blocks and code spans.
func docCode(text string) []string {
	var code []string
	var block []string
	in := false
	var prose []string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case docFence.MatchString(l) && in:
			code = append(code, strings.Join(block, "\n"))
			block, in = nil, false
		case docFence.MatchString(l):
			in = true
		case in:
			block = append(block, l)
		default:
			prose = append(prose, l)
		}
	}
	return append(code, docCodeSpan.FindAllString(strings.Join(prose, "\n"), -1)...)
}

// docHeading is an ATX heading: its level and its text.
var docHeading = regexp.MustCompile(`(?m)^(#{1,6})[ \t]+(.+?)[ \t#]*$`)

// docAnchors are the anchors GitHub gives a page's headings: lower case,
// spaces to hyphens, punctuation dropped, and -1, -2 after a repeated one.
func docAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, m := range docHeading.FindAllStringSubmatch(docProseKeepingHeadingCode(text), -1) {
		slug := docSlug(m[2])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// docProseKeepingHeadingCode is text with its fenced blocks blanked out
// (docBlank); code spans stay, as a heading's anchor is made of their text
// too.
func docProseKeepingHeadingCode(text string) string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if docFence.MatchString(l) {
			in = !in
			lines[i] = docBlank(l)
		} else if in {
			lines[i] = docBlank(l)
		}
	}
	return strings.Join(lines, "\n")
}

// docSlug is a heading's anchor as GitHub makes it.
func docSlug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// docLink is a Markdown link or image: [text](target) or [text](target "title").
var docLink = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// docScheme starts a link that leaves the repository (https:, mailto:).
var docScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

func TestREADMEIsShort(t *testing.T) {
	readme := docPageAt(t, "README.md")
	n := strings.Count(readme.text, "\n")
	if !strings.HasSuffix(readme.text, "\n") {
		n++ // a last line without its line break
	}
	if n > readmeMaxLines {
		t.Errorf("README.md has %d lines; it holds at most %d (what a newcomer reads in five minutes): move the detail to docs/", n, readmeMaxLines)
	}
}

// TestDocsHaveEverySubject: docs/ has a page for every subject, each opens
// with its title and a sentence saying what it covers, and the README links
// every page of docs/.
func TestDocsHaveEverySubject(t *testing.T) {
	root := docRoot(t)
	for _, name := range docSubjects {
		if _, err := os.Stat(filepath.Join(root, "docs", name)); err != nil {
			t.Errorf("docs/%s is missing: docs/ has one page a subject", name)
		}
	}
	readme := docPageAt(t, "README.md")
	for _, p := range docPages(t) {
		if p.rel == "README.md" {
			continue
		}
		lines := strings.Split(p.text, "\n")
		if len(lines) < 3 || !strings.HasPrefix(lines[0], "# ") || strings.TrimSpace(lines[1]) != "" {
			t.Errorf("%s: the first line is its title (# ...), then a blank line", p.rel)
		} else if first := strings.TrimSpace(lines[2]); first == "" || strings.ContainsAny(first[:1], "#|-*`>![") {
			t.Errorf("%s: after its title comes a sentence saying what the page covers, not %q", p.rel, first)
		}
		if !strings.Contains(readme.text, "]("+p.rel+")") && !strings.Contains(readme.text, "]("+p.rel+"#") {
			t.Errorf("README.md does not link %s: every page of docs/ is reachable from the README", p.rel)
		}
	}
}

// TestDocsLinksResolve: every relative link of the README and of docs/
// names a file that exists and, into a Markdown page, a heading it has.
func TestDocsLinksResolve(t *testing.T) {
	root := docRoot(t)
	anchorsOf := map[string]map[string]bool{}
	anchors := func(rel string) (map[string]bool, bool) {
		if a, ok := anchorsOf[rel]; ok {
			return a, true
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return nil, false
		}
		anchorsOf[rel] = docAnchors(string(b))
		return anchorsOf[rel], true
	}
	links := 0
	for _, p := range docPages(t) {
		prose := docProse(p.text)
		for _, loc := range docLink.FindAllStringSubmatchIndex(prose, -1) {
			target := prose[loc[2]:loc[3]]
			line := strings.Count(prose[:loc[0]], "\n") + 1
			if docScheme.MatchString(target) {
				continue
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			rel := p.rel
			if path != "" {
				rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p.rel), filepath.FromSlash(path))))
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s:%d: %s leads outside the repository", p.rel, line, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					t.Errorf("%s:%d: %s points to %s, which does not exist", p.rel, line, target, rel)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(rel, ".md") {
				continue
			}
			a, ok := anchors(rel)
			if !ok {
				t.Errorf("%s:%d: cannot read %s for its headings", p.rel, line, rel)
				continue
			}
			if !a[frag] {
				t.Errorf("%s:%d: %s points to #%s, which no heading of %s makes (it has: %s)",
					p.rel, line, target, frag, rel, strings.Join(slices.Sorted(maps.Keys(a)), ", "))
			}
		}
	}
	if links == 0 {
		t.Fatal("found no relative link in the README and docs/: the link check reads nothing")
	}
}

// docTestName is a test, benchmark or fuzz target named in code.
var docTestName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z]\w*`)

// docTestFunc is the declaration of one in a _test.go file.
var docTestFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`)

// TestDocsNameOnlyTestsThatExist: a test or benchmark the README or docs/
// name as proof (in code: `TestX`) is a function of the repository's tests.
func TestDocsNameOnlyTestsThatExist(t *testing.T) {
	root := docRoot(t)
	defined := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range docTestFunc.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !defined["TestDocsNameOnlyTestsThatExist"] {
		t.Fatalf("found %d test functions, not this one: the walk of the repository's tests is broken", len(defined))
	}
	named := 0
	for _, p := range docPages(t) {
		seen := map[string]bool{}
		for _, code := range docCode(p.text) {
			for _, name := range docTestName.FindAllString(code, -1) {
				named++
				if !defined[name] && !seen[name] {
					seen[name] = true
					t.Errorf("%s names %s, which is no test, benchmark or fuzz target of the repository", p.rel, name)
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("the README and docs/ name no test: the check reads nothing")
	}
}

// docUsageLine is a line of a usage text that shows a command: the command
// (up to two spaces or the end), then what it does.
var docUsageLine = regexp.MustCompile(`(?m)^(?:Usage:)?\s*blackboard-mcp\s+(.+?)(?:\s{2,}.*)?$`)

// docSubcommand is a usage line's word after the verb that names a
// subcommand (set, add|list|revoke), not an argument (URL, [TOPIC]).
var docSubcommand = regexp.MustCompile(`^[a-z][a-z|]*$`)

// docFlagLine is a flag as the flag package prints it: "  -name value".
var docFlagLine = regexp.MustCompile(`(?m)^  -([\w-]+)`)

// docCLIVerbs runs the program's usage in process and returns its verbs,
// each with the subcommands its own usage shows (remote set, token add) and
// the flags it defines.
func docCLIVerbs(t *testing.T) map[string]struct{ subs, flags []string } {
	t.Helper()
	// A verb's usage may look for the board's engine (viaEngine): that
	// happens in this test's own directories.
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("BLACKBOARD_DIR", t.TempDir())
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatalf("blackboard-mcp -h: %v\n%s", err, errOut.String())
	}
	verbs := map[string]struct{ subs, flags []string }{}
	for _, m := range docUsageLine.FindAllStringSubmatch(out.String(), -1) {
		verb := strings.Fields(m[1])[0]
		verbs[verb] = struct{ subs, flags []string }{}
	}
	if len(verbs) < 10 {
		t.Fatalf("blackboard-mcp -h lists %d verbs; the usage text was not read as it is:\n%s", len(verbs), out.String())
	}
	for verb := range verbs {
		var vout, verr bytes.Buffer
		_ = run(context.Background(), []string{verb, "-h"}, strings.NewReader(""), &vout, &verr)
		usage := vout.String() + verr.String()
		v := verbs[verb]
		for _, m := range docFlagLine.FindAllStringSubmatch(usage, -1) {
			v.flags = append(v.flags, m[1])
		}
		for _, m := range docUsageLine.FindAllStringSubmatch(usage, -1) {
			words := strings.Fields(m[1])
			if len(words) > 1 && words[0] == verb && docSubcommand.MatchString(words[1]) {
				v.subs = append(v.subs, strings.Split(words[1], "|")...)
			}
		}
		if len(v.flags) == 0 && !strings.Contains(usage, "Usage") {
			t.Errorf("blackboard-mcp %s -h printed no usage:\n%s", verb, usage)
		}
		verbs[verb] = v
	}
	if !slices.Contains(verbs["put"].flags, "digest") || !slices.Contains(verbs["token"].subs, "add") {
		t.Fatalf("the verbs' usage was not read as it is: put's flags %q, token's subcommands %q", verbs["put"].flags, verbs["token"].subs)
	}
	return verbs
}

// TestDocsCLIHasEveryVerbAndFlag: every verb of blackboard-mcp has its
// section in docs/cli.md (a heading that names it), every subcommand its
// usage shows is there, and every flag it defines is in its section, or, for
// the flags every verb shares, in the section on what every verb takes.
func TestDocsCLIHasEveryVerbAndFlag(t *testing.T) {
	cli := docPageAt(t, "docs/cli.md").text
	sections := docSections(cli)
	shared := ""
	for title, body := range sections {
		if strings.Contains(strings.ToLower(title), "every verb") {
			shared += body
		}
	}
	if shared == "" {
		t.Error("docs/cli.md has no section on what every verb takes (a heading with \"every verb\")")
	}
	for verb, v := range docCLIVerbs(t) {
		section, ok := "", false
		for title, body := range sections {
			if strings.HasPrefix(title, "`"+verb+"`") {
				section, ok = body, true
			}
		}
		if !ok {
			t.Errorf("docs/cli.md has no section for the verb %s: add a heading \"### `%s`\"", verb, verb)
			continue
		}
		for _, sub := range v.subs {
			if !strings.Contains(section, verb+" "+sub) {
				t.Errorf("docs/cli.md's section on %s does not show `%s %s`", verb, verb, sub)
			}
		}
		for _, flag := range v.flags {
			spelled := "--" + flag
			if len(flag) == 1 {
				spelled = "-" + flag
			}
			pattern := regexp.MustCompile(`(^|[^\w-])` + regexp.QuoteMeta(spelled) + `($|[^\w-])`)
			if !pattern.MatchString(section) && !pattern.MatchString(shared) {
				t.Errorf("docs/cli.md does not document %s of blackboard-mcp %s: add it to the verb's section", spelled, verb)
			}
		}
	}
}

// docSections splits a page at its headings: each heading's text, and what
// follows it up to the next heading of its level or above.
func docSections(text string) map[string]string {
	prose := docProseKeepingHeadingCode(text)
	locs := docHeading.FindAllStringSubmatchIndex(prose, -1)
	sections := map[string]string{}
	for i, loc := range locs {
		level := loc[3] - loc[2]
		end := len(text)
		for _, next := range locs[i+1:] {
			if next[3]-next[2] <= level {
				end = next[0]
				break
			}
		}
		sections[prose[loc[4]:loc[5]]] = text[loc[1]:end]
	}
	return sections
}

// TestREADMECommandsRunByCI: the README's two commands, to install and to
// run the tests, are lines of .ci/run as the README writes them.
func TestREADMECommandsRunByCI(t *testing.T) {
	readme := docPageAt(t, "README.md").text
	start := strings.Index(readme, "\n## Install\n")
	if start < 0 {
		t.Fatal("README.md has no \"## Install\" section")
	}
	section := readme[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	var commands []string
	in := false
	for _, l := range strings.Split(section, "\n") {
		if docFence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "go ") {
			commands = append(commands, l)
		}
	}
	if len(commands) != 2 {
		t.Fatalf("the README's Install section shows %d go commands (%q); it shows two: the install and the tests", len(commands), commands)
	}
	ci, err := os.ReadFile(filepath.Join(docRoot(t), ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(ci), "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	for _, c := range commands {
		if !slices.Contains(lines, c) {
			t.Errorf(".ci/run does not run the README's command %q as written", c)
		}
	}
}
