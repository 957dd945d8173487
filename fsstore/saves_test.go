package fsstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/internal/commits"
)

// A person's save made from an earlier version than the branch's is merged
// with what agents wrote since (saves.go), step by step: each case places
// the person's file and the agents' writes in a set order.

// appendLine appends text to the note uri as an agent's append does.
func appendLine(t *testing.T, w *Workspace, uri, line string) {
	t.Helper()
	appendAs(t, w, w.Agent(), uri, line)
}

// TestAppendToAFileOneVersionBehindIsMerged: the person's `>>` lands on a
// file that still holds the version before an agent's append (the write
// had not put its file in place): both lines are kept, the agent's first.
func TestAppendToAFileOneVersionBehindIsMerged(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	behind := readFile(t, w, "t/log.md")
	appendLine(t, w, "t/log", "agent line")

	// The file as the person's >> leaves it: the version before, and their
	// line.
	writeFile(t, w, "t/log.md", behind)
	appendToFile(t, filepath.Join(w.Dir(), "t/log.md"), "person line\n")
	commitEdits(t, w)

	if n := get(t, w, "t/log"); n.Content != "start\nagent line\nperson line\n" || n.Version != 3 {
		t.Errorf("note = v%d %q; want v3 with the agent's line, then the person's", n.Version, n.Content)
	}
	if got := fixtures.Git(t, w.Dir(), "log", "-1", "--format=%s"); !strings.Contains(got, "by hand, merged") {
		t.Errorf("the person's commit is %q; want it to say the save was merged", got)
	}
	if disk := readFile(t, w, "t/log.md"); !strings.HasSuffix(disk, "start\nagent line\nperson line\n") {
		t.Errorf("the file holds %q, not the merge", disk)
	}
	assertClean(t, w)
}

// TestSaveFromABufferTwoVersionsBehindIsMerged: an editor's buffer read
// two appends ago, saved in place with another line changed: the change
// and both appends are in the note.
func TestSaveFromABufferTwoVersionsBehindIsMerged(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/plan", 0, "the log", "one\ntwo\nthree\n")
	buffer := readFile(t, w, "t/plan.md")
	appendLine(t, w, "t/plan", "agent one")
	appendLine(t, w, "t/plan", "agent two")

	writeFile(t, w, "t/plan.md", strings.Replace(buffer, "two\n", "two, edited by hand\n", 1))
	commitEdits(t, w)

	want := "one\ntwo, edited by hand\nthree\nagent one\nagent two\n"
	if n := get(t, w, "t/plan"); n.Content != want || n.Version != 4 {
		t.Errorf("note = v%d %q; want v4 %q", n.Version, n.Content, want)
	}
	assertClean(t, w)
}

// TestSaveChangingTheAgentsLinesIsKeptBeside: the person's old buffer
// changes the line an agent changed since: the agent's version stays the
// note, and the person's whole text is a sibling note linked contradicts.
func TestSaveChangingTheAgentsLinesIsKeptBeside(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/status", 0, "the status", "status: draft\n")
	buffer := readFile(t, w, "t/status.md")
	put(t, w, "t/status", 1, "the status", "status: in review\nreviewer: agent\n")

	writeFile(t, w, "t/status.md", strings.Replace(buffer, "status: draft", "status: done", 1))
	commitEdits(t, w)

	if n := get(t, w, "t/status"); n.Content != "status: in review\nreviewer: agent\n" || n.Version != 2 {
		t.Errorf("note = v%d %q; want the agent's v2", n.Version, n.Content)
	}
	if disk := readFile(t, w, "t/status.md"); !strings.HasSuffix(disk, "status: in review\nreviewer: agent\n") {
		t.Errorf("the file holds %q, not the agent's version", disk)
	}
	siblings, _ := filepath.Glob(filepath.Join(w.Dir(), "t", "status-*.md"))
	if len(siblings) != 1 {
		t.Fatalf("sibling notes %v; want one", siblings)
	}
	raw, err := os.ReadFile(siblings[0])
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); !strings.Contains(s, "status: done\n") || !strings.Contains(s, "contradicts: [t/status]") {
		t.Errorf("the sibling note holds %q; want the person's text, linked contradicts", s)
	}
	assertClean(t, w)
}

