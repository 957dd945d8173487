package fsstore

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// People use git in the workspace: they check out other branches, merge,
// and commit. A write never puts its files into a work tree that is not the
// branch's, and people's edits wait until it is again.

// While another branch is checked out, a write goes to the branch alone:
// the other branch's files and index stay as they are, and checking the
// branch out again brings the write's files.
func TestWriteWhileOtherBranchCheckedOut(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/a", 0, "a", "a\n")
	fixtures.Git(t, d, "checkout", "-q", "-b", "elsewhere")
	writeFile(t, w, "t/a.md", noteText("elsewhere", "elsewhere\n"))
	fixtures.Git(t, d, "commit", "-qam", "elsewhere's version")

	res := put(t, w, "t/a", 1, "agent on main", "agent\n")
	if res.Version != 2 {
		t.Fatalf("write = %+v", res)
	}
	if st := fixtures.Git(t, d, "status", "--porcelain"); st != "" {
		t.Errorf("the write touched the other branch's work tree:\n%s", st)
	}
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "elsewhere") {
		t.Errorf("file on the other branch = %q", got)
	}
	fixtures.Git(t, d, "checkout", "-q", "main")
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "agent on main") {
		t.Errorf("after checking main out, the file = %q", got)
	}
	if rep := commitEdits(t, w); rep.Commit != "" {
		t.Errorf("the other branch's content came back as a person's edit: %s", opsOf(rep))
	}
	if n := get(t, w, "t/a"); n.Version != 2 || n.Digest != "agent on main" {
		t.Errorf("t/a = %+v", n)
	}
	assertClean(t, w)
}

// During a merge a person resolves, writes are refused with the reason, and
// git's conflict entries stay.
func TestWriteDuringMergeIsRefused(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/a", 0, "a", "base\n")
	fixtures.Git(t, d, "checkout", "-q", "-b", "side")
	writeFile(t, w, "t/a.md", noteText("side", "side\n"))
	fixtures.Git(t, d, "commit", "-qam", "side")
	fixtures.Git(t, d, "checkout", "-q", "main")
	writeFile(t, w, "t/a.md", noteText("main", "main\n"))
	fixtures.Git(t, d, "commit", "-qam", "main")
	cmd := fixtures.GitCmd(d, "merge", "side")
	_, _ = cmd.CombinedOutput() // a conflict: exit status 1
	unmerged := fixtures.Git(t, d, "ls-files", "-u")
	if unmerged == "" {
		t.Fatal("no conflict to test with")
	}
	_, err := agentView(w).Update(UpdateRequest{URI: "t/a", Digest: "agent", Body: ptr("agent\n")})
	assertKind(t, err, ErrConflict)
	if !strings.Contains(err.Error(), "a merge is in progress") {
		t.Errorf("error = %v", err)
	}
	if _, err := agentView(w).Update(UpdateRequest{URI: "t/other", Digest: "agent", Body: ptr("x")}); err == nil {
		t.Error("a write to another note went through during the merge")
	}
	if got := fixtures.Git(t, d, "ls-files", "-u"); got != unmerged {
		t.Errorf("conflict entries changed:\n%s", got)
	}
	if _, err := w.CommitEdits(); err == nil || !strings.Contains(err.Error(), "merge") {
		t.Errorf("edits during the merge: %v", err)
	}
	// The person resolves and commits; writes go on.
	writeFile(t, w, "t/a.md", noteText("resolved", "both\n"))
	fixtures.Git(t, d, "commit", "-qam", "merge side")
	if n := get(t, w, "t/a"); n.Digest != "resolved" {
		t.Errorf("after the merge: %+v", n)
	}
	put(t, w, "t/a", get(t, w, "t/a").Version, "after the merge", "x\n")
	assertClean(t, w)
}

// git checkout writes the other branch's files before it moves HEAD. A
// comparison running meanwhile must not commit them onto the branch.
func TestCheckoutDuringComparisons(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	n := 1000
	if testing.Short() {
		n = 300
	}
	for i := range n {
		writeFile(t, w, "t/n"+strconv.Itoa(i)+".md", noteText("main "+strconv.Itoa(i), "main\n"))
	}
	commitEdits(t, w)
	fixtures.Git(t, d, "checkout", "-q", "-b", "other")
	for i := range n {
		writeFile(t, w, "t/n"+strconv.Itoa(i)+".md", noteText("other "+strconv.Itoa(i), "other\n"))
	}
	fixtures.Git(t, d, "commit", "-qam", "other's version")
	fixtures.Git(t, d, "checkout", "-q", "main")
	mainBefore := fixtures.Git(t, d, "rev-parse", "main")
	for round := range 3 {
		cmd := fixtures.GitCmd(d, "checkout", "-q", "other")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
	loop:
		for {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("checkout: %v", err)
				}
				break loop
			default:
				w.FilesChanged(nil, true)
				_, _ = w.CommitEdits() // busy, mostly
			}
		}
		if got := fixtures.Git(t, d, "rev-parse", "main"); got != mainBefore {
			t.Fatalf("round %d: main moved during the person's checkout: %s", round, fixtures.Git(t, d, "log", "-1", "--format=%an %s", "main"))
		}
		fixtures.Git(t, d, "checkout", "-q", "-f", "main")
	}
}

