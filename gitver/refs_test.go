package gitver_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// noLock fails the test if the branch's lock file exists.
func noLock(t testing.TB, r *gitver.Repo) {
	t.Helper()
	if _, err := os.Stat(r.LockPath()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the update (stat: %v)", r.LockPath(), err)
	}
}

// TestUpdateBranchCompareAndSwap proves UpdateBranch moves the branch only
// from the value the caller saw: from any other value it fails with
// ErrBranchMoved, and git still sees the branch where it was, with no lock
// file left behind. A successful move is recorded in git's reflog with its
// reason.
func TestUpdateBranchCompareAndSwap(t *testing.T) {
	fixtures.RequireGit(t)
	tests := []struct {
		name    string
		unborn  bool                                 // the branch has no commit yet
		old     func(c1, c2 gitver.Hash) gitver.Hash // the value the caller believes the branch has
		wantErr error
	}{
		{"from the head", false, func(_, c2 gitver.Hash) gitver.Hash { return c2 }, nil},
		{"from an older commit", false, func(c1, _ gitver.Hash) gitver.Hash { return c1 }, gitver.ErrBranchMoved},
		{"from zero on a born branch", false, func(_, _ gitver.Hash) gitver.Hash { return gitver.ZeroHash }, gitver.ErrBranchMoved},
		{"from zero on an unborn branch", true, func(_, _ gitver.Hash) gitver.Hash { return gitver.ZeroHash }, nil},
		{"from a commit on an unborn branch", true, func(c1, _ gitver.Hash) gitver.Hash { return c1 }, gitver.ErrBranchMoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, dir := newRepo(t)
			c1 := commitFiles(t, r, gitver.ZeroHash, "one\n", map[string]string{"a.md": "1\n"})
			c2 := commitFiles(t, r, c1, "two\n", map[string]string{"a.md": "2\n"})
			before := gitver.ZeroHash
			if !tt.unborn {
				for _, step := range [][2]gitver.Hash{{gitver.ZeroHash, c1}, {c1, c2}} {
					if err := r.UpdateBranch(step[0], step[1], agent, "setup"); err != nil {
						t.Fatal(err)
					}
				}
				before = c2
			}
			old := tt.old(c1, c2)
			next := commitFiles(t, r, old, "next\n", map[string]string{"b.md": "next\n"})

			err := r.UpdateBranch(old, next, agent, "commit: next")
			if !errors.Is(err, tt.wantErr) || (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("UpdateBranch(%s, %s) = %v, want %v", old.Short(), next.Short(), err, tt.wantErr)
			}
			want := before
			if tt.wantErr == nil {
				want = next
			}
			if got, _ := r.Head(); got != want {
				t.Errorf("Head() = %s, want %s", got, want)
			}
			if want.IsZero() {
				if fixtures.GitCmd(dir, "rev-parse", "--verify", "--quiet", "refs/heads/main").Run() == nil {
					t.Errorf("git rev-parse finds refs/heads/main, want it unborn")
				}
			} else if got := revParse(t, dir, "refs/heads/main"); got != want {
				t.Errorf("git rev-parse main = %s, want %s", got, want)
			}
			noLock(t, r)
			if tt.wantErr == nil {
				top := strings.SplitN(fixtures.GitOutput(t, dir, "reflog", "show", "--format=%H %gs", "refs/heads/main"), "\n", 2)[0]
				if want := next.String() + " commit: next"; top != want {
					t.Errorf("git reflog: top entry %q, want %q", top, want)
				}
			}
			fsck(t, dir)
		})
	}
}

// TestUpdateBranchLogsHEADOnlyWhenCheckedOut proves that a move of the
// branch shows in HEAD's reflog only while HEAD names the branch, as with
// git's own commands: `git reflog` tells a person what they had checked
// out, and a move made while they were on another branch is not among it.
func TestUpdateBranchLogsHEADOnlyWhenCheckedOut(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	c1 := commitFiles(t, r, gitver.ZeroHash, "one\n", map[string]string{"a.md": "1\n"})
	if err := r.UpdateBranch(gitver.ZeroHash, c1, agent, "blackboard: one"); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "checkout", "-q", "-b", "side")
	c2 := commitFiles(t, r, c1, "two\n", map[string]string{"a.md": "2\n"})
	if err := r.UpdateBranch(c1, c2, agent, "blackboard: two"); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "checkout", "-q", "main")
	c3 := commitFiles(t, r, c2, "three\n", map[string]string{"a.md": "3\n"})
	if err := r.UpdateBranch(c2, c3, agent, "blackboard: three"); err != nil {
		t.Fatal(err)
	}
	got := fixtures.GitOutput(t, dir, "reflog", "show", "--format=%gs", "HEAD")
	want := "blackboard: three\ncheckout: moving from side to main\ncheckout: moving from main to side\nblackboard: one\n"
	if got != want {
		t.Errorf("HEAD's reflog:\n%s\nwant:\n%s", got, want)
	}
	if got := fixtures.GitOutput(t, dir, "reflog", "show", "--format=%gs", "main"); !strings.HasPrefix(got, "blackboard: three\nblackboard: two\n") {
		t.Errorf("main's reflog:\n%s\nwant both moves", got)
	}
}