// TestGitCommitOfAnOlderBufferIsMerged: the person saves from a buffer one
// append behind and runs `git commit -a` before the program looks: the
// agent's line comes back, on top of their commit.
func TestGitCommitOfAnOlderBufferIsMerged(t *testing.T) {
	fixtures.RequireGit(t)
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	w := newWorkspace(t, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	buffer := readFile(t, w, "t/log.md")
	appendLine(t, w, "t/log", "agent line")

	writeFile(t, w, "t/log.md", buffer+"person line\n")
	fixtures.Git(t, w.Dir(), "commit", "-q", "-a", "-m", "my notes")
	commitEdits(t, w)

	if n := get(t, w, "t/log"); n.Content != "start\nagent line\nperson line\n" {
		t.Errorf("note = v%d %q; want the agent's line back before the person's", n.Version, n.Content)
	}
	log := fixtures.Git(t, w.Dir(), "log", "-2", "--format=%an|%s")
	if !strings.Contains(log, "|my notes") || !strings.Contains(log, "by hand, merged") {
		t.Errorf("git log:\n%s\nwant the person's commit, and the merge on top", log)
	}
	assertClean(t, w)
}

func appendToFile(t *testing.T, file, text string) {
	t.Helper()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGitCommitOfAnOlderBufferIsMergedUnderLaterCommits: the person's
// commit of a stale buffer is followed by another commit that changes the
// front matter's author line, as every write does, before the program
// looks: the agent's line comes back into the body, and the later front
// matter stays.
func TestGitCommitOfAnOlderBufferIsMergedUnderLaterCommits(t *testing.T) {
	fixtures.RequireGit(t)
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	w := newWorkspace(t, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	buffer := readFile(t, w, "t/log.md")
	text := "agent line\n"
	if _, err := w.As(OpenCaller("scout")).Update(UpdateRequest{URI: "t/log", Digest: "the log", AppendText: &text}); err != nil {
		t.Fatal(err)
	}

	writeFile(t, w, "t/log.md", buffer+"person line\n")
	fixtures.Git(t, w.Dir(), "commit", "-q", "-a", "-m", "my notes")
	touched := strings.Replace(readFile(t, w, "t/log.md"), "author: tester", "author: editor", 1)
	writeFile(t, w, "t/log.md", touched)
	fixtures.Git(t, w.Dir(), "commit", "-q", "-a", "-m", "handed to the editor")
	commitEdits(t, w)

	n := get(t, w, "t/log")
	if n.Content != "start\nagent line\nperson line\n" || !strings.Contains(readFile(t, w, "t/log.md"), "author: editor\n") {
		t.Errorf("note = v%d %q; want the agent's line back, and the later author:\n%s", n.Version, n.Content, readFile(t, w, "t/log.md"))
	}
	if log := fixtures.Git(t, w.Dir(), "log", "-1", "--format=%s%n%(trailers:key=Blackboard-Merged)"); !strings.Contains(log, "by hand, merged") || !strings.Contains(log, "Blackboard-Merged: ") {
		t.Errorf("the last commit:\n%s\nwant the merge, naming the person's commit", log)
	}
	assertClean(t, w)
}

// A file read as a person's change is taken as their whole save only when
// no process holds it open for writing and it is as it was when read: one
// let go in the instant between the read and the look (the second half of
// a slow save written, then closed) is compared again.
func TestSaveReadThenFinishedIsComparedAgain(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, false)
	put(t, w, "t/page", 0, "a page", "old text\n")
	path := filepath.Join(w.Dir(), "t", "page.md")
	save, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := save.WriteString("first half\n"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	read := &commits.Change{Path: "t/page.md", Content: []byte("first half\n"), Info: info}
	if !w.people.BeingWritten(read) {
		t.Error("a file held open for writing is taken as a whole save")
	}
	if _, err := save.WriteString("second half\n"); err != nil {
		t.Fatal(err)
	}
	if err := save.Close(); err != nil {
		t.Fatal(err)
	}
	if !w.people.BeingWritten(read) {
		t.Error("what was read of a save finished since is taken as the whole save")
	}
	info, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	whole := &commits.Change{Path: "t/page.md", Content: []byte("first half\nsecond half\n"), Info: info}
	if w.people.BeingWritten(whole) {
		t.Error("a finished save, read whole, is not taken")
	}
}

// TestSaveFromAPlacedMergeIsMerged: a person's save merged with what the
// agents wrote is put in the file before it is committed, and its commit
// can fail: here the person's `git commit`, which read the save before the
// merge replaced it, lands in between, and a process running without the
// engine appends on top of that commit. The person goes on from the merge
// in the file, a text no version holds: their next save is merged from
// it, and no line is lost or doubled.
func TestSaveFromAPlacedMergeIsMerged(t *testing.T) {
	w, buffer := logReadByAPerson(t)
	// Each agent's write names it in the front matter, and the time: the
	// versions differ there too, as on a board.
	time.Sleep(1100 * time.Millisecond)
	appendAs(t, w, "builder", "t/log", "a2")
	appendAs(t, w, "builder", "t/log", "a3")

	save := buffer + "p1\np2\np3\np4\np5\n"
	writeFile(t, w, "t/log.md", save)
	atStep(t, "save merge placed", func() {
		merged := readFile(t, w, "t/log.md")
		commitThroughIndex(t, w.Dir(), "t/log.md", save, "my notes")
		// The other process's append: the person's commit with the
		// writer's front matter and one line more. Its file is never
		// placed, for the person's file is newer.
		front, _, _ := strings.Cut(merged, "start\n")
		_, body, _ := strings.Cut(save, "---\n"+"start\n")
		appended := strings.Replace(front, "author: builder", "author: runner", 1) + "start\n" + body + "a4\n"
		writeAsOtherProcess(t, w.Dir(), "t/log.md", appended, "runner", "append t/log: the log")
		appendToFile(t, filepath.Join(w.Dir(), "t", "log.md"), "p6\n")
	})
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	// The person's commit dropped a2 and a3: the look at recent commits
	// puts them back.
	if err := w.Repair(); err != nil {
		t.Fatal(err)
	}
	appendAs(t, w, "scout", "t/log", "a5")

	wantEachLineOnce(t, w, "t/log", "start", "a1", "a2", "a3", "a4", "a5", "p1", "p5", "p6")
	assertClean(t, w)
}

// TestSaveFromAPlacedMergeNeverCommittedKeepsItsLines: the merge of a
// person's save is in the file, and another process's append moves the
// branch before the merge is committed: the person appends to the merge.
// The lines the merge brought are in no version; the save is merged from
// the version the merge was made onto, and they stay.
func TestSaveFromAPlacedMergeNeverCommittedKeepsItsLines(t *testing.T) {
	w, buffer := logReadByAPerson(t)
	appendAs(t, w, "builder", "t/log", "a2")

	writeFile(t, w, "t/log.md", buffer+"p1\n")
	atStep(t, "save merge placed", func() {
		branch := fixtures.GitOutput(t, w.Dir(), "show", "HEAD:t/log.md")
		writeAsOtherProcess(t, w.Dir(), "t/log.md", branch+"a3\n", "runner", "append t/log: the log")
		appendToFile(t, filepath.Join(w.Dir(), "t", "log.md"), "p2\n")
	})
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	appendAs(t, w, "scout", "t/log", "a4")

	wantEachLineOnce(t, w, "t/log", "start", "a1", "a2", "a3", "a4", "p1", "p2")
	assertClean(t, w)
}

// TestGitCommitMergedAfterASaveOntoItKeepsItsLines: a person commits a
// save of an older buffer with git; before the program merges that commit,
// another process appends on top of it and the person's next save is
// merged onto that append. The commit's merge is made from the buffer's
// version, not from the later merge, and keeps the person's lines.
func TestGitCommitMergedAfterASaveOntoItKeepsItsLines(t *testing.T) {
	w, buffer := logReadByAPerson(t)
	appendAs(t, w, "builder", "t/log", "a2")

	writeFile(t, w, "t/log.md", buffer+"p1\np2\np3\n")
	// The person's clock is a few seconds ahead: by time alone, what is
	// placed after the commit could have come before it.
	commit := fixtures.GitCmd(w.Dir(), "commit", "-q", "-a", "-m", "my notes")
	commit.Env = append(commit.Env, "GIT_COMMITTER_DATE="+time.Now().Add(5*time.Second).Format(time.RFC3339))
	if out, err := commit.CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v\n%s", err, out)
	}
	committed := fixtures.GitOutput(t, w.Dir(), "show", "HEAD:t/log.md")
	writeAsOtherProcess(t, w.Dir(), "t/log.md", committed+"a3\n", "runner", "append t/log: the log")
	appendToFile(t, filepath.Join(w.Dir(), "t", "log.md"), "p4\n")
	commitEdits(t, w)
	if err := w.Repair(); err != nil {
		t.Fatal(err)
	}

	wantEachLineOnce(t, w, "t/log", "start", "a1", "a2", "a3", "p1", "p2", "p3", "p4")
	assertClean(t, w)
}

// TestGitCommitOfASaveBeingMergedIsMerged: the person's `git commit -a`
// reads their save of an older buffer while the program merges it, and
// lands before the merge is committed; they save again from the same
// buffer. Their commit is merged: the agents' lines it dropped come back,
// and both saves' lines are in the note once.
func TestGitCommitOfASaveBeingMergedIsMerged(t *testing.T) {
	w, buffer := logReadByAPerson(t)
	appendAs(t, w, "builder", "t/log", "a2")
	appendAs(t, w, "builder", "t/log", "a3")

	// More lines of the person's than the agents wrote since: the merge
	// is nearer their save than the buffer's version is.
	save := buffer + "p1\np2\np3\np5\np6\np7\np8\n"
	writeFile(t, w, "t/log.md", save)
	atStep(t, "save merge placed", func() {
		commitThroughIndex(t, w.Dir(), "t/log.md", save, "my notes")
		writeFile(t, w, "t/log.md", save+"p4\n")
	})
	if _, err := w.CommitEdits(); err != nil {
		t.Fatal(err)
	}
	appendAs(t, w, "runner", "t/log", "a4")

	wantEachLineOnce(t, w, "t/log", "start", "a1", "a2", "a3", "a4", "p1", "p4", "p8")
	assertClean(t, w)
}

// wantEachLineOnce fails the test unless each of lines is in the note uri
// exactly once, and then shows the history that made it.
func wantEachLineOnce(t *testing.T, w *Workspace, uri string, lines ...string) {
	t.Helper()
	n := get(t, w, uri)
	for _, line := range lines {
		if c := strings.Count("\n"+n.Content, "\n"+line+"\n"); c != 1 {
			t.Errorf("%q is in the note %d times; want once:\n%s", line, c, n.Content)
		}
	}
	if t.Failed() {
		t.Logf("git log:\n%s", fixtures.Git(t, w.Dir(), "log", "--format=%an|%s"))
	}
}

// commitThroughIndex commits content at rel as a person's `git commit -a`
// that read it from the file does: through git's index, whatever the file
// holds now.
func commitThroughIndex(t *testing.T, dir, rel, content, message string) {
	t.Helper()
	blob := hashObject(t, dir, content)
	fixtures.Git(t, dir, "update-index", "--cacheinfo", "100644,"+blob+","+rel)
	fixtures.Git(t, dir, "commit", "-q", "-m", message)
}

// writeAsOtherProcess commits content at rel on the branch's head as
// another process of the program does, leaving the work tree and git's
// index alone: a write whose file was not put in place.
func writeAsOtherProcess(t *testing.T, dir, rel, content, author, subject string) {
	t.Helper()
	blob := hashObject(t, dir, content)
	index := filepath.Join(t.TempDir(), "index")
	withIndex := func(args ...string) string {
		cmd := fixtures.GitCmd(dir, args...)
		cmd.Env = append(cmd.Env, "GIT_INDEX_FILE="+index, "GIT_AUTHOR_NAME="+author, "GIT_COMMITTER_NAME="+author)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	withIndex("read-tree", "HEAD")
	withIndex("update-index", "--cacheinfo", "100644,"+blob+","+rel)
	tree := withIndex("write-tree")
	commit := withIndex("commit-tree", tree, "-p", "HEAD", "-m", subject)
	withIndex("update-ref", "-m", "blackboard: "+subject, "HEAD", commit)
}

func hashObject(t *testing.T, dir, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "object")
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return fixtures.Git(t, dir, "hash-object", "-w", file)
}

// appendAs appends line to the note uri as the agent does.
func appendAs(t *testing.T, w *Workspace, agent, uri, line string) {
	t.Helper()
	text := line + "\n"
	if _, err := w.As(OpenCaller(agent)).Update(UpdateRequest{URI: uri, Digest: "the log", AppendText: &text}); err != nil {
		t.Fatalf("%s appends %q: %v", agent, line, err)
	}
}

// logReadByAPerson is a board whose log note an agent has appended to
// once, and the note's file as a person's editor read it then: the buffer
// the person saves from later, when agents have written since. Git
// commands run with no global config of the machine's.
func logReadByAPerson(t *testing.T) (w *Workspace, buffer string) {
	t.Helper()
	fixtures.RequireGit(t)
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	w = newWorkspace(t, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	appendAs(t, w, "scout", "t/log", "a1")
	return w, readFile(t, w, "t/log.md")
}
