package note

import "time"

// A claim says that an agent is working on a note (a task) until a time:
// front-matter fields the server writes for the agent that takes it, and
// that lapse by themselves. A person releases or reassigns a claim by
// editing them; finished work carries done_by and done_at instead.
const (
	KeyClaimedBy  = "claimed_by"
	KeyClaimUntil = "claim_until"
	KeyDoneBy     = "done_by"
	KeyDoneAt     = "done_at"
)

// Claim is a note's claim as its front matter has it.
type Claim struct {
	By     string    // who holds it, "" for no one
	Until  time.Time // when it lapses; zero when unreadable, which counts as lapsed
	DoneBy string    // who finished the work, "" while it is not done
}

// Claim reads the note's claim. A claim_until that is not an RFC 3339 time
// counts as lapsed: a garbled line never holds work forever.
func (n *File) Claim() Claim {
	c := Claim{By: n.Str(KeyClaimedBy), DoneBy: n.Str(KeyDoneBy)}
	if t, err := time.Parse(time.RFC3339, n.Str(KeyClaimUntil)); err == nil {
		c.Until = t
	}
	return c
}

// HeldAt reports whether someone holds the claim at now: it lapses at Until.
func (c Claim) HeldAt(now time.Time) bool { return c.By != "" && now.Before(c.Until) }
