package fsstore

import (
	"os"
	"strings"
)

// Search's ranking cues can be turned off one by one, to measure what each
// buys on a test collection and what it costs (blackboard-bench search
// --off): BLACKBOARD_SEARCH_OFF names them, comma-separated, read as the
// process starts. A board in use never sets it.
const (
	cueMeaning    = "meaning"    // notes found by what they mean, fused with the words' (searchByMeaning)
	cueFeedback   = "feedback"   // the words of the best long notes fed back (feedBack)
	cueKin        = "kin"        // each best long note moved toward its kin's scores (kin)
	cueNeighbours = "neighbours" // the numbered neighbours of short notes (withNeighbours)
	cueWhen       = "when"       // a question that asks when, or names a time (questionCues.raise)
	cueWho        = "who"        // a question that names someone (questionCues.raise)
)

// SearchCues are the cues BLACKBOARD_SEARCH_OFF may name.
var SearchCues = []string{cueMeaning, cueFeedback, cueKin, cueNeighbours, cueWhen, cueWho}

var cuesOff = func() map[string]bool {
	off := map[string]bool{}
	for _, name := range strings.Split(os.Getenv("BLACKBOARD_SEARCH_OFF"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			off[name] = true
		}
	}
	return off
}()

// cueOn reports whether a ranking cue takes part.
func cueOn(name string) bool { return !cuesOff[name] }
