package fsstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/fsstoretest"
)

// A person's `git pull` reads the branch and git's index as it begins,
// and writes them as it ends (a fetch, then a merge that stashes, merges
// and moves the branch), holding no lock in between: an agent's write
// meanwhile made it fail (`fatal: stash failed`, or `Cannot fast-forward
// your working tree`). A write that comes once the command has begun (git
// wrote FETCH_HEAD or ORIG_HEAD since the branch last moved) waits until
// the command has moved the branch, and is built on what it left.
func TestWriteWaitsForAPersonsMerge(t *testing.T) {
	fixtures.RequireGit(t)
	for _, file := range []string{"ORIG_HEAD", "FETCH_HEAD"} {
		t.Run(file, func(t *testing.T) {
			dir, _, v := openBoard(t)
			var acks fsstoretest.Acks
			body := "one"
			res, err := v.Update(fsstore.UpdateRequest{URI: "t/a", Digest: "first", Body: &body, ExpectVersion: ptr(0)})
			if err != nil {
				t.Fatal(err)
			}
			acks.Add(res.URI, res.Version, res.Digest)
			// The person's command begins, and moves the branch a moment
			// later (here: their commit of a note of their own).
			head := strings.TrimSpace(fixtures.Git(t, dir, "rev-parse", "HEAD"))
			if err := os.WriteFile(filepath.Join(dir, ".git", file), []byte(head+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			personDone := make(chan error, 1)
			go func() {
				time.Sleep(100 * time.Millisecond)
				p := filepath.Join(dir, "t", "b.md")
				if err := os.WriteFile(p, []byte("---\ndigest: the person's\n---\nbody\n"), 0o644); err != nil {
					personDone <- err
					return
				}
				out, err := fixtures.GitCmd(dir, "add", "t/b.md").CombinedOutput()
				if err == nil {
					out, err = fixtures.GitCmd(dir, "commit", "-q", "-m", "the person's command ends").CombinedOutput()
				}
				if err != nil {
					err = fmt.Errorf("%w: %s", err, out)
				}
				personDone <- err
			}()
			start := time.Now()
			body = "two"
			res, err = v.Update(fsstore.UpdateRequest{URI: "t/a", Digest: "second", Body: &body, ExpectVersion: ptr(1)})
			took := time.Since(start)
			if err != nil {
				t.Fatalf("the write beside the person's command: %v", err)
			}
			acks.Add(res.URI, res.Version, res.Digest)
			if err := <-personDone; err != nil {
				t.Fatalf("the person's command failed beside the write: %v", err)
			}
			if subjects := fixtures.Git(t, dir, "log", "--format=%s", "-2"); !strings.HasPrefix(subjects, "update t/a v2") ||
				!strings.Contains(subjects, "the person's command ends") {
				t.Fatalf("the write did not wait for the person's command (it took %v); the log:\n%s", took, subjects)
			}
			fsstoretest.CheckVersionsAgree(t, dir, acks.List())
		})
	}
}
