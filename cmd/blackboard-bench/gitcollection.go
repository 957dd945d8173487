package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A test collection of notes of the board's own kind, judged by the people
// who wrote them: a project's git history. Each commit that is no merge is
// a document, an engineer's note of what changed and why (its subject the
// title, its message the body); each pull request merged is a question,
// its title, judged by the commits it brought. A pull request whose title
// is one of its commits' subjects is left out, for its words find it
// alone; so are those of a few words, or of routine work (dependency
// bumps, releases, merges back), and those of more than maxPullCommits
// commits.

// gitCollection is how a history becomes a collection: the commits since
// since, and at most questions pull requests, drawn at random (always the
// same ones for one history).
type gitCollection struct {
	since     string
	questions int
}

// maxPullCommits bounds the commits of a pull request asked: a larger one
// (a merge of a branch's work of months) is no question with an answer.
const maxPullCommits = 20

// routine marks the titles of pull requests of routine work.
var routine = regexp.MustCompile(`(?i)\b(deps|bump|release|merge|sync|signed-off-by)\b`)

// trailer marks the lines of a commit message that say who, not what.
var trailer = regexp.MustCompile(`(?i)^\s*(signed-off-by|co-authored-by|reviewed-by|change-id):`)

// read makes the collection of the repository in dir.
func (g gitCollection) read(ctx context.Context, dir string) (*collection, error) {
	logged, err := gitOutput(ctx, dir, "log", "--no-merges", "--since="+g.since, "--format=%H%x00%s%x00%b%x01")
	if err != nil {
		return nil, err
	}
	c := &collection{name: collectionName(dir), grades: map[int]map[string]int{}}
	idOf := map[string]string{}      // a commit's document
	subjectOf := map[string]string{} // a commit's subject, in lower case
	for rec := range strings.SplitSeq(logged, "\x01") {
		fields := strings.Split(strings.Trim(rec, "\n"), "\x00")
		if len(fields) != 3 {
			continue
		}
		var body []string
		for line := range strings.SplitSeq(fields[2], "\n") {
			if !trailer.MatchString(line) {
				body = append(body, line)
			}
		}
		id := strconv.Itoa(len(c.docs) + 1)
		idOf[fields[0]], subjectOf[fields[0]] = id, strings.ToLower(strings.TrimSpace(fields[1]))
		c.docs = append(c.docs, smartRecord{id: id, fields: map[string]string{
			"T": fields[1] + "\n", "W": strings.TrimSpace(strings.Join(body, "\n")) + "\n"}})
	}
	if len(c.docs) == 0 {
		return nil, fmt.Errorf("%s: no commits since %s", dir, g.since)
	}
	merges, err := gitOutput(ctx, dir, "log", "--merges", "--first-parent", "--since="+g.since, "--format=%P%x00%B%x01")
	if err != nil {
		return nil, err
	}
	type pull struct {
		title string
		docs  []string
	}
	var pulls []pull
	for rec := range strings.SplitSeq(merges, "\x01") {
		parents, message, ok := strings.Cut(strings.Trim(rec, "\n"), "\x00")
		p := strings.Fields(parents)
		if !ok || len(p) != 2 {
			continue
		}
		// "Merge pull request #N from ...", a blank line, the title.
		_, rest, _ := strings.Cut(message, "\n")
		title, _, _ := strings.Cut(strings.TrimSpace(rest), "\n")
		title = strings.TrimSpace(title)
		if len(strings.Fields(title)) < 3 || routine.MatchString(title) {
			continue
		}
		brought, err := gitOutput(ctx, dir, "rev-list", "--no-merges", p[0]+".."+p[1])
		if err != nil {
			return nil, err
		}
		var docs []string
		own := false
		for _, h := range strings.Fields(brought) {
			if id, ok := idOf[h]; ok {
				docs = append(docs, id)
				own = own || subjectOf[h] == strings.ToLower(title)
			}
		}
		if len(docs) == 0 || len(docs) > maxPullCommits || own {
			continue
		}
		pulls = append(pulls, pull{title, docs})
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(pulls), func(i, j int) { pulls[i], pulls[j] = pulls[j], pulls[i] })
	for i, p := range pulls[:min(g.questions, len(pulls))] {
		c.questions = append(c.questions, smartRecord{id: strconv.Itoa(i + 1), fields: map[string]string{"W": p.title + "\n"}})
		c.grades[i+1] = map[string]int{}
		for _, id := range p.docs {
			c.grades[i+1][id] = 1
		}
	}
	if len(c.questions) == 0 {
		return nil, fmt.Errorf("%s: no pull request merged since %s to ask", dir, g.since)
	}
	return c, nil
}

// collectionName is the name of the repository in dir, as a topic: its
// directory's, without ".git", of letters, digits and dashes.
func collectionName(dir string) string {
	abs, _ := filepath.Abs(dir)
	base := strings.TrimSuffix(filepath.Base(abs), ".git")
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, base)
	if name = strings.Trim(name, "-"); name == "" || name[0] < 'a' || name[0] > 'z' {
		name = strings.TrimSuffix("history-"+name, "-") // a topic begins with a letter
	}
	return name
}

// gitOutput runs git in the repository dir and returns what it printed.
func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