// A writer killed after its commit point, and a person saving the note
// before any process finished the write: git's index follows the commit, so
// a person's commit of another file does not revert the write, and the save
// becomes the next version.
func TestRecoverKeepsGitIndexInStep(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, true)
	d := w.Dir()
	put(t, w, "t/a", 0, "a", "a\n")
	w.Close()
	runKilled(t, "onewrite", d, "BB_CRASH_AT=branch", "BB_DURABLE=1")
	person := noteText("person", "person\n")
	writeFile(t, w, "t/a.md", person)
	w = openWorkspace(t, d, true) // finishes the write
	writeFile(t, w, "t/other.txt", "x")
	fixtures.Git(t, d, "add", "t/other.txt")
	fixtures.Git(t, d, "commit", "-qm", "person adds a file")
	if got := fixtures.Git(t, d, "show", "HEAD:t/a.md"); !strings.Contains(got, "digest: agent") {
		t.Fatalf("the person's commit of another file reverted the write:\n%s", got)
	}
	commitEdits(t, w)
	if n := get(t, w, "t/a"); n.Digest != "person" || n.Version != 3 {
		t.Errorf("t/a = %+v", n)
	}
	assertClean(t, w)
}

// A person saves twice during one write: the newest save stays.
func TestSecondSaveDuringSwapBackStays(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/k", 0, "first", "one\n")
	p1 := noteText("person's first save", "p1\n")
	p2 := noteText("person's second save", "p2\n")
	stop := onSteps(t, func(step string) {
		switch step {
		case "unheld": // after the write looked at the file, before its swap
			writeFile(t, w, "t/k.md", p1)
		case "exchanged":
			writeFile(t, w, "t/k.md.new", p2)
			if err := w.root.Rename("t/k.md.new", "t/k.md"); err != nil {
				t.Error(err)
			}
		}
	})
	put(t, w, "t/k", 1, "agent", "mine\n")
	stop()
	if got := readFile(t, w, "t/k.md"); got != p2 {
		t.Fatalf("the person's newest save was lost; the file holds:\n%s", got)
	}
	commitEdits(t, w)
	if n := get(t, w, "t/k"); n.Digest != "person's second save" {
		t.Errorf("t/k = %+v", n)
	}
	assertClean(t, w)
}

// A person saves the note after a write compared it, and reads it again
// while the write puts its file in place: their editor must find their
// save, never the write's file, which lacks it. A save of a buffer read
// from the write's file, made once the person's file is back in place,
// would replace that earlier save before it was committed: its line would
// be in no version.
func TestReadDuringAWriteFindsTheEarlierSave(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	file := filepath.Join(w.Dir(), "t", "log.md")
	var buffer string
	stop := onSteps(t, func(step string) {
		switch step {
		case "branch":
			appendToFile(t, file, "first save\n")
		case "exchanged":
			buffer = readFile(t, w, "t/log.md")
		case "swapped back":
			writeFile(t, w, "t/log.md", buffer+"second save\n")
		}
	})
	appendLine(t, w, "t/log", "agent line")
	stop()
	if buffer == "" { // the editor read the note only after the write
		appendToFile(t, file, "second save\n")
	}
	commitEdits(t, w)
	if n := get(t, w, "t/log"); n.Content != "start\nagent line\nfirst save\nsecond save\n" {
		t.Errorf("note = v%d %q; want the agent's line and both saves", n.Version, n.Content)
	}
	assertClean(t, w)
}