// TestUpdateBranchPackedRef proves UpdateBranch reads a branch that exists
// only in packed-refs (after `git pack-refs`, which every `git gc` runs):
// a rejected swap leaves no loose ref behind (go-git leaves an empty one), a
// successful one shadows the packed value, and git agrees at every step.
func TestUpdateBranchPackedRef(t *testing.T) {
	fixtures.RequireGit(t)
	dir := t.TempDir()
	gitInit(t, dir)
	writeFile(t, dir, "person.md", "by hand\n")
	fixtures.Git(t, dir, "add", "person.md")
	fixtures.Git(t, dir, "commit", "--quiet", "-m", "by a person")
	fixtures.Git(t, dir, "pack-refs", "--all")
	r := openRepo(t, dir)
	loose := filepath.Join(r.GitDir(), "refs", "heads", "main")
	if _, err := os.Stat(loose); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after git pack-refs --all, %s exists (stat: %v); the test needs a packed-only branch", loose, err)
	}

	c1 := revParse(t, dir, "main")
	if got, err := r.Head(); err != nil || got != c1 {
		t.Fatalf("Head() = %s, %v; want the packed value %s", got, err, c1)
	}

	next := commitFiles(t, r, c1, "agent\n", map[string]string{"agent.md": "by an agent\n"})
	if err := r.UpdateBranch(next, next, agent, "wrong"); !errors.Is(err, gitver.ErrBranchMoved) {
		t.Fatalf("UpdateBranch from a wrong value = %v, want ErrBranchMoved", err)
	}
	if _, err := os.Stat(loose); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rejected swap on a packed branch left %s (stat: %v)", loose, err)
	}
	if got := revParse(t, dir, "main"); got != c1 {
		t.Errorf("git rev-parse main after a rejected swap = %s, want %s", got, c1)
	}
	noLock(t, r)

	if err := r.UpdateBranch(c1, next, agent, "commit: agent"); err != nil {
		t.Fatalf("UpdateBranch from the packed value: %v", err)
	}
	for _, pack := range []bool{false, true} {
		if pack {
			fixtures.Git(t, dir, "pack-refs", "--all")
		}
		if got := revParse(t, dir, "main"); got != next {
			t.Errorf("git rev-parse main (packed again: %v) = %s, want %s", pack, got, next)
		}
		if got, err := r.Head(); err != nil || got != next {
			t.Errorf("Head() (packed again: %v) = %s, %v; want %s", pack, got, err, next)
		}
	}

	fixtures.Git(t, dir, "commit", "--quiet", "--allow-empty", "-m", "a person again")
	if got, want := revParse(t, dir, "main^"), next; got != want {
		t.Errorf("git commit after the agent's commit: parent = %s, want %s", got, want)
	}
	if got, want := mustHead(t, r), revParse(t, dir, "main"); got != want {
		t.Errorf("Head() = %s, want git's %s", got, want)
	}
	fsck(t, dir)
}

func mustHead(t testing.TB, r *gitver.Repo) gitver.Hash {
	t.Helper()
	h, err := r.Head()
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h
}

