package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// A person's save is merged with what agents wrote since the version it
// was made from (its base), never taken whole over it: three agents append
// to one note while a person saves the same file in every way editors and
// shells save, some from a buffer read a while before, and runs git commit
// now and then. Afterwards every acknowledged append is in the note as it
// is now, and every line the person saved is there too, or in a sibling
// note linked `contradicts`: nothing is only in history.

// TestPeopleAndAgentsEditOneNoteChaos is the 20 s run.
func TestPeopleAndAgentsEditOneNoteChaos(t *testing.T) {
	peopleAndAgentsChaos(t, 20*time.Second)
}

// saveStyle is one way a person saves a note: it is handed the file and
// the line to add, and says when the line was written.
type saveStyle struct {
	name string
	save func(file, line string, rnd *rand.Rand) error
}

// saveStyles are the saves of the chaos test, taken in turn.
var saveStyles = []saveStyle{
	{"in-place save", func(file, line string, _ *rand.Rand) error {
		old, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		return os.WriteFile(file, append(old, line+"\n"...), 0o644)
	}},
	{"slow in-place save of an older buffer", func(file, line string, rnd *rand.Rand) error {
		old, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		time.Sleep(time.Duration(10+rnd.IntN(60)) * time.Millisecond) // the person types
		whole := append(old, line+"\n"...)
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		half := len(whole) / 2
		_, err1 := f.Write(whole[:half])
		time.Sleep(time.Duration(2+rnd.IntN(10)) * time.Millisecond)
		_, err2 := f.Write(whole[half:])
		return errors.Join(err1, err2, f.Close())
	}},
	{"editor's save by rename of an older buffer", func(file, line string, rnd *rand.Rand) error {
		old, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		time.Sleep(time.Duration(rnd.IntN(60)) * time.Millisecond)
		tmp := filepath.Join(filepath.Dir(file), ".shared.md.swp-save")
		if err := os.WriteFile(tmp, append(old, line+"\n"...), 0o644); err != nil {
			return err
		}
		return os.Rename(tmp, file)
	}},
	{"vim's save (backup by rename, new file)", func(file, line string, rnd *rand.Rand) error {
		old, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		time.Sleep(time.Duration(rnd.IntN(40)) * time.Millisecond)
		backup := file + "~"
		if err := os.Rename(file, backup); err != nil {
			return err
		}
		if err := os.WriteFile(file, append(old, line+"\n"...), 0o644); err != nil {
			return err
		}
		return os.Remove(backup)
	}},
	{">> append", func(file, line string, _ *rand.Rand) error {
		return appendLine(file, line, 0)
	}},
	{">> append held open", func(file, line string, rnd *rand.Rand) error {
		return appendLine(file, line, time.Duration(100+rnd.IntN(400))*time.Millisecond)
	}},
}

// appendLine appends line to file as a shell's >> does, holding the file
// open for hold before and after the write.
func appendLine(file, line string, hold time.Duration) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	time.Sleep(hold / 2)
	_, err = f.WriteString(line + "\n")
	time.Sleep(hold / 2)
	return errors.Join(err, f.Close())
}