// During one write, a person appends to a note through a handle opened
// before it: the line lands in the file the write displaced, and the write
// gives that file its place back. Meanwhile someone else has opened the
// note, finding the write's file in place, and appended to it, or saved
// over it from an editor, or appends to it only after the write returned.
// Every line reaches a version.
func TestAppendsDuringSwapBackAllStay(t *testing.T) {
	fixtures.RequireGit(t)
	for _, second := range []string{"append", "save", "append later"} {
		t.Run(second, func(t *testing.T) {
			w := newWorkspace(t, false)
			put(t, w, "t/log", 0, "log", "start\n")
			// The person opens the note in the instant after the write
			// looked whether anyone holds it open for writing: a handle
			// opened before that look keeps the file in place instead.
			var held *os.File
			defer func() {
				if held != nil {
					held.Close()
				}
			}()
			want := []string{"start", "the agent's", "through the old handle"}
			var later *os.File
			switch second {
			case "save":
				want = append(want, "saved from an editor")
			default:
				want = append(want, "through a new handle")
			}
			stop := onSteps(t, func(step string) {
				if step == "unheld" && held == nil {
					var err error
					if held, err = os.OpenFile(filepath.Join(w.Dir(), "t", "log.md"), os.O_WRONLY|os.O_APPEND, 0); err != nil {
						t.Error(err)
					}
					return
				}
				if step != "exchanged" || held == nil {
					return
				}
				if _, err := held.WriteString("through the old handle\n"); err != nil {
					t.Error(err)
				}
				if second == "save" {
					writeFile(t, w, "t/log.md.new", noteText("log", "saved from an editor\n"))
					if err := w.root.Rename("t/log.md.new", "t/log.md"); err != nil {
						t.Error(err)
					}
					return
				}
				f, err := os.OpenFile(filepath.Join(w.Dir(), "t", "log.md"), os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if second == "append later" {
					later = f
					return
				}
				if _, err := f.WriteString("through a new handle\n"); err != nil {
					t.Error(err)
				}
				f.Close()
			})
			put(t, w, "t/log", 1, "log", "the agent's\n")
			stop()
			held.Close()
			if later != nil {
				if _, err := later.WriteString("through a new handle\n"); err != nil {
					t.Error(err)
				}
				later.Close()
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				commitEdits(t, w)
				if err := w.Repair(); err != nil {
					t.Fatal(err)
				}
				all := ""
				for _, c := range strings.Fields(fixtures.Git(t, w.Dir(), "log", "--format=%H", "--", "t/log.md")) {
					all += fixtures.Git(t, w.Dir(), "show", c+":t/log.md") + "\n"
				}
				missing := []string{}
				for _, line := range want {
					if !strings.Contains(all, line+"\n") {
						missing = append(missing, line)
					}
				}
				if len(missing) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("not in any version: %q; the file holds:\n%s", missing, readFile(t, w, "t/log.md"))
				}
				time.Sleep(100 * time.Millisecond)
			}
			assertClean(t, w)
		})
	}
}

// A write that deletes a blob file while a person saves it keeps their file
// (untracked, then committed as their edit), and git keeps working.
func TestSaveOfAFileAWriteDeletesStays(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	d := w.Dir()
	put(t, w, "t/big", 0, "large", strings.Repeat("a long line of text\n", 1000))
	atStep(t, "branch", func() {
		writeFile(t, w, "t/big.blob.md", "the person's edit of the blob\n")
	})
	put(t, w, "t/big", 1, "small again", "short\n")
	writeFile(t, w, "t/other.txt", "x")
	fixtures.Git(t, d, "add", "t/other.txt")
	fixtures.Git(t, d, "commit", "-qm", "person's commit")
	commitEdits(t, w)
	if got := fixtures.Git(t, d, "show", "HEAD:t/big.blob.md"); got != "the person's edit of the blob" {
		t.Errorf("HEAD:t/big.blob.md = %q", got)
	}
	assertClean(t, w)
}

// A writer killed just after it swapped a person's save out of the way
// (placeFile): the next process puts the save back, and it becomes the next
// version.
func TestRecoverPutsBackASwappedSave(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, true)
	d := w.Dir()
	put(t, w, "t/a", 0, "a", "a\n")
	w.Close()
	person := noteText("saved mid-write", "person\n")
	runKilled(t, "savedmidwrite", d, "BB_DURABLE=1", "BB_SAVE="+person)
	w = openWorkspace(t, d, true) // finishes the write
	if got := readFile(t, w, "t/a.md"); got != person {
		t.Fatalf("the person's save was not put back:\n%s", got)
	}
	commitEdits(t, w)
	if n := get(t, w, "t/a"); n.Digest != "saved mid-write" || n.Version != 3 {
		t.Errorf("t/a = %+v", n)
	}
	if got := fixtures.Git(t, d, "log", "--format=%s", "--", "t/a.md"); !strings.Contains(got, "update t/a v2: agent") {
		t.Errorf("the write is not in history:\n%s", got)
	}
	assertClean(t, w)
}

// A writer killed after its commit point, then the process that finishes
// its write killed while it writes the note's file: the next process puts
// the committed content in place. The file cut short by the second kill is
// never taken for a person's save and put back (it was: the note's file was
// left empty, and a later comparison would have committed that).
func TestKilledWhileFinishingAWrite(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, true)
	d := w.Dir()
	put(t, w, "t/a", 0, "a", "a\n")
	w.Close()
	for _, step := range []string{"branch", "staging"} {
		runKilled(t, "onewrite", d, "BB_CRASH_AT="+step, "BB_DURABLE=1")
	}
	w = openWorkspace(t, d, true)
	put(t, w, "t/b", 0, "b", "b\n") // finishes the write, as any write does
	if got := readFile(t, w, "t/a.md"); !strings.Contains(got, "digest: agent") || !strings.HasSuffix(got, "agent\n") {
		t.Fatalf("t/a.md after the two kills holds %q; want the committed write", got)
	}
	assertClean(t, w)
	if n := get(t, w, "t/a"); n.Digest != "agent" || n.Version != 2 {
		t.Errorf("t/a = %+v", n)
	}
}
