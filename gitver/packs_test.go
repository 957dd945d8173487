package gitver_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// stageChain builds n commits on parent, each on the one before, staged
// (readable, not written) as a group's are, and returns the last.
func stageChain(t *testing.T, r *gitver.Repo, parent gitver.Hash, tag string, n int) gitver.Hash {
	t.Helper()
	for i := range n {
		content := []byte(fmt.Sprintf("%s note %d\n%s", tag, i, strings.Repeat("body ", i)))
		p, err := r.BuildCommit(gitver.CommitRequest{
			Parent: parent, Author: agent, Message: fmt.Sprintf("%s %d", tag, i),
			Changes: map[string]gitver.Hash{fmt.Sprintf("t/%s/n%d.md", tag, i): gitver.BlobHash(content)},
			Blobs:   [][]byte{content},
		})
		if err != nil {
			t.Fatal(err)
		}
		r.Stage(p)
		// The commit just staged is readable before it is written: the
		// next one is built on it.
		if _, err := r.ReadCommit(p.Hash); err != nil {
			t.Fatalf("a staged commit does not read: %v", err)
		}
		parent = p.Hash
	}
	return parent
}

// chainPack is stageChain with the group's objects then written as one
// pending pack, as a group's are: it returns the last commit and the
// pack's checksum.
func chainPack(t *testing.T, r *gitver.Repo, parent gitver.Hash, tag string, n int) (gitver.Hash, string) {
	t.Helper()
	tip := stageChain(t, r, parent, tag, n)
	sha, err := r.WriteStaged()
	if err != nil {
		t.Fatal(err)
	}
	return tip, sha
}

func packFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A group's commits are written as one pack that git reads as its own: the
// objects, the history, fsck; and no loose object is left for them.
func TestStagedCommitsWrittenAsOnePack(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	base := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
	loose := fixtures.GitOutput(t, dir, "count-objects")
	tip, sha := chainPack(t, r, base, "g", 8)
	// Pending: read here, passed over by git.
	if len(packFiles(t, dir)) != 0 {
		t.Fatal("git sees a pending pack")
	}
	if _, err := openRepo(t, dir).ReadCommit(tip); err != nil {
		t.Fatalf("a pending pack does not read: %v", err)
	}
	if _, err := r.PublishPacks([]string{sha}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.PublishPacks([]string{sha}); err != nil { // published already: nothing to do
		t.Fatal(err)
	}
	if err := r.UpdateBranch(base, tip, agent, "group"); err != nil {
		t.Fatal(err)
	}
	packs := packFiles(t, dir)
	if len(packs) != 1 {
		t.Fatalf("%d packs, want 1", len(packs))
	}
	if got := fixtures.GitOutput(t, dir, "count-objects"); got != loose {
		t.Errorf("loose objects went from %q to %q: the group's objects are not all in the pack", loose, got)
	}
	fixtures.Git(t, dir, "verify-pack", strings.TrimSuffix(packs[0], ".pack")+".idx")
	fsck(t, dir)
	if got := fixtures.GitOutput(t, dir, "rev-list", "--count", "HEAD"); got != "9\n" {
		t.Errorf("history holds %q commits, want 9", got)
	}
	if got := fixtures.GitOutput(t, dir, "cat-file", "-p", "HEAD:t/g/n7.md"); !strings.HasPrefix(got, "g note 7\n") {
		t.Errorf("the last note reads %q", got)
	}
	// Another process's Repo, opened before the pack was there, reads it.
	r2 := openRepo(t, dir)
	defer r2.Close()
	c := stageChain(t, r, tip, "h", 3)
	if _, err := r.WriteStaged(); err != nil {
		t.Fatal(err)
	}
	info, err := r2.ReadCommit(c)
	if err != nil {
		t.Fatalf("a pack written after the Repo was opened: %v", err)
	}
	if info.Message != "h 2" {
		t.Errorf("read %q", info.Message)
	}
	if b, err := r2.PathBlob(c, "t/h/n1.md"); err != nil || b.IsZero() {
		t.Errorf("PathBlob through the new pack: %v %v", b, err)
	}
}

// Dropped, staged objects are neither readable nor written.
func TestDroppedStagedObjectsAreGone(t *testing.T) {
	r, dir := newRepo(t)
	base := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
	tip := stageChain(t, r, base, "d", 2)
	r.DropStaged()
	if _, err := r.ReadCommit(tip); err == nil {
		t.Error("a dropped commit still reads")
	}
	if sha, err := r.WriteStaged(); err != nil || sha != "" {
		t.Fatalf("WriteStaged after a drop: %q, %v", sha, err)
	}
	if len(packFiles(t, dir)) != 0 {
		t.Error("a pack was written for nothing")
	}
}

// Many small packs are merged into one, which git reads, and the merged
// ones are gone; a Repo that knew them reads every object still. A pack
// git keeps (.keep) is left alone.
func TestSmallPacksAreMerged(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	tip := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
	reader := openRepo(t, dir)
	defer reader.Close()
	var tips []gitver.Hash
	for g := range 17 {
		next, sha := chainPack(t, r, tip, fmt.Sprintf("g%d", g), 3)
		if _, err := r.PublishPacks([]string{sha}); err != nil {
			t.Fatal(err)
		}
		if err := r.UpdateBranch(tip, next, agent, "group"); err != nil {
			t.Fatal(err)
		}
		r.ReleasePacks([]string{sha})
		tip = next
		tips = append(tips, tip)
		if _, err := reader.ReadCommit(tip); err != nil { // the reader loads each small pack
			t.Fatal(err)
		}
	}
	kept := packFiles(t, dir)[0]
	if err := os.WriteFile(strings.TrimSuffix(kept, ".pack")+".keep", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.MergeSmallPacks(); err != nil {
		t.Fatal(err)
	}
	packs := packFiles(t, dir)
	if len(packs) != 2 {
		t.Fatalf("%d packs after the merge, want the merged one and the kept one:\n%s", len(packs), strings.Join(packs, "\n"))
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the kept pack is gone: %v", err)
	}
	fsck(t, dir)
	for _, p := range packs {
		fixtures.Git(t, dir, "verify-pack", strings.TrimSuffix(p, ".pack")+".idx")
	}
	if got := fixtures.GitOutput(t, dir, "rev-list", "--count", "HEAD"); got != "52\n" {
		t.Errorf("history holds %q commits, want 52", got)
	}
	for i, c := range tips {
		for _, r := range []*gitver.Repo{r, reader} {
			if b, err := r.PathBlob(c, fmt.Sprintf("t/g%d/n2.md", i)); err != nil || b.IsZero() {
				t.Fatalf("group %d after the merge: %v", i, err)
			}
			if _, err := r.ReadBlob(mustPathBlob(t, r, c, fmt.Sprintf("t/g%d/n2.md", i))); err != nil {
				t.Fatalf("group %d's blob after the merge: %v", i, err)
			}
		}
	}
	// Fewer than the threshold: nothing to do.
	if err := r.MergeSmallPacks(); err != nil {
		t.Fatal(err)
	}
	if n := len(packFiles(t, dir)); n != 2 {
		t.Errorf("%d packs after a second merge, want 2", n)
	}
}

func mustPathBlob(t *testing.T, r *gitver.Repo, c gitver.Hash, p string) gitver.Hash {
	t.Helper()
	b, err := r.PathBlob(c, p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Packs git made (with deltas) are read by go-git and never merged here.
func TestPacksGitMadeAreLeftToGit(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	tip := commitAndMove(t, r, "base", map[string]string{"a.md": strings.Repeat("line of text\n", 200)})
	for i := range 40 {
		tip = commitAndMove(t, r, fmt.Sprint("edit ", i), map[string]string{"a.md": strings.Repeat("line of text\n", 200) + fmt.Sprint(i)})
		if i%2 == 1 {
			fixtures.Git(t, dir, "repack", "-d", "-q") // an incremental pack of the loose objects, with deltas
		}
	}
	if before := len(packFiles(t, dir)); before < 20 {
		t.Fatalf("git made %d packs", before)
	}
	if err := r.MergeSmallPacks(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dir)
	reader := openRepo(t, dir)
	defer reader.Close()
	if b, err := reader.ReadBlob(mustPathBlob(t, reader, tip, "a.md")); err != nil || !strings.HasSuffix(string(b), "39") {
		t.Fatalf("the last version reads %q, %v", b, err)
	}
}

// A pending pack cut short (a power failure before it was synced) is never
// given to git: publishing it fails with ErrPackDamaged, and git sees no
// pack.
func TestDamagedPendingPackIsNeverPublished(t *testing.T) {
	fixtures.RequireGit(t)
	for _, damage := range []string{"cut", "zeros"} {
		t.Run(damage, func(t *testing.T) {
			r, dir := newRepo(t)
			base := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
			_, sha := chainPack(t, r, base, "g", 3)
			pack := filepath.Join(dir, ".git", "objects", "pack", "tmp_bb_"+sha+"_pack")
			fi, err := os.Stat(pack)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(pack, 0o644); err != nil {
				t.Fatal(err)
			}
			switch damage {
			case "cut":
				err = os.Truncate(pack, fi.Size()/2)
			case "zeros":
				err = os.WriteFile(pack, make([]byte, fi.Size()), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.PublishPacks([]string{sha}); !errors.Is(err, gitver.ErrPackDamaged) {
				t.Fatalf("publishing a damaged pack: %v, want ErrPackDamaged", err)
			}
			if n := len(packFiles(t, dir)); n != 0 {
				t.Errorf("git sees %d packs", n)
			}
			fsck(t, dir)
		})
	}
}

// A publisher killed between its two renames leaves the index under git's
// name and the pack under the pending one: the pack is still pending, and
// the next publishing finishes it.
func TestHalfPublishedPackIsFinished(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	base := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
	tip, sha := chainPack(t, r, base, "g", 3)
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	if err := os.Rename(filepath.Join(packDir, "tmp_bb_"+sha+"_idx"), filepath.Join(packDir, "pack-"+sha+".idx")); err != nil {
		t.Fatal(err)
	}
	if got := r.StillPending([]string{sha}); len(got) != 1 {
		t.Fatalf("a half-published pack is not pending: %v", got)
	}
	if _, err := openRepo(t, dir).ReadCommit(tip); err != nil {
		t.Fatalf("a half-published pack does not read: %v", err)
	}
	if _, err := r.PublishPacks([]string{sha}); err != nil {
		t.Fatal(err)
	}
	if got := r.StillPending([]string{sha}); len(got) != 0 {
		t.Fatalf("still pending after publishing: %v", got)
	}
	if err := r.UpdateBranch(base, tip, agent, "group"); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "verify-pack", filepath.Join(packDir, "pack-"+sha+".idx"))
	fsck(t, dir)
}

// A pack made git's before the branch names its objects is kept from a
// person's `git repack -a -d`, which drops packed objects nothing names;
// once the branch names them and the pack is released, git packs them as
// any others.
func TestPublishedPackKeptFromGitUntilReleased(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	tip := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
	next, sha := chainPack(t, r, tip, "g", 3)
	if _, err := r.PublishPacks([]string{sha}); err != nil {
		t.Fatal(err)
	}
	fixtures.Git(t, dir, "repack", "-a", "-d", "-q")
	if fixtures.GitCmd(dir, "cat-file", "-e", next.String()).Run() != nil {
		t.Fatal("git repack -a -d dropped the objects of writes being committed")
	}
	if err := r.UpdateBranch(tip, next, agent, "group"); err != nil {
		t.Fatal(err)
	}
	r.ReleasePacks([]string{sha})
	keeps, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.keep"))
	if err != nil || len(keeps) != 0 {
		t.Fatalf("keep files left: %v %v", keeps, err)
	}
	fixtures.Git(t, dir, "repack", "-a", "-d", "-q")
	if n := len(packFiles(t, dir)); n != 1 {
		t.Errorf("%d packs after a whole repack, want 1", n)
	}
	fsck(t, dir)
	if got := fixtures.GitOutput(t, dir, "rev-list", "--count", "HEAD"); got != "4\n" {
		t.Errorf("history holds %q commits, want 4", got)
	}
}

// The pending packs of a chain that several processes built are published
// as one pack: their objects copied into it, kept from git until
// released, and the pending packs gone. Another Repo, which read them
// pending, reads every object still. One damaged pack among them fails the
// whole publishing, and removes nothing.
func TestPendingPacksPublishedAsOne(t *testing.T) {
	fixtures.RequireGit(t)
	r, dir := newRepo(t)
	base := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
	reader := openRepo(t, dir)
	defer reader.Close()
	tip := base
	var shas []string
	for g := range 3 {
		next, sha := chainPack(t, r, tip, fmt.Sprintf("g%d", g), 2)
		if _, err := reader.ReadCommit(next); err != nil {
			t.Fatal(err)
		}
		tip, shas = next, append(shas, sha)
	}
	published, err := r.PublishPacks(shas)
	if err != nil {
		t.Fatal(err)
	}
	if len(published) != 1 || slices.Contains(shas, published[0]) {
		t.Fatalf("published as %v, want one new pack", published)
	}
	if still := r.StillPending(shas); len(still) != 0 {
		t.Errorf("still pending: %v", still)
	}
	if pending, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "tmp_*")); len(pending) != 0 {
		t.Errorf("pending files left: %v", pending)
	}
	fixtures.Git(t, dir, "repack", "-a", "-d", "-q") // the pack is kept: nothing names its objects yet
	if fixtures.GitCmd(dir, "cat-file", "-e", tip.String()).Run() != nil {
		t.Fatal("git repack -a -d dropped the objects of writes being committed")
	}
	if err := r.UpdateBranch(base, tip, agent, "group"); err != nil {
		t.Fatal(err)
	}
	r.ReleasePacks(published)
	if keeps, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.keep")); len(keeps) != 0 {
		t.Errorf("keep files left: %v", keeps)
	}
	fsck(t, dir)
	if got := fixtures.GitOutput(t, dir, "rev-list", "--count", "HEAD"); got != "7\n" {
		t.Errorf("history holds %q commits, want 7", got)
	}
	for _, c := range []gitver.Hash{tip, base} {
		if _, err := reader.ReadCommit(c); err != nil {
			t.Errorf("a Repo that read the pending packs: %v", err)
		}
	}
	if b, err := reader.PathBlob(tip, "t/g1/n1.md"); err != nil || b.IsZero() {
		t.Errorf("a blob of the middle pack: %v %v", b, err)
	}

	t.Run("damaged", func(t *testing.T) {
		r, dir := newRepo(t)
		base := commitAndMove(t, r, "base", map[string]string{"a.md": "a"})
		next, first := chainPack(t, r, base, "g", 2)
		_, second := chainPack(t, r, next, "h", 2)
		pack := filepath.Join(dir, ".git", "objects", "pack", "tmp_bb_"+second+"_pack")
		if err := os.Chmod(pack, 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(pack)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(pack, fi.Size()-30); err != nil {
			t.Fatal(err)
		}
		if _, err := r.PublishPacks([]string{first, second}); !errors.Is(err, gitver.ErrPackDamaged) {
			t.Fatalf("publishing with a damaged pack: %v, want ErrPackDamaged", err)
		}
		if n := len(packFiles(t, dir)); n != 0 {
			t.Errorf("git sees %d packs", n)
		}
		if still := r.StillPending([]string{first, second}); len(still) != 2 {
			t.Errorf("pending after the failure: %v, want both", still)
		}
		fsck(t, dir)
	})
}