func peopleAndAgentsChaos(t *testing.T, length time.Duration) {
	dir := newWorkspaceDir(t)
	const key = "t/shared"
	file := filepath.Join(dir, key+".md")
	agents := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b"), startMCPGo(t, dir, "agent-c")}
	agents[0].write(map[string]any{"uri": key, "digest": "the team's log", "body": "start\n", "expect_version": 0})

	stop := make(chan struct{})
	var mu sync.Mutex
	var saved []personSave // lines the person saved
	var wg sync.WaitGroup
	// Three agents at about 10 appends a second each keep the note under
	// the size that moves content out of line.
	acks := appendUntil(stop, &wg, agents, key, "a%d-%d", func(n int) time.Duration {
		return time.Duration(60+n%5*20) * time.Millisecond
	})
	wg.Go(func() {
		rnd := rand.New(rand.NewPCG(1, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%15 == 14 {
				// The person commits by hand whatever their last save left.
				_ = fixtures.GitCmd(dir, "commit", "-q", "-a", "-m", "my notes").Run()
				continue
			}
			style := saveStyles[i%len(saveStyles)]
			line := fmt.Sprintf("p-%d", i)
			if err := style.save(file, line, rnd); err != nil {
				t.Errorf("%s: %v", style.name, err)
				return
			}
			mu.Lock()
			saved = append(saved, personSave{marker: line, how: style.name, at: time.Now()})
			mu.Unlock()
			time.Sleep(time.Duration(20+rnd.IntN(80)) * time.Millisecond)
		}
	})
	time.Sleep(length)
	close(stop)
	wg.Wait()
	appended := acks.lines()

	settleNote(t, dir, agents[0], key)
	current := fixtures.GitOutput(t, dir, "show", "HEAD:"+key+".md")
	siblings := contradictingSiblings(t, dir, key)
	history := reachableText(t, dir)
	has := func(text, line string) bool { return strings.Contains(text, "\n"+line+"\n") }

	var onlyInHistory, inSibling, lost int
	for _, l := range appended {
		if !has(current, l) {
			onlyInHistory++
			where := "in no version"
			if has(history, l) {
				where = "only in history"
			}
			t.Errorf("acknowledged append %q is not in the note: %s; commits adding or removing it:\n%s",
				l, where, fixtures.GitOutput(t, dir, "log", "--format=%h %an %s", "-G", "^"+l+"$", "--", key+".md"))
		}
	}
	byHow := map[string]int{}
	for _, s := range saved {
		switch {
		case has(current, s.marker):
		case has(siblings, s.marker):
			inSibling++
		default:
			lost++
			byHow[s.how]++
			where := "in no version"
			if has(history, s.marker) {
				where = "only in history"
			}
			t.Errorf("the person's line %q (%s) is neither in the note nor in a sibling: %s; commits adding or removing it:\n%s",
				s.marker, s.how, where, fixtures.GitOutput(t, dir, "log", "--format=%h %an %s", "-G", "^"+s.marker+"$", "--", key+".md"))
		}
	}
	// BLACKBOARD_KEEP_BOARD=DIR keeps a failed run's board there, with
	// its reflog, to look at what happened.
	if keep := os.Getenv("BLACKBOARD_KEEP_BOARD"); t.Failed() && keep != "" {
		if out, err := exec.Command("cp", "-a", dir, keep).CombinedOutput(); err != nil {
			t.Logf("keep the board in %s: %v\n%s", keep, err, out)
		}
	}
	t.Logf("RESULT %d acknowledged appends, %d only in history; %d person's lines saved, %d in a sibling note, %d lost %v",
		len(appended), onlyInHistory, len(saved), inSibling, lost, byHow)
	if t.Failed() {
		t.Logf("git log:\n%s", strings.Join(gitLog(t, dir, key+".md"), "\n"))
		for i, s := range agents {
			t.Logf("server %d log:\n%s", i, s.stderr.String())
		}
	}
	for _, s := range agents {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}

// settleNote waits until what people left in the work tree is committed:
// git status clean, the note's file as git holds it, and no file kept for
// a person still waiting to be looked at.
func settleNote(t *testing.T, dir string, s *session, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		clean := fixtures.GitOutput(t, dir, "status", "--porcelain", "--untracked-files=all") == ""
		held, _ := filepath.Glob(filepath.Join(dir, ".git", "blackboard-displaced", "*", "*"))
		disk, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)+".md"))
		same := string(disk) == fixtures.GitOutput(t, dir, "show", "HEAD:"+key+".md")
		if clean && same && len(held) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("not settled after 30 s: git status clean %v, the file as git holds it %v, kept files %v", clean, same, held)
			return
		}
		s.call("get_state", map[string]any{"uris": []string{key}}) // the repairs run before a read's answer too
		time.Sleep(200 * time.Millisecond)
	}
}

// contradictingSiblings is the text of the notes beside key that are
// linked `contradicts` to it.
func contradictingSiblings(t *testing.T, dir, key string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(key)+"-*.md"))
	var out strings.Builder
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "contradicts:") {
			out.Write(raw)
		}
	}
	return out.String()
}

// TestAppendHeldOpenWhileAgentsWrite: a person's `cat >> note.md` holds the
// file open for a second, its line written at once, while two agents
// append to the note: the file is not replaced under the person, and once
// they close it the note holds their line and every agent's.
func TestAppendHeldOpenWhileAgentsWrite(t *testing.T) {
	dir := newWorkspaceDir(t)
	const key = "t/held"
	file := filepath.Join(dir, key+".md")
	agents := []*session{startMCPGo(t, dir, "agent-a"), startMCPGo(t, dir, "agent-b")}
	agents[0].write(map[string]any{"uri": key, "digest": "the team's log", "body": "start\n", "expect_version": 0})

	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("the person's line\n"); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for n := range 10 {
		s := agents[n%2]
		line := fmt.Sprintf("agent line %d", n)
		if res := s.call("update_state", map[string]any{"uri": key, "digest": "the team's log", "append": line + "\n"}); res.isError {
			t.Fatalf("append: %s", res.text)
		}
		lines = append(lines, line)
		time.Sleep(100 * time.Millisecond)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	settleNote(t, dir, agents[0], key)
	current := fixtures.GitOutput(t, dir, "show", "HEAD:"+key+".md")
	for _, l := range append(lines, "the person's line") {
		if !strings.Contains(current, "\n"+l+"\n") {
			t.Errorf("%q is not in the note:\n%s", l, current)
		}
	}
	for _, s := range agents {
		s.closeClean()
	}
	checkWorkspace(t, dir)
}

// appends are the lines of the appends acknowledged to agents, in the
// order they were acknowledged.
type appends struct {
	mu  sync.Mutex
	all []string
}

func (a *appends) add(line string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.all = append(a.all, line)
}

func (a *appends) lines() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.all...)
}

// appendUntil has each agent append lines to the note key (format takes
// the agent's index and the line's number) until stop is closed, waiting
// pause(n) after its nth append; wg waits for them. An append refused
// fails the test and ends that agent's turn.
func appendUntil(stop <-chan struct{}, wg *sync.WaitGroup, agents []*session, key, format string, pause func(n int) time.Duration) *appends {
	acks := &appends{}
	for i, s := range agents {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				line := fmt.Sprintf(format, i, n)
				res := s.call("update_state", map[string]any{"uri": key, "digest": "the team's log", "append": line + "\n"})
				if res.isError {
					s.t.Errorf("append: %s", res.text)
					return
				}
				acks.add(line)
				time.Sleep(pause(n))
			}
		})
	}
	return acks
}
