package health

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// Severities of a Finding.
const (
	// SeverityError: something is broken, or writes or reads will fail.
	SeverityError = "error"
	// SeverityWarning: nothing is lost and the program copes, but a person
	// should look (an uncommitted edit, an index behind the branch).
	SeverityWarning = "warning"
)

// Finding is one problem health found, written for the operator who must act
// on it.
type Finding struct {
	// Check names the check that found it: repository, objects, locks,
	// journal, files, uncommitted, front_matter, digest, blob, index,
	// access, or a caller's own (tool_surface).
	Check    string
	Severity string
	// Path is the workspace-relative, slash-separated file concerned; ""
	// when the finding is about no one file.
	Path    string
	Message string // what is wrong
	Fix     string // what to do about it
}

// Report is what health found. A workspace is sound when there are no
// findings; Info says what was checked or skipped and is never a problem.
type Report struct {
	Findings []Finding
	Info     []string
}

// OK reports whether the workspace is sound.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// Add records a finding.
func (r *Report) Add(f Finding) { r.Findings = append(r.Findings, f) }

// merge appends what o found.
func (r *Report) merge(o *Report) {
	r.Findings = append(r.Findings, o.Findings...)
	r.Info = append(r.Info, o.Info...)
}

// Infof records what was checked or skipped.
func (r *Report) Infof(format string, args ...any) {
	r.Info = append(r.Info, fmt.Sprintf(format, args...))
}

// Options tune the checks. The zero value checks the last 200 commits'
// objects, 200 notes' versions against up to 2,000 commits of history,
// calls a git lock file stale after 5 seconds, and runs `git fsck` (when the
// git CLI is installed) for at most a minute.
type Options struct {
	// Open configures the workspace Check opens.
	Open fsstore.Options
	// RecentCommits is how many first-parent commits, newest first, have
	// every commit and tree object read. 0 means 200.
	RecentCommits int
	// SampleNotes is how many notes (the most recently changed) have their
	// indexed version recounted from git. 0 means 200.
	SampleNotes int
	// VersionCommits bounds the history walk of that recount: past it, only
	// the commits walked are compared. 0 means 2,000 (half a second on a
	// board of 100,000 notes whose recent objects are loose; reindex
	// recounts the whole history).
	VersionCommits int
	// ReparseOneIn: the front matter of a note the derived index read from
	// the same blob, and found sound, is taken from the index; one in
	// ReparseOneIn of those notes, at random, is parsed again to check the
	// index's reading. 0 means 50; 1 parses every note.
	ReparseOneIn int
	// LockAge is the age after which a git lock file counts as left behind
	// by a dead process. 0 means 5 seconds.
	LockAge time.Duration
	// Progress, when set, hears what is being checked, as it starts: a
	// check of 100,000 notes takes seconds.
	Progress func(what string)
	// FsckTimeout bounds `git fsck --connectivity-only`. 0 means one minute;
	// negative skips it.
	FsckTimeout time.Duration
}

func (o *Options) defaults() {
	if o.RecentCommits <= 0 {
		o.RecentCommits = 200
	}
	if o.SampleNotes <= 0 {
		o.SampleNotes = 200
	}
	if o.ReparseOneIn <= 0 {
		o.ReparseOneIn = 50
	}
	if o.VersionCommits <= 0 {
		o.VersionCommits = 2_000
	}
	if o.Progress == nil {
		o.Progress = func(string) {}
	}
	if o.LockAge <= 0 {
		o.LockAge = 5 * time.Second
	}
	if o.FsckTimeout == 0 {
		o.FsckTimeout = time.Minute
	}
}

// maxFindingsPerCheck keeps a badly broken workspace's report readable: past
// it, one more finding says how many were left out.
const maxFindingsPerCheck = 50

// Fixes shared by several findings.
const (
	fixObjects = "the repository is damaged: copy the missing or corrupt objects from another clone " +
		"(git fetch from a remote that has them, or copy .git/objects from a backup); `git fsck --full` lists every bad object"
	fixReindex      = "run `blackboard-mcp reindex`: the index is derived from git, so rebuilding it loses nothing"
	fixFrontMatter  = "edit the file: a line ---, then YAML keys (at least `digest:`, one line saying what the note holds; no anchors or aliases), then a line ---; then commit it (git commit), or save it while a server runs and it is committed for you"
	fixUncommitted  = "a running server commits it as your edit within a moment (it watches the files), and so does any blackboard-mcp put; or commit it yourself (git add and git commit); to drop the edit, git restore it"
	fixAccess       = "correct the entry by hand, or recreate the agent with `blackboard-mcp token revoke NAME` and `blackboard-mcp token add NAME --read TOPICS --write TOPICS`"
	fixJournalLater = "open the workspace once (any blackboard-mcp verb, e.g. `blackboard-mcp ls`) or make any write (`blackboard-mcp put`): either finishes it from the journal"
)

// finish orders the findings by check and path and caps each check's count.
func (r *Report) finish() {
	order := map[string]int{}
	for i, c := range []string{"repository", "objects", "locks", "journal", "files", "uncommitted",
		"front_matter", "digest", "blob", "index", "access"} {
		order[c] = i + 1
	}
	rank := func(c string) int {
		if n, ok := order[c]; ok {
			return n
		}
		return len(order) + 1 // a caller's own checks come last
	}
	seen := map[Finding]bool{}
	var out []Finding
	for _, f := range r.Findings {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := rank(out[i].Check), rank(out[j].Check); a != b {
			return a < b
		}
		return out[i].Path < out[j].Path
	})
	count := map[string]int{}
	capped := out[:0]
	for _, f := range out {
		count[f.Check]++
		if count[f.Check] <= maxFindingsPerCheck {
			capped = append(capped, f)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(count)) {
		if n := count[c]; n > maxFindingsPerCheck {
			capped = append(capped, Finding{Check: c, Severity: SeverityWarning,
				Message: fmt.Sprintf("%d more %s findings not shown", n-maxFindingsPerCheck, c),
				Fix:     "fix the ones shown and run health again"})
		}
	}
	r.Findings = capped
}
