package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// How well search finds what a test collection's judges found: the
// collection's documents become notes of a new board (their titles the
// digests, their abstracts the bodies), written through a real MCP client;
// the board is reindexed (every note's vector made, the index merged); and
// every question is asked with search_keys, limit 10, through MCP, by each
// build named, each on its own copy of the board.
func runSearch(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("search", stderr, nil)
	server := fs.String("server", "", "the blackboard-mcp binary (default: beside this one, else on PATH)")
	beside := fs.String("beside", "", "another blackboard-mcp binary to measure beside --server, on its own copy of the board")
	limit := fs.Int("limit", 10, "the answers each question asks for, and the cut of nDCG and recall")
	fromGit := fs.Bool("git", false, "the argument is a git repository: its commits are the documents, its merged pull requests' titles the questions")
	since := fs.String("since", "2 years ago", "with --git: the commits and pull requests since then (git's --since)")
	questions := fs.Int("questions", 300, "with --git: the pull requests asked at most, drawn at random")
	cues := fs.Bool("cues", false, "also measure --server with each ranking cue turned off in turn, then all of them (BLACKBOARD_SEARCH_OFF)")
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("search takes one argument: the directory of a test collection, or with --git a repository")
	}
	var col *collection
	if *fromGit {
		col, err = gitCollection{since: *since, questions: *questions}.read(ctx, pos[0])
	} else {
		col, err = readCollection(pos[0])
	}
	if err != nil {
		return err
	}
	// Each way is a build and the cues it turns off.
	type way struct{ binary, off string }
	ways := []way{{binary: *server}}
	if *beside != "" {
		ways = append(ways, way{binary: *beside})
	}
	for i := range ways {
		if ways[i].binary, err = serverBinary(ways[i].binary); err != nil {
			return err
		}
	}
	if *cues {
		for _, cue := range fsstore.SearchCues {
			ways = append(ways, way{binary: ways[0].binary, off: cue})
		}
		// And words alone: what every cue together buys.
		ways = append(ways, way{binary: ways[0].binary, off: strings.Join(fsstore.SearchCues, ",")})
	}
	tmp, err := os.MkdirTemp("", "bench-search-")
	if err != nil {
		return err
	}
	defer removeBoards(tmp)
	board := filepath.Join(tmp, col.name)
	if err := loadCollection(ctx, ways[0].binary, board, col); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "search collection=%s documents=%d questions=%d judged=%d cut=%d\n",
		col.name, len(col.docs), len(col.questions), col.judged(), *limit)
	fmt.Fprintf(stdout, "%-40s %-12s %9s %9s %9s %9s\n", "build", "cue off", "nDCG", "recall", "p50", "p99")
	for i, w := range ways {
		// Each way on a copy of its own, and so an engine of its own: one
		// started with other cues off never answers for it.
		copyDir := filepath.Join(tmp, fmt.Sprintf("%s-%d", col.name, i))
		if err := copyQuietBoard(ctx, board, copyDir); err != nil {
			return err
		}
		if out, err := exec.CommandContext(ctx, w.binary, "reindex", "--dir", copyDir).CombinedOutput(); err != nil {
			return fmt.Errorf("%s reindex: %w: %s", w.binary, err, out)
		}
		m, err := askCollection(ctx, w.binary, copyDir, col, *limit, "BLACKBOARD_SEARCH_OFF="+w.off)
		if err != nil {
			return fmt.Errorf("%s: %w", w.binary, err)
		}
		off := w.off
		switch {
		case off == "":
			off = "-"
		case strings.Contains(off, ","):
			off = "every cue"
		}
		fmt.Fprintf(stdout, "%-40s %-12s %9.3f %9.3f %9s %9s\n", w.binary, off, m.ndcg, m.recall,
			millis(m.times.quantile(0.5)), millis(m.times.quantile(0.99)))
	}
	return nil
}

// collection is a test collection in the SMART layout (Cranfield, CISI,
// MEDLINE, CACM): a file of documents, one of questions, one of judgements.
type collection struct {
	name      string
	docs      []smartRecord
	questions []smartRecord
	// grades maps a question's place (1-based, as the judgements number
	// them) to its judged documents' grades: the gain of each in nDCG, 0
	// for one judged of no interest.
	grades map[int]map[string]int
}

// smartRecord is one .I record: its id and its fields (.T, .W, ...).
type smartRecord struct {
	id     string
	fields map[string]string
}

// readCollection reads the collection in dir: the documents are the file
// whose name holds "all", the questions "qry", the judgements "qrel" or
// "rel".
func readCollection(dir string) (*collection, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var docs, qry, rel string
	for _, e := range entries {
		name := strings.ToLower(e.Name())
		p := filepath.Join(dir, e.Name())
		switch {
		case e.IsDir() || strings.HasSuffix(name, ".readme"):
		case strings.Contains(name, ".all"):
			docs = p
		case strings.Contains(name, "qry"):
			qry = p
		case strings.Contains(name, "qrel") || strings.HasSuffix(name, ".rel"):
			rel = p
		}
	}
	if docs == "" || qry == "" || rel == "" {
		return nil, fmt.Errorf("%s: want a file of documents (*.all*), of questions (*qry*) and of judgements (*qrel* or *.rel)", dir)
	}
	c := &collection{name: strings.ToLower(strings.Fields(strings.NewReplacer(".", " ", "_", " ").Replace(filepath.Base(docs)))[0])}
	if c.docs, err = readSMART(docs); err != nil {
		return nil, err
	}
	if c.questions, err = readSMART(qry); err != nil {
		return nil, err
	}
	if c.grades, err = readJudgements(rel); err != nil {
		return nil, err
	}
	return c, nil
}

