package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// Two losses people reported, reproduced and counted: a person's in-place
// saves racing agents' appends (a slow save that pauses half way, a file
// opened before an agent's write and written through after it), and a
// person stepping onto a new branch and back in a tight loop while two
// servers write. The long runs (15 s, 10 s) need BLACKBOARD_STRESS=1; the
// short ones run by default.
//
// Before the board kept a displaced file under the stat taken before its
// content was compared, replaced a note's file with a person's displaced
// text the way a write does (keeping the file it replaced), and committed
// each displaced file's text before taking the next, the saves racing
// appends lost about 10% of the person's saves (330 of 2,945 in 10 runs of
// 15 s, in no git object) with all three kinds of save, and about 1 in
// 1,600 slow in-place saves alone (BLACKBOARD_PERSON_SAVES=slow). The
// checkout loop did not get stuck in 9 runs.

// stressOn reports whether the long runs were asked for.
func stressOn() bool { return os.Getenv("BLACKBOARD_STRESS") == "1" }

// TestPersonSavesRacingAppendsStress: 15 s of two servers appending to one
// note while a person saves it in place, slowly or through a file opened
// before an agent's write. Every save's marker must end up in git.
func TestPersonSavesRacingAppendsStress(t *testing.T) {
	if !stressOn() {
		t.Skip("a 15 s run; set BLACKBOARD_STRESS=1")
	}
	personSavesRacingAppends(t, 15*time.Second)
}

// TestPersonSavesRacingAppends is the short run of the same.
func TestPersonSavesRacingAppends(t *testing.T) {
	personSavesRacingAppends(t, 3*time.Second)
}

// personSave is one save of the person: its marker and how it was made.
type personSave struct {
	marker, how string
	at          time.Time // when the marker was written
}

func personSavesRacingAppends(t *testing.T, length time.Duration) {
	dir := newWorkspaceDir(t)
	const key = "team/log"
	file := filepath.Join(dir, key+".md")
	servers := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b")}
	servers[0].write(map[string]any{"uri": key, "digest": "the team's log", "body": "start\n", "expect_version": 0})

	stop := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	acks := appendUntil(stop, &wg, servers, key, "agent %d line %d", func(n int) time.Duration {
		return time.Duration(2+n%3*3) * time.Millisecond
	})

	// The person: in turn, a slow in-place save (truncate, half, a pause,
	// the rest), a file opened with O_APPEND before an agent's write and
	// written through after it, and a file opened for writing before an
	// agent's write, truncated and rewritten through after it.
	var saves []personSave
	// BLACKBOARD_PERSON_SAVES=slow,append,rewrite picks the kinds of save.
	modes := []string{"slow", "append", "rewrite"}
	if m := os.Getenv("BLACKBOARD_PERSON_SAVES"); m != "" {
		modes = strings.Split(m, ",")
	}
	ino := func() uint64 {
		fi, err := os.Stat(file)
		if err != nil {
			return 0
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	// waitReplaced waits (at most 300 ms) until an agent's write replaced
	// the file that was at the path.
	waitReplaced := func(before uint64) {
		for deadline := time.Now().Add(300 * time.Millisecond); ino() == before && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			marker := fmt.Sprintf("person marker %d", i)
			old, err := os.ReadFile(file)
			if err != nil {
				t.Error(err)
				return
			}
			whole := append(append([]byte{}, old...), marker+"\n"...)
			var how string
			var at time.Time
			switch modes[i%len(modes)] {
			case "slow":
				how = "slow in-place save"
				f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
				if err != nil {
					t.Error(err)
					return
				}
				half := len(whole) / 2
				_, err1 := f.Write(whole[:half])
				time.Sleep(time.Duration(3+i%4*2) * time.Millisecond)
				at = time.Now()
				_, err2 := f.Write(whole[half:])
				if err := errors.Join(err1, err2, f.Close()); err != nil {
					t.Error(err)
					return
				}
			case "append":
				how = "append through a file opened before an agent's write"
				f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				waitReplaced(ino())
				at = time.Now()
				fmt.Fprintln(f, marker)
				f.Close()
			case "rewrite":
				how = "rewrite through a file opened before an agent's write"
				f, err := os.OpenFile(file, os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				waitReplaced(ino())
				at = time.Now()
				err1 := f.Truncate(0)
				_, err2 := f.WriteAt(whole, 0)
				if err := errors.Join(err1, err2, f.Close()); err != nil {
					t.Error(err)
					return
				}
			}
			mu.Lock()
			saves = append(saves, personSave{marker, how, at})
			mu.Unlock()
			time.Sleep(time.Duration(10+i%5*5) * time.Millisecond)
		}
	})
	time.Sleep(length)
	close(stop)
	wg.Wait()
	agentLines := acks.lines()

	// Settled: every marker in git, or git status clean and the kept
	// displaced files let go (at most their quiet second and a look).
	lost := func() []personSave {
		all := reachableText(t, dir)
		var out []personSave
		for _, s := range saves {
			if !strings.Contains(all, s.marker+"\n") {
				out = append(out, s)
			}
		}
		return out
	}
	stopped := time.Now()
	deadline := stopped.Add(20 * time.Second)
	var missing []personSave
	for {
		missing = lost()
		clean := fixtures.Git(t, dir, "status", "--porcelain", "--untracked-files=all") == ""
		held, _ := filepath.Glob(filepath.Join(dir, ".git", "blackboard-displaced", "*", "*"))
		if clean && (len(missing) == 0 || len(held) == 0 && time.Since(stopped) > 4*time.Second) || time.Now().After(deadline) {
			break
		}
		// Writes from an agent make the repairs run at once.
		servers[0].call("get_state", map[string]any{"uris": []string{key}})
		time.Sleep(200 * time.Millisecond)
	}
	missing = lost()
	unreachable := allObjectsText(t, dir)
	kept, _ := filepath.Glob(filepath.Join(dir, ".git", "blackboard-displaced", "*", "*"))
	byHow := map[string]int{}
	for _, s := range missing {
		where := "in no git object"
		if strings.Contains(unreachable, s.marker+"\n") {
			where = "only in an unreachable git object"
		}
		byHow[s.how]++
		t.Errorf("LOST %s (%s, written at %s): %s", s.marker, s.how, s.at.Format("15:04:05.000000"), where)
	}
	t.Logf("RESULT %d person saves, %d lost %v; %d acknowledged agent appends; kept displaced files: %v",
		len(saves), len(missing), byHow, len(agentLines), kept)
	if len(missing) > 0 {
		t.Logf("git log:\n%s", strings.Join(gitLog(t, dir), "\n"))
		for i, s := range servers {
			t.Logf("server %d log:\n%s", i, s.stderr.String())
		}
	}
	// Every acknowledged append is in some version of the note.
	all := reachableText(t, dir)
	for _, l := range agentLines {
		if !strings.Contains(all, l+"\n") {
			t.Errorf("acknowledged append %q is in no version", l)
		}
	}
	for _, s := range servers {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}

// reachableText is the text of every blob reachable from any ref (the
// branch, rescue refs, other branches), concatenated.
func reachableText(t testing.TB, dir string) string {
	t.Helper()
	var ids []string
	for _, l := range strings.Split(fixtures.GitOutput(t, dir, "rev-list", "--all", "--objects"), "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasSuffix(f[1], ".md") {
			ids = append(ids, f[0])
		}
	}
	return catBlobs(t, dir, ids)
}

// allObjectsText is the text of every blob in the object store, reachable
// or not.
func allObjectsText(t testing.TB, dir string) string {
	t.Helper()
	var ids []string
	for _, l := range strings.Split(fixtures.GitOutput(t, dir, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)"), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[1] == "blob" {
			ids = append(ids, f[0])
		}
	}
	return catBlobs(t, dir, ids)
}

