package fsstore

import (
	"math"
	"sort"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/meaning"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// A question names a thing in its own words, and the notes that answer it
// often in others: "aeroelastic models of heated aircraft" against "thermal
// stresses in wings". The best answers to a question show those other
// words. Feedback takes the words the best notes use often and few notes
// hold (a relevance model, as RM3 does), and ranks the notes found again by
// those words as well; then each of the best notes takes a share of the
// scores of those nearest it in meaning (kin).
//
// It only reorders the notes the question found: a word fed back brings no
// note of its own, so a question that finds nothing still finds nothing.
// It takes its words from long notes only, and runs only when at least
// half of the best are long: a turn of a conversation holds too few words to say what a
// question is about (feedback from every note took LoCoMo's recall@5 from
// 0.56 to 0.52), and there the turns next to a hit do that work
// (withNeighbours).
//
// Measured through MCP, nDCG@10 of Cranfield / CISI / MEDLINE / CACM:
// before, 0.374 / 0.336 / 0.700 / 0.475; words fed back, 0.393 / 0.354 /
// 0.707 / 0.479; and compounds read as English, 0.397 / 0.356 / 0.701 /
// 0.484; and kin, 0.402 / 0.355 / 0.712 / 0.479 (the compounds went since:
// docs/search.md). LoCoMo's
// recall@5 / recall@10 / nDCG@10: 0.632 / 0.724 / 0.563 before, 0.633 /
// 0.726 / 0.563 after. Fifteen or twenty words, ten notes, or a share of
// 0.2 or 0.5 ranked Cranfield 0.397-0.404 and no better elsewhere; words
// held by up to a tenth of the notes instead of a fifth, 0.399.
const (
	feedbackNotes   = 8   // the best notes whose words are fed back
	feedbackLong    = 4   // how many of them must be long (shortNote) for any feedback
	feedbackWeighed = 20  // the words the best notes use most, whose notes are counted
	feedbackWords   = 10  // how many of those are fed back
	feedbackShare   = 0.3 // a word fed back weighs this much of a word of the question
	feedbackRare    = 0.2 // the most notes, a share of all, that may hold a word fed back
	// feedbackNoteWords bounds the words read of a note: its first few
	// thousand say what it is about (as its vector's do, meaning.Embed).
	feedbackNoteWords = 4000
	// feedbackMostNotes bounds the notes counted for a word: a tenth of
	// the postings a question's words may read (wordBudget) on a large
	// board, where a word fed back is held by a few hundred notes at most.
	feedbackMostNotes = wordBudget / 10
)

// feedBack raises the words' score of the notes in order that the question
// found by its words (terms, its stop words left out) by the words the best
// long notes use, and fuses their scores again; then kin.
func (v *View) feedBack(s *index.Snapshot, terms []index.Term, order []*fused) error {
	var found []string
	for _, f := range order {
		if f.lex > 0 {
			found = append(found, f.hit.Key)
		}
	}
	if len(found) == 0 {
		return nil // the words ranked nothing (too many notes hold them): nothing to reorder by words
	}
	sources, err := v.longSources(s, bestKnown(order, feedbackNotes))
	if err != nil || len(sources) < feedbackLong {
		return err
	}
	if cueOn(cueFeedback) {
		weight, spelled, err := weighStems(sources, terms)
		if err != nil {
			return err
		}
		words, err := rareOfWeighed(s, weight, spelled)
		if err != nil {
			return err
		}
		scores, err := s.WordScores(words, found)
		if err != nil {
			return err
		}
		for _, f := range order {
			f.lex += feedbackShare * scores[f.hit.Key]
		}
		fuse(order)
	}
	if !cueOn(cueKin) {
		return nil
	}
	return v.kin(s, order)
}

// source is the words of one of the best long notes, and its rank among
// the best.
type source struct {
	rank  int
	words []string
}

// longSources reads the words of the long notes among best (best first);
// a note that cannot be read feeds nothing back.
func (v *View) longSources(s *index.Snapshot, best []*fused) ([]source, error) {
	keys := make([]string, len(best))
	for i, f := range best {
		keys[i] = f.hit.Key
	}
	rows, err := s.Notes(keys)
	if err != nil {
		return nil, err
	}
	var sources []source
	for rank, k := range keys {
		n, ok := rows[k]
		if !ok || !n.Present || n.Bytes <= shortNote {
			continue
		}
		f, content, err := v.w.reader.loadNote(n)
		if err != nil {
			continue
		}
		words := note.LowerWords(f.Str(note.KeyDigest) + "\n" + content)
		sources = append(sources, source{rank, words[:min(len(words), feedbackNoteWords)]})
	}
	return sources, nil
}

// weighStems weighs each stem of the sources' words but the question's
// (terms), stop words and numbers: its share of each note's words, by the
// note's rank. spelled is how often each stem is written as each word, to
// search it by the word it is written as most.
func weighStems(sources []source, terms []index.Term) (weight map[string]float64, spelled map[string]map[string]int, err error) {
	var asked []string
	for _, t := range terms {
		asked = append(asked, note.LowerWords(t.Text)...)
	}
	distinct := map[string]bool{}
	for _, src := range sources {
		for _, w := range src.words {
			distinct[w] = true
		}
	}
	all := make([]string, 0, len(distinct)+len(asked))
	for w := range distinct {
		all = append(all, w)
	}
	stems, err := index.Stems(append(all, asked...))
	if err != nil {
		return nil, nil, err
	}
	askedStem := map[string]bool{}
	for _, w := range asked {
		askedStem[stems[w]] = true
	}
	weight, spelled = map[string]float64{}, map[string]map[string]int{}
	for _, src := range sources {
		counts := map[string]int{}
		for _, w := range src.words {
			stem := stems[w]
			if stem == "" || askedStem[stem] || meaning.IsStopWord(w) || isDigits(w) {
				continue
			}
			counts[stem]++
			if spelled[stem] == nil {
				spelled[stem] = map[string]int{}
			}
			spelled[stem][w]++
		}
		for stem, c := range counts {
			weight[stem] += float64(c) / float64(len(src.words)) / float64(src.rank+1)
		}
	}
	return weight, spelled, nil
}

// rareOfWeighed picks the words to feed back: of the feedbackWeighed
// weighed most, those few notes hold, by weight times how rare they are
// (idf), within the postings the question's own words may read. Counting
// the notes that hold a word reads its postings, so only the likeliest are
// counted.
func rareOfWeighed(s *index.Snapshot, weight map[string]float64, spelled map[string]map[string]int) ([]string, error) {
	type fed struct {
		word  string
		notes int
		score float64
	}
	byScore := func(fs []fed) {
		sort.Slice(fs, func(i, j int) bool {
			if fs[i].score != fs[j].score {
				return fs[i].score > fs[j].score
			}
			return fs[i].word < fs[j].word
		})
	}
	var weighed []fed
	for stem, w := range weight {
		weighed = append(weighed, fed{word: mostSpelled(spelled[stem]), score: w})
	}
	byScore(weighed)
	weighed = weighed[:min(len(weighed), feedbackWeighed)]
	notes, err := s.NoteCount()
	if err != nil {
		return nil, err
	}
	most := min(int(feedbackRare*float64(notes)), feedbackMostNotes)
	var rare []fed
	for _, f := range weighed {
		if f.notes, err = s.NotesHolding(f.word, most); err != nil {
			return nil, err
		}
		if f.notes < 2 || f.notes > most {
			continue // a word of one note, or of too many to tell them apart
		}
		f.score *= math.Log(float64(notes) / float64(f.notes))
		rare = append(rare, f)
	}
	byScore(rare)
	var words []string
	postings := 0
	for _, f := range rare {
		if len(words) == feedbackWords {
			break
		}
		if postings+f.notes > wordBudget {
			continue
		}
		postings += f.notes
		words = append(words, f.word)
	}
	return words, nil
}

// bestKnown returns the at most n notes of order with the highest scores
// whose rows were read, best first.
func bestKnown(order []*fused, n int) []*fused {
	best := make([]*fused, 0, len(order))
	for _, f := range order {
		if f.known {
			best = append(best, f)
		}
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].hit.Score > best[j].hit.Score })
	return best[:min(len(best), n)]
}

