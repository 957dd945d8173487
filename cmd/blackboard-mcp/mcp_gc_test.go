package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
)

// TestMCPWritesDuringGC: git's own maintenance (`git gc`, which the server
// itself starts in the background past 6,700 loose objects or 50 packs, or a
// person's `git gc`) runs while agents write. It packs loose objects, removes
// the emptied objects/xx directories, and packs every pack again, removing
// the packs of grouped writes; no write may fail because of it.
func TestMCPWritesDuringGC(t *testing.T) {
	t.Parallel()
	dir := newWorkspaceDir(t)
	a := startMCPGo(t, dir, "agent-a")
	b := startMCPGo(t, dir, "agent-b")
	stop := make(chan struct{})
	var gcRuns int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			// An incremental repack, then a whole one: it packs the
			// packs of grouped writes again and removes them.
			for _, args := range [][]string{{"repack", "-d", "-q"}, {"prune-packed", "-q"}, {"repack", "-a", "-d", "-q"}} {
				_ = fixtures.GitCmd(dir, args...).Run()
			}
			gcRuns++
		}
	})
	var mu sync.Mutex
	var failures []string
	deadline := time.Now().Add(3 * time.Second)
	for w, s := range []*session{a, b} {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				ctx, cancel := contextWithTimeout()
				res, err := s.callTool(ctx, "update_state", map[string]any{"uri": fmt.Sprintf("gc/w%d-%d", w, i),
					"digest": "Note", "body": fmt.Sprintf("body %d %d", w, i), "expect_version": 0})
				cancel()
				if err != nil || res.isError {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%v %s", err, res.text))
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	a.closeClean()
	b.closeClean()
	reflog, _ := fixtures.GitCmd(dir, "reflog", "--format=%gs").Output()
	t.Logf("%d rounds of git repack -d, prune-packed and repack -a -d, %d failed writes, %d groups of writes committed together",
		gcRuns, len(failures), strings.Count(string(reflog), " writes\n"))
	checkWorkspace(t, dir)
	// A whole repack drops packed objects nothing names: the branch must
	// name none it dropped.
	fixtures.Git(t, dir, "fsck", "--strict", "--no-dangling")
	if len(failures) > 0 {
		logs := a.stderr.String() + b.stderr.String()
		if strings.Contains(logs, "tmp_obj_") {
			t.Errorf("regression: gitver/objects.go flush/writeLooseObject: between the os.Stat/os.Mkdir of objects/xx and "+
				"os.CreateTemp in it, git prune-packed (run by git gc, which gitver/maintenance.go itself starts) removes the "+
				"emptied directory, and the write fails as internal (\"open .git/objects/xx/tmp_obj_N: no such file or "+
				"directory\"); %d of the writes failed here", len(failures))
		}
		t.Errorf("%d writes failed while git packed objects: %s\nserver logs:\n%s", len(failures),
			strings.Join(failures[:min(3, len(failures))], "; "), logs)
	}
}