// TestUpdateBranchWaitsForGit proves UpdateBranch respects the lock of a
// running git process: while `git update-ref --stdin` holds refs/heads/main
// in a prepared transaction, UpdateBranch waits; once git commits, it sees
// the branch git moved and fails with ErrBranchMoved instead of overwriting
// git's commit.
func TestUpdateBranchWaitsForGit(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	c1 := commitAndMove(t, r, "one", map[string]string{"a.md": "1\n"})
	byGit := commitFiles(t, r, c1, "git's\n", map[string]string{"git.md": "git\n"})
	byUs := commitFiles(t, r, c1, "ours\n", map[string]string{"ours.md": "ours\n"})

	cmd := fixtures.GitCmd(dir, "update-ref", "--stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewReader(stdout)
	if _, err := io.WriteString(stdin, "start\nupdate refs/heads/main "+byGit.String()+" "+c1.String()+"\nprepare\n"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"start: ok\n", "prepare: ok\n"} {
		if line, err := out.ReadString('\n'); err != nil || line != want {
			t.Fatalf("git update-ref --stdin said %q, %v; want %q", line, err, want)
		}
	}
	if _, err := os.Stat(r.LockPath()); err != nil {
		t.Fatalf("git's prepared transaction holds no %s: %v", r.LockPath(), err)
	}

	done := make(chan error, 1)
	go func() { done <- r.UpdateBranch(c1, byUs, agent, "commit: ours") }()
	select {
	case err := <-done:
		t.Fatalf("UpdateBranch returned %v while git held the branch lock", err)
	case <-time.After(150 * time.Millisecond):
	}
	if _, err := io.WriteString(stdin, "commit\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || line != "commit: ok\n" {
		t.Fatalf("git update-ref --stdin said %q, %v; want commit: ok", line, err)
	}
	if err := <-done; !errors.Is(err, gitver.ErrBranchMoved) {
		t.Errorf("UpdateBranch after git moved the branch = %v, want ErrBranchMoved", err)
	}
	if got := revParse(t, dir, "main"); got != byGit {
		t.Errorf("git rev-parse main = %s, want git's commit %s", got, byGit)
	}
	retried := commitFiles(t, r, byGit, "ours, rebuilt\n", map[string]string{"ours.md": "ours\n"})
	if err := r.UpdateBranch(byGit, retried, agent, "commit: ours, rebuilt"); err != nil {
		t.Fatalf("UpdateBranch from git's commit: %v", err)
	}
	if got, want := fixtures.GitOutput(t, dir, "log", "--format=%s", "main"), "ours, rebuilt\ngit's\none\n"; got != want {
		t.Errorf("git log main:\n%s\nwant:\n%s", got, want)
	}
	noLock(t, r)
}

// TestUpdateBranchLockTimeout proves UpdateBranch gives up with
// ErrBranchLocked on a lock file that nobody releases, and leaves that lock
// (it belongs to someone else) and the branch untouched.
func TestUpdateBranchLockTimeout(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel() // it waits out the lock for seconds
	r, dir := newRepo(t)
	c1 := commitAndMove(t, r, "one", map[string]string{"a.md": "1\n"})
	c2 := commitFiles(t, r, c1, "two\n", map[string]string{"a.md": "2\n"})
	const foreign = "0123456789012345678901234567890123456789\n"
	if err := os.WriteFile(r.LockPath(), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := r.UpdateBranch(c1, c2, agent, "commit: two")
	waited := time.Since(start)
	if !errors.Is(err, gitver.ErrBranchLocked) {
		t.Fatalf("UpdateBranch under a held lock = %v, want ErrBranchLocked", err)
	}
	if waited < time.Second {
		t.Errorf("UpdateBranch gave up after %v; it should wait for the lock's owner", waited)
	}
	if got, err := os.ReadFile(r.LockPath()); err != nil || string(got) != foreign {
		t.Errorf("the foreign lock now holds %q, %v; want it untouched", got, err)
	}
	if got := revParse(t, dir, "main"); got != c1 {
		t.Errorf("git rev-parse main = %s, want %s", got, c1)
	}
}

// TestRemoveStaleLock proves RemoveStaleLock removes a branch lock only when
// it is what a writer of this program that died left there (the commit it
// intended, or nothing for over a second) and keeps any other lock.
func TestRemoveStaleLock(t *testing.T) {
	fixtures.RequireGit(t)
	t.Parallel() // two cases wait for an empty lock to age
	intended := gitver.BlobHash([]byte("stands in for a commit"))
	other := gitver.BlobHash([]byte("someone else's commit"))
	tests := []struct {
		name        string
		content     *string       // nil: no lock file
		age         time.Duration // how old the lock's mtime is
		fillAfter   time.Duration // >0: its owner writes other into the empty lock after this
		wantRemoved bool
	}{
		{name: "no lock", content: nil},
		{name: "the intended commit", content: ptr(intended.String() + "\n"), wantRemoved: true},
		{name: "the intended commit without newline", content: ptr(intended.String()), wantRemoved: true},
		{name: "another commit", content: ptr(other.String() + "\n")},
		{name: "not a hash", content: ptr("garbage\n")},
		{name: "empty and old", content: ptr(""), age: time.Minute, wantRemoved: true},
		{name: "empty and fresh, never written", content: ptr(""), wantRemoved: true},
		{name: "empty and fresh, then written by its owner", content: ptr(""), fillAfter: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, _ := newRepo(t)
			lock := r.LockPath()
			if tt.content != nil {
				if err := os.WriteFile(lock, []byte(*tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
				if tt.age > 0 {
					old := time.Now().Add(-tt.age)
					if err := os.Chtimes(lock, old, old); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.fillAfter > 0 {
				timer := time.AfterFunc(tt.fillAfter, func() { _ = os.WriteFile(lock, []byte(other.String()+"\n"), 0o644) })
				defer timer.Stop()
			}
			removed, err := r.RemoveStaleLock(intended)
			if err != nil || removed != tt.wantRemoved {
				t.Errorf("RemoveStaleLock = %v, %v; want %v, nil", removed, err, tt.wantRemoved)
			}
			_, statErr := os.Stat(lock)
			exists := statErr == nil
			if wantExists := tt.content != nil && !tt.wantRemoved; exists != wantExists {
				t.Errorf("lock exists = %v, want %v", exists, wantExists)
			}
		})
	}
}

// TestRemoveStaleIndexLock proves the index lock is removed only when it is
// not older than the moment the caller's dead writer started.
func TestRemoveStaleIndexLock(t *testing.T) {
	since := time.Now()
	tests := []struct {
		name        string
		exists      bool
		mtime       time.Time
		wantRemoved bool
	}{
		{"no lock", false, time.Time{}, false},
		{"older than the writer: someone else's", true, since.Add(-time.Hour), false},
		{"newer than the writer: its own", true, since.Add(time.Second), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newRepo(t)
			lock := r.IndexLockPath()
			if tt.exists {
				if err := os.WriteFile(lock, []byte("partial index"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(lock, tt.mtime, tt.mtime); err != nil {
					t.Fatal(err)
				}
			}
			removed, err := r.RemoveStaleIndexLock(since)
			if err != nil || removed != tt.wantRemoved {
				t.Errorf("RemoveStaleIndexLock = %v, %v; want %v, nil", removed, err, tt.wantRemoved)
			}
			_, statErr := os.Stat(lock)
			if exists, want := statErr == nil, tt.exists && !tt.wantRemoved; exists != want {
				t.Errorf("index lock exists = %v, want %v", exists, want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// LastMoveBy finds the caller's newest move in the branch's reflog, however
// long the reflog, reading only its end; RecentBranchMoves reads the moves
// of that end.
func TestLastMoveBy(t *testing.T) {
	dir := t.TempDir()
	if err := gitver.Init(dir, "main"); err != nil {
		t.Fatal(err)
	}
	r, err := gitver.Open(dir, gitver.Options{NoSync: true, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	hash := func(i int) string { return fmt.Sprintf("%040x", i) }
	line := func(i int, msg string) string {
		return hash(i) + " " + hash(i+1) + " Ada Lovelace <ada@example.com> 1700000000 +0100\t" + msg + "\n"
	}
	logPath := filepath.Join(dir, ".git", "logs", "refs", "heads", "main")
	var many []string
	for i := range 2000 { // about 200 KB
		many = append(many, line(i, "commit: a person's commit"))
	}
	for _, tt := range []struct {
		name  string
		lines []string
		found bool
		own   int // the own move's old hash
		moves int // what RecentBranchMoves returns
	}{
		{"no reflog", nil, false, 0, 0},
		{"own last", []string{line(1, "commit: x"), line(2, "blackboard: update a v1")}, true, 2, 2},
		{"moves after own", []string{line(1, "blackboard: update a v1"), line(2, "reset: moving to HEAD"), line(3, "commit: y")}, true, 1, 3},
		{"own deep in a long reflog", append(append([]string{line(7, "blackboard: old")}, many[:300]...), line(9, "reset: moving to HEAD~1")),
			true, 7, 302},
		{"own beyond the tail read", append(append([]string{line(7, "blackboard: old")}, many...), line(9, "reset: moving to HEAD~1")),
			false, 0, -1},
	} {
		os.Remove(logPath)
		if tt.lines != nil {
			if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath, []byte(strings.Join(tt.lines, "")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		own, found, err := r.LastMoveBy("blackboard: ")
		if err != nil || found != tt.found || found && own.Old.String() != hash(tt.own) {
			t.Errorf("%s: found %v (%s), %v; want %v (from %s)", tt.name, found, own.Old, err, tt.found, hash(tt.own))
		}
		if _, offset := own.Who.When.Zone(); found && (own.Who.Name != "Ada Lovelace" || own.Who.Email != "ada@example.com" ||
			own.Who.When.Unix() != 1700000000 || offset != 3600) {
			t.Errorf("%s: the move was made by %+v", tt.name, own.Who)
		}
		moves, err := r.RecentBranchMoves()
		if err != nil || tt.moves >= 0 && len(moves) != tt.moves {
			t.Errorf("%s: %d recent moves, %v; want %d", tt.name, len(moves), err, tt.moves)
		}
	}
}

// Redact hides the credentials a URL carries wherever it appears in what
// git says, and leaves everything else as it is.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://alice:ghp_secret@github.com/team/board.git":                   "https://***@github.com/team/board.git",
		"fatal: unable to access 'https://x-token:abc@host/b.git/': timed out": "fatal: unable to access 'https://***@host/b.git/': timed out",
		"git@github.com:team/board.git":                                        "git@github.com:team/board.git",
		"ssh://git@example.com/board.git":                                      "ssh://***@example.com/board.git",
		"file:///srv/git/board.git":                                            "file:///srv/git/board.git",
	} {
		if got := gitver.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
