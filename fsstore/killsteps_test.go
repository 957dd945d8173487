package fsstore

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// killSteps are the steps of a write a writer is killed at, in order: its
// objects written, the branch moved, one of its two files placed, both
// placed, git's index written, the derived index caught up.
var killSteps = []string{"objects", "branch", "placed", "files", "gitindex", "index"}

// bigBody is over the blob threshold: the note's write places two files,
// the note and its blob file.
func bigBody(round int, what string) string {
	return fmt.Sprintf("round %d, %s\n%s", round, what, strings.Repeat("a line of a long finding\n", 600))
}

// killedWriteWorker makes three acknowledged writes, each recorded in
// ackPath as the key and the body written, then a fourth to the long note
// t/big, during which it kills itself at step.
func killedWriteWorker(w *Workspace, round int, step, ackPath string) error {
	ack, err := os.OpenFile(ackPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer ack.Close()
	for i := range 3 {
		key, body := fmt.Sprintf("t/n%d", i), fmt.Sprintf("round %d, write %d\n", round, i)
		if i == 2 {
			key, body = "t/big", bigBody(round, "acknowledged")
		}
		res, err := agentView(w).Update(UpdateRequest{URI: key, Digest: fmt.Sprintf("round %d", round), Body: &body})
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(ack, "%s %d %q\n", key, res.Version, body); err != nil {
			return err
		}
	}
	killAt(step)
	_, err = agentView(w).Update(UpdateRequest{URI: "t/big", Digest: fmt.Sprintf("round %d, killed", round),
		Body: ptr(bigBody(round, "killed at "+step))})
	if err == nil {
		err = fmt.Errorf("the write was not killed at %q", step)
	}
	return err
}

// watcherWorker is a server's watcher of people's edits, until killed,
// which also compares the whole work tree every 50 ms, as a server does
// when it starts: it looks at whatever a dead writer left.
func watcherWorker(w *Workspace) error {
	watching := w.Watch(WatchOptions{Logf: func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "watcher: "+format+"\n", args...)
	}})
	defer watching.Stop()
	for {
		time.Sleep(50 * time.Millisecond)
		w.FilesChanged(nil, true)
		if _, err := w.CommitEdits(); err != nil {
			fmt.Fprintf(os.Stderr, "watcher: %v\n", err)
		}
	}
}

// A writer killed with SIGKILL at every step of a write, while another
// process watches the work tree as a server does: the dead writer's half
// write is finished by whoever comes next, before anyone takes the files it
// left as a person's edit. Nobody edits anything by hand, so no commit may
// be a person's edit, and every note must end with the last write
// acknowledged to it (or the killed write, once its branch moved).
func TestKilledAtEveryStepBesideAWatcher(t *testing.T) {
	fixtures.RequireGit(t)
	w := newWorkspace(t, true)
	dir := w.Dir()
	w.Close()
	ackPath := t.TempDir() + "/acks"

	watcher := worker(t, "watcher", dir, "BB_DURABLE=1", "BB_ID=watcher")
	if err := watcher.Start(); err != nil {
		t.Fatal(err)
	}
	watcherDone := make(chan error, 1)
	go func() { watcherDone <- watcher.Wait() }()
	killed := map[string]string{} // the body of t/big's killed write, by round
	round := 0
	for range 2 {
		for _, step := range killSteps {
			round++
			runKilled(t, "killedwrite", dir, "BB_DURABLE=1", "BB_ID=writer", fmt.Sprint("BB_ROUND=", round),
				"BB_CRASH_AT="+step, "BB_OUT="+ackPath)
			killed[fmt.Sprint(round)] = bigBody(round, "killed at "+step)
			// The watcher sees the files the writer left; the next writer
			// starts while it may still be looking.
			time.Sleep(time.Duration(round%3) * 400 * time.Millisecond)
		}
	}
	time.Sleep(time.Second) // the watcher's last look
	select {
	case err := <-watcherDone:
		t.Fatalf("the watcher ended: %v", err)
	default:
	}
	_ = watcher.Process.Signal(syscall.SIGTERM)
	if err := <-watcherDone; err == nil {
		t.Error("the watcher exited by itself")
	}

	w = openWorkspace(t, dir, true)
	for _, subject := range strings.Split(fixtures.Git(t, dir, "log", "--format=%s"), "\n") {
		if strings.Contains(subject, "by hand") {
			t.Errorf("a dead writer's files were committed as a person's edit: %q", subject)
		}
	}
	acks, err := os.ReadFile(ackPath)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]string{} // each note's last acknowledged body
	for _, line := range strings.Split(strings.TrimSpace(string(acks)), "\n") {
		var key, body string
		var version int
		if _, err := fmt.Sscanf(line, "%s %d %q", &key, &version, &body); err != nil {
			t.Fatalf("ack %q: %v", line, err)
		}
		last[key] = body
		entries, err := agentView(w).Log(key, 1000)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range entries {
			if e.Version == version {
				content, err := agentView(w).ContentAt(key, e.Commit)
				if err != nil {
					t.Fatal(err)
				}
				found = content == body
			}
		}
		if !found {
			t.Errorf("%s: acknowledged at v%d, but git's v%d holds other content", key, version, version)
		}
	}
	for key, body := range last {
		n := get(t, w, key)
		got := n.Content
		switch {
		case got == body:
		case key == "t/big" && strings.Contains(got, "killed at"):
			// The killed write of the last round, committed before it died.
			if !strings.HasPrefix(got, fmt.Sprintf("round %d,", round)) {
				t.Errorf("t/big holds a killed write of an earlier round: %.40q", got)
			}
		default:
			t.Errorf("%s was reverted: it holds %.60q, its last acknowledged write %.60q", key, got, body)
		}
		if disk := readFile(t, w, key+".md"); !strings.Contains(disk, n.Digest) {
			t.Errorf("%s: the file holds another version than the branch's (%s)", key, n.Digest)
		}
	}
	assertClean(t, w)
}