func catBlobs(t testing.TB, dir string, ids []string) string {
	t.Helper()
	cmd := exec.Command("git", "-C", dir, "cat-file", "--batch")
	cmd.Env = mcpEnv("")
	cmd.Stdin = strings.NewReader(strings.Join(ids, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file --batch: %v", err)
	}
	return string(out)
}

// TestCheckoutLoopStress: 10 s of a person going to a new branch and back
// as fast as git allows while two servers write: writes go on succeeding,
// every acknowledged write is on main, git status ends clean.
func TestCheckoutLoopStress(t *testing.T) {
	if !stressOn() {
		t.Skip("a 10 s run; set BLACKBOARD_STRESS=1")
	}
	checkoutLoop(t, 10*time.Second)
}

// TestCheckoutLoop is the short run of the same; it passes at 7a8a219, so
// it runs by default.
func TestCheckoutLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s run of two servers and a person's checkouts")
	}
	checkoutLoop(t, 3*time.Second)
}

func checkoutLoop(t *testing.T, length time.Duration) {
	dir := newWorkspaceDir(t)
	servers := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b")}
	servers[0].write(map[string]any{"uri": "team/counter", "digest": "count 0", "body": "0\n", "expect_version": 0})

	type ack struct {
		subject string
		at      time.Time
	}
	stop := make(chan struct{})
	var mu sync.Mutex
	var acked []ack
	refused := map[string]int{} // first words of refusals -> count
	var lastRefusal string
	var lastOK [2]time.Time
	var wg sync.WaitGroup
	// Each agent writes notes of its own, and every other write is a
	// compare-and-swap increment of a counter both share.
	write := func(i int, s *session, n int) bool {
		key := fmt.Sprintf("team/a%d-%d", i, n%5)
		digest := fmt.Sprintf("agent %d write %d", i, n)
		args := map[string]any{"uri": key, "digest": digest, "body": digest + "\n"}
		if n%2 == 1 {
			key = "team/counter"
			it := s.itemOf(key)
			value, _ := strconv.Atoi(strings.TrimSpace(it.Body))
			digest = fmt.Sprintf("count %d by agent %d", value+1, i)
			args = map[string]any{"uri": key, "digest": digest, "body": strconv.Itoa(value+1) + "\n", "expect_version": it.Version}
		}
		start := time.Now()
		res := s.call("update_state", args)
		if took := time.Since(start); took > 5*time.Second {
			t.Logf("agent %d write %d took %v", i, n, took)
		}
		mu.Lock()
		defer mu.Unlock()
		if res.isError && strings.HasPrefix(res.text, "conflict: ") {
			refused["conflict"]++
			return false
		}
		if res.isError {
			w := res.text
			if len(w) > 60 {
				w = w[:60]
			}
			refused[w]++
			lastRefusal = res.text
			return false
		}
		wr := decodeWrite(t, res.text)
		acked = append(acked, ack{fmt.Sprintf("update %s v%d: %s", key, wr.Version, digest), time.Now()})
		lastOK[i] = time.Now()
		return true
	}
	for i, s := range servers {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				write(i, s, n)
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	trips, failed := 0, 0
	var lastErr string
	personEnd := time.Now().Add(length)
	for i := 0; time.Now().Before(personEnd); i++ {
		cmd := exec.Command("sh", "-c", fmt.Sprintf("git checkout -q -b tmp%d && git checkout -q main", i))
		cmd.Dir, cmd.Env = dir, mcpEnv("")
		out, err := cmd.CombinedOutput()
		if err == nil {
			trips++
			continue
		}
		failed++
		lastErr = string(out)
		// Back on main, as a person would try again a moment later.
		back := false
		for range 100 {
			c := exec.Command("git", "checkout", "-q", "main")
			c.Dir, c.Env = dir, mcpEnv("")
			if o, err := c.CombinedOutput(); err == nil {
				back = true
				break
			} else {
				lastErr = string(o)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !back {
			t.Errorf("the person cannot get back to main for 5 s: %s\ngit status:\n%s", strings.TrimSpace(lastErr),
				fixtures.Git(t, dir, "status", "--porcelain"))
			break
		}
	}
	personDone := time.Now()
	// After the person stops, writes must succeed again within a bound.
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()
	for i, s := range servers {
		ok := false
		for n, deadline := 1000, time.Now().Add(10*time.Second); time.Now().Before(deadline); n += 2 {
			if write(i, s, n) {
				ok = true
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !ok {
			t.Errorf("STUCK: server %d refuses every write for 10 s after the person stopped: %s", i, lastRefusal)
		}
	}
	t.Logf("RESULT %d trips (%d failed, last: %s); %d acknowledged writes; refusals: %v; last write before the person stopped: %v, %v",
		trips, failed, strings.TrimSpace(lastErr), len(acked), refused, personDone.Sub(lastOK[0]), personDone.Sub(lastOK[1]))
	if head := strings.TrimSpace(fixtures.Git(t, dir, "symbolic-ref", "HEAD")); head != "refs/heads/main" {
		t.Errorf("STUCK: HEAD is %s", head)
	}
	var status string
	deadline := time.Now().Add(10 * time.Second)
	for {
		status = fixtures.Git(t, dir, "status", "--porcelain", "--untracked-files=all")
		if status == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status != "" {
		t.Errorf("STUCK: git status is not clean 10 s after the last write:\n%s\ngit diff:\n%s", status, fixtures.Git(t, dir, "diff"))
	}
	increments := 0
	for _, a := range acked {
		if strings.HasPrefix(a.subject, "update team/counter ") {
			increments++
		}
	}
	if it := servers[1].itemOf("team/counter"); strings.TrimSpace(it.Body) != strconv.Itoa(increments) {
		t.Errorf("LOST the counter reads %q at version %d after %d acknowledged increments", it.Body, it.Version, increments)
	}
	onMain := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader([]byte(fixtures.Git(t, dir, "log", "--format=%s", "main"))))
	for sc.Scan() {
		onMain[sc.Text()] = true
	}
	missing := 0
	for _, a := range acked {
		if !onMain[a.subject] {
			missing++
			t.Errorf("LOST acknowledged %q (at %s) is not on main", a.subject, a.at.Format("15:04:05.000"))
		}
	}
	if missing > 0 || t.Failed() {
		t.Logf("HEAD's reflog:\n%s", fixtures.Git(t, dir, "reflog", "-n", "30", "--format=%h %gs", "HEAD"))
		for i, s := range servers {
			t.Logf("server %d log:\n%s", i, s.stderr.String())
		}
	}
	for _, s := range servers {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}
