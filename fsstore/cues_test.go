package fsstore

import (
	"os"
	"os/exec"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// cueTests are, for each ranking cue, the tests of what it does: each
// fails with its cue turned off.
var cueTests = map[string][]string{
	cueMeaning:    {"TestSearchByMeaning", "TestMeaningDecidesBetweenEqualWordMatches"},
	cueFeedback:   {"TestFeedbackFindsTheAnswerInTheWordsOfTheBestAnswers"},
	cueKin:        {"TestKinRaisesTheNoteNearTheBestAnswers"},
	cueNeighbours: {"TestSearchFindsTheNoteNextToAHit"},
	cueWhen:       {"TestAWhenQuestionFindsTheNoteThatSaysWhen", "TestAQuestionThatNamesATimeFindsTheNotesOfThen"},
	cueWho:        {"TestAQuestionThatNamesSomeoneFindsWhatTheySaid"},
}

// Every ranking cue that stays has a test that fails when it is off: this
// test binary runs each cue's tests again with the cue turned off
// (BLACKBOARD_SEARCH_OFF), and each must fail. (With every cue on they
// pass, in the run of the package.)
func TestEveryCueHasATestThatFailsWithoutIt(t *testing.T) {
	fixtures.RequireGit(t)
	if len(cuesOff) > 0 {
		t.Skip("cues are turned off in this run")
	}
	for _, cue := range SearchCues {
		tests := cueTests[cue]
		if len(tests) == 0 {
			t.Errorf("the cue %s has no test of its own", cue)
		}
		for _, name := range tests {
			cmd := exec.Command(os.Args[0], "-test.run", "^"+name+"$", "-test.count", "1")
			cmd.Env = append(os.Environ(), "BLACKBOARD_SEARCH_OFF="+cue)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Errorf("%s passes with the cue %s off: it does not test the cue\n%s", name, cue, out)
			}
		}
	}
}
