package fsstore

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// smallFileSystem mounts a tmpfs of size bytes at a new directory and
// returns it; it is unmounted when the test ends. The test is skipped
// where this process may not mount (not root, or no CAP_SYS_ADMIN).
func smallFileSystem(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)); err != nil {
		t.Skipf("cannot mount a small file system here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// appendWorker appends lines "<id>-<i>" to t/log until it has made n
// appends or been refused stop times in a row, and records each outcome
// in out (outside the full file system): "ok LINE VERSION" or "refused LINE
// ERROR". A read of the note after each refusal must still answer.
func appendWorker(w *Workspace, id string, n, stop int, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	refused := 0
	for i := 0; i < n && refused < stop; i++ {
		line := fmt.Sprintf("%s-%d", id, i)
		text := line + "\n"
		res, err := agentView(w).Update(UpdateRequest{URI: "t/log", Digest: "the log", AppendText: &text})
		if err != nil {
			refused++
			fmt.Fprintf(f, "refused %s %s\n", line, strings.ReplaceAll(err.Error(), "\n", " "))
			if _, rerr := agentView(w).Get("t/log", true); rerr != nil {
				fmt.Fprintf(f, "unreadable %s %s\n", line, strings.ReplaceAll(rerr.Error(), "\n", " "))
			}
			continue
		}
		refused = 0
		fmt.Fprintf(f, "ok %s %d\n", line, res.Version)
	}
	return f.Sync()
}

// Several processes append to one note while the file system fills up:
// each answer is what git holds. An append answered as refused is in no
// commit of the branch, every acknowledged one is, and reads answer all
// along.
func TestFullDiskAnswersAreWhatGitHolds(t *testing.T) {
	fixtures.RequireGit(t)
	if testing.Short() {
		t.Skip("fills a file system")
	}
	fs := smallFileSystem(t, 6<<20)
	dir := filepath.Join(fs, "acme")
	if err := Init(dir, ""); err != nil {
		t.Fatal(err)
	}
	w := openWorkspace(t, dir, false)
	put(t, w, "t/log", 0, "the log", "start\n")
	// Ballast takes most of the room: the writers fill the rest fast.
	ballast := make([]byte, 2<<20)
	if err := os.WriteFile(filepath.Join(fs, "ballast"), ballast, 0o644); err != nil {
		t.Fatal(err)
	}
	outs := t.TempDir()
	const procs = 3
	var cmds []*exec.Cmd
	for i := range procs {
		cmds = append(cmds, worker(t, "appender", dir, "BB_ID="+strconv.Itoa(i), "BB_N=3000", "BB_STOP=40",
			"BB_OUT="+filepath.Join(outs, strconv.Itoa(i))))
	}
	runWorkers(t, cmds)

	// What git holds, read with git's own CLI while the disk is still full.
	content := fixtures.Git(t, dir, "show", "HEAD:t/log.md")
	if strings.Contains(content, "blob: log.blob.md") {
		content = fixtures.Git(t, dir, "show", "HEAD:t/log.blob.md")
	}
	held := map[string]bool{}
	for _, l := range strings.Split(content, "\n") {
		held[l] = true
	}
	var acked, refused, unreadable int
	reasons := map[string]int{}
	for i := range procs {
		f, err := os.Open(filepath.Join(outs, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			what, rest, _ := strings.Cut(sc.Text(), " ")
			line, why, _ := strings.Cut(rest, " ")
			switch what {
			case "ok":
				acked++
				if !held[line] {
					t.Errorf("append %s was acknowledged (v%s) but git does not hold it", line, why)
				}
			case "refused":
				refused++
				reasons[why[strings.LastIndex(why, ": ")+2:]]++ // the cause, without paths
				if held[line] {
					t.Errorf("append %s was refused (%s) but git holds it", line, why)
				}
			case "unreadable":
				unreadable++
				if unreadable <= 3 {
					t.Errorf("a read after refused append %s failed: %s", line, why)
				}
			}
		}
		f.Close()
	}
	if refused == 0 {
		t.Fatalf("the file system never filled: %d appends acknowledged", acked)
	}
	t.Logf("%d appends acknowledged, %d refused, %d reads failed; refused with %v", acked, refused, unreadable, reasons)
	if n, err := agentView(w).Get("t/log", true); err != nil {
		t.Errorf("read on the full disk: %v", err)
	} else if !strings.Contains(n.Content, "start") {
		t.Errorf("read on the full disk: %q", n.Content)
	}
	// Room again: the board takes writes, and git is whole.
	if err := os.Remove(filepath.Join(fs, "ballast")); err != nil {
		t.Fatal(err)
	}
	text := "after\n"
	if _, err := agentView(w).Update(UpdateRequest{URI: "t/log", Digest: "the log", AppendText: &text}); err != nil && !errors.Is(err, ErrConflict) {
		t.Errorf("a write once there is room again: %v", err)
	}
	fixtures.Git(t, dir, "fsck", "--no-dangling")
}
