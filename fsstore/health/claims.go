package health

import (
	"fmt"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
)

// Claims on work (README "Claiming work") lapse by themselves, so none is
// an error. health says what a person may want to act on: a claim whose
// holder has not written for longer than claimSilence while it still holds
// (the agent may have died with a long lease: release it by hand), and how
// many claims lapsed more than claimStale ago without the work being done.
const (
	claimSilence = time.Hour
	claimStale   = 24 * time.Hour
)

func (c *checker) checkClaims(now time.Time, r *Report) {
	var claims []index.HeldClaim
	var lastCommit map[string]int64
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		var err error
		claims, lastCommit, err = s.Claims()
		return err
	})
	if err != nil {
		r.Infof("claims: not read (%v)", err)
		return
	}
	held, stale := 0, 0
	for _, cl := range claims {
		until := time.Unix(cl.Until, 0)
		if !now.Before(until) {
			if now.Sub(until) > claimStale {
				stale++
			}
			continue
		}
		held++
		last, wrote := lastCommit[cl.By]
		if silent := now.Sub(time.Unix(last, 0)); !wrote || silent > claimSilence {
			since := "has never committed to the board"
			if wrote {
				since = fmt.Sprintf("has not written for %s", silent.Round(time.Minute))
			}
			r.Add(Finding{Check: "claims", Severity: SeverityWarning, Path: cl.Key + ".md",
				Message: fmt.Sprintf("%s holds the claim until %s and %s", cl.By, until.UTC().Format(time.RFC3339), since),
				Fix: fmt.Sprintf("if %s is gone, release the task: delete the %s and %s lines of the note and commit; "+
					"otherwise it lapses by itself at %s", cl.By, note.KeyClaimedBy, note.KeyClaimUntil, until.UTC().Format(time.RFC3339))})
		}
	}
	r.Infof("claims: %d held, %d lapsed more than a day ago without the work done", held, stale)
}
