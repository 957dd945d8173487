package health

import (
	"fmt"
	"maps"
	"slices"
	"strings"
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

// checkWaits names each cycle of depends_on links that hold tasks back:
// none of its tasks is ever offered as open work until one of them is
// done by hand or a link of the cycle is removed.
func (c *checker) checkWaits(r *Report) {
	var waits map[string][]string
	err := c.ws.ReadIndex(func(s *index.Snapshot) error {
		var err error
		waits, err = s.Waits()
		return err
	})
	if err != nil {
		r.Infof("dependencies: not read (%v)", err)
		return
	}
	for _, cycle := range cycles(waits) {
		r.Add(Finding{Check: "dependencies", Severity: SeverityWarning, Path: cycle[0] + ".md",
			Message: fmt.Sprintf("the tasks %s depend on each other in a cycle, so none of them is offered as open work",
				strings.Join(append(cycle, cycle[0]), " -> ")),
			Fix: "remove one depends_on link of the cycle from its note's links: in its front matter, or finish one of the tasks"})
	}
}

// cycles returns one cycle through each group of notes that reach each
// other by waits (its strongly connected components of two or more, or
// one that waits on itself), each starting at its least address, in the
// order of those addresses.
func cycles(waits map[string][]string) [][]string {
	// Tarjan's algorithm.
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var groups [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range waits[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] != index[v] {
			return
		}
		var group []string
		for {
			w := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			onStack[w] = false
			group = append(group, w)
			if w == v {
				break
			}
		}
		if len(group) > 1 || slices.Contains(waits[v], v) {
			groups = append(groups, group)
		}
	}
	for _, v := range slices.Sorted(maps.Keys(waits)) {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	var out [][]string
	for _, g := range groups {
		in := map[string]bool{}
		for _, v := range g {
			in[v] = true
		}
		// From the least address, the least next one in the group, until
		// the walk comes back to a note it passed: every note of a strongly
		// connected group has a next one in it.
		start := slices.Min(g)
		cycle := []string{start}
		at := map[string]int{start: 0}
		for v := start; ; {
			next := ""
			for _, w := range waits[v] {
				if in[w] && (next == "" || w < next) {
					next = w
				}
			}
			if i, passed := at[next]; passed {
				cycle = cycle[i:]
				break
			}
			at[next] = len(cycle)
			cycle = append(cycle, next)
			v = next
		}
		out = append(out, cycle)
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}