// mostSpelled is the word written most often, the first in order of those
// written as often.
func mostSpelled(counts map[string]int) string {
	best, n := "", 0
	for w, c := range counts {
		if c > n || c == n && w < best {
			best, n = w, c
		}
	}
	return best
}

func isDigits(w string) bool {
	for _, r := range w {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// An answer is seldom alone: a note like the best answers is likelier one
// than a note like none of them (score regularization). Each of the best
// long notes takes a share of the scores of the long notes nearest it in
// meaning among them. A short note's vector says too little to be kin.
const (
	kinNotes = 30  // the best notes that take part
	kinNear  = 5   // the nearest of them a note takes from
	kinShare = 0.3 // of a note's score, what its kin give
)

// kin moves the scores of the best long notes of order toward their kin's.
func (v *View) kin(s *index.Snapshot, order []*fused) error {
	best := bestKnown(order, kinNotes)
	keys := make([]string, len(best))
	for i, f := range best {
		keys[i] = f.hit.Key
	}
	rows, err := s.Notes(keys)
	if err != nil {
		return err
	}
	vecs := v.w.vectors.Of(keys)
	for k := range vecs {
		if rows[k].Bytes <= shortNote {
			delete(vecs, k)
		}
	}
	scores := kinScores(best, vecs)
	for i, f := range best {
		f.hit.Score = scores[i]
	}
	return nil
}

// kinScores returns the score of each of best moved kinShare of the way to
// the mean of its kinNear nearest's scores, weighted by their cosines; a
// note without a vector (in vecs) keeps its score and gives none.
func kinScores(best []*fused, vecs map[string]meaning.Vector) []float64 {
	type near struct {
		cos, score float64
	}
	scores := make([]float64, len(best))
	for i, a := range best {
		scores[i] = a.hit.Score
		va, ok := vecs[a.hit.Key]
		if !ok {
			continue
		}
		var nears []near
		for j, b := range best {
			if vb, ok := vecs[b.hit.Key]; ok && j != i {
				if c := meaning.Cosine(meaning.Dot(&va, &vb)); c > 0 {
					nears = append(nears, near{c, b.hit.Score})
				}
			}
		}
		sort.Slice(nears, func(x, y int) bool { return nears[x].cos > nears[y].cos })
		var sum, weight float64
		for _, n := range nears[:min(len(nears), kinNear)] {
			sum += n.cos * n.score
			weight += n.cos
		}
		if weight > 0 {
			scores[i] = (1-kinShare)*a.hit.Score + kinShare*sum/weight
		}
	}
	return scores
}