// readSMART reads the .I records of a file: ".I n", then fields, each a
// line ".X" and the lines up to the next field or record.
func readSMART(path string) ([]smartRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []smartRecord
	field := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ".I "):
			out = append(out, smartRecord{id: strings.TrimSpace(line[3:]), fields: map[string]string{}})
			field = ""
		case len(line) == 2 && line[0] == '.' && line[1] >= 'A' && line[1] <= 'Z' && len(out) > 0:
			field = line[1:]
		case field != "" && len(out) > 0:
			r := out[len(out)-1]
			r.fields[field] += line + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no .I records", path)
	}
	return out, nil
}

// readJudgements reads lines "question document grade": Cranfield's grades
// run from 1 (a complete answer) to 4 (of minimum interest), -1 for none,
// and become gains 4 to 1, and 0; a file of two columns, or of others'
// layouts "question 0 document grade", judges every document named
// relevant, gain 1.
func readJudgements(path string) (map[int]map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[int]map[string]int{}
	for n, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%s:%d: want a question and a document", path, n+1)
		}
		q, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		doc, gain := f[1], 1
		switch {
		case len(f) == 4 && f[1] == "0": // question 0 document grade
			doc = f[2]
			if g, err := strconv.Atoi(f[3]); err == nil && g <= 0 {
				gain = 0
			}
		case len(f) == 3:
			g, err := strconv.Atoi(f[2])
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
			}
			gain = 0
			if g >= 1 && g <= 4 {
				gain = 5 - g
			}
		}
		if out[q] == nil {
			out[q] = map[string]int{}
		}
		out[q][strings.TrimLeft(doc, "0")] = gain
	}
	return out, nil
}

// judged is how many questions have a document of some gain.
func (c *collection) judged() int {
	n := 0
	for q := range c.questions {
		if relevant(c.grades[q+1]) > 0 {
			n++
		}
	}
	return n
}

func relevant(grades map[string]int) int {
	n := 0
	for _, g := range grades {
		if g > 0 {
			n++
		}
	}
	return n
}

// oneLine is a field's text on one line, its spaces squeezed.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// loadCollection makes board a workspace holding every document as a note
// of the collection's topic, written through MCP by binary.
func loadCollection(ctx context.Context, binary, board string, col *collection) error {
	if out, err := exec.CommandContext(ctx, binary, "init", board).CombinedOutput(); err != nil {
		return fmt.Errorf("init: %w: %s", err, out)
	}
	s, err := startServer(ctx, binary, board)
	if err != nil {
		return err
	}
	defer s.close()
	for _, d := range col.docs {
		digest := strings.TrimSuffix(oneLine(d.fields["T"]), " .")
		if digest == "" {
			digest = "document " + d.id
		}
		body := d.fields["W"]
		if strings.TrimSpace(body) == "" {
			body = digest + "\n"
		}
		if _, err := s.call(ctx, "update_state", map[string]any{"uri": col.noteOf(d.id), "digest": digest,
			"body": body, "expect_version": 0}); err != nil {
			return fmt.Errorf("write document %s: %w", d.id, err)
		}
	}
	return nil
}

// noteOf is the address of a document's note.
func (c *collection) noteOf(id string) string {
	n, _ := strconv.Atoi(id)
	return fmt.Sprintf("%s/d%05d", c.name, n)
}

// searchFigures is what asking a collection's questions measured.
type searchFigures struct {
	ndcg, recall float64
	times        result
}

// askCollection asks every judged question of col on the board through a
// server of binary, with env added to its environment, and scores the
// answers.
func askCollection(ctx context.Context, binary, board string, col *collection, limit int, env ...string) (searchFigures, error) {
	var m searchFigures
	s, err := startServer(ctx, binary, board, env...)
	if err != nil {
		return m, err
	}
	defer s.close()
	asked := 0
	for i, q := range col.questions {
		grades := col.grades[i+1]
		if relevant(grades) == 0 {
			continue
		}
		start := time.Now()
		text, err := s.call(ctx, "search_keys", map[string]any{"q": oneLine(q.fields["W"]), "limit": limit})
		m.times.lat = append(m.times.lat, time.Since(start))
		if err != nil {
			return m, fmt.Errorf("question %s: %w", q.id, err)
		}
		var answer struct {
			Items []struct {
				URI string `json:"uri"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(text), &answer); err != nil {
			return m, fmt.Errorf("question %s: %w: %s", q.id, err, text)
		}
		var found []string
		for _, it := range answer.Items {
			_, key, _ := strings.Cut(strings.TrimPrefix(it.URI, "bb://"), "/"+col.name+"/d")
			found = append(found, strings.TrimLeft(key, "0"))
		}
		ndcg, recall := scoreAnswer(found, grades, limit)
		m.ndcg += ndcg
		m.recall += recall
		asked++
	}
	if asked == 0 {
		return m, errors.New("no question has a judged document")
	}
	m.ndcg /= float64(asked)
	m.recall /= float64(asked)
	return m, nil
}

// scoreAnswer is nDCG (gains as judged, discounted by log2 of the place
// plus one) and recall of the first cut documents found, against grades.
func scoreAnswer(found []string, grades map[string]int, cut int) (ndcg, recall float64) {
	dcg, hits := 0.0, 0
	for i, doc := range found[:min(cut, len(found))] {
		if g := grades[doc]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
			hits++
		}
	}
	var gains []int
	for _, g := range grades {
		if g > 0 {
			gains = append(gains, g)
		}
	}
	slices.SortFunc(gains, func(a, b int) int { return b - a })
	ideal := 0.0
	for i, g := range gains[:min(cut, len(gains))] {
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	return dcg / ideal, float64(hits) / float64(len(gains))
}
