package pack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blackboard-mcp/blackboard-mcp/fixtures"
	"github.com/go-git/go-git/v5/plumbing"
)

// deltaRepo makes a repository whose history rewrites the same notes many
// times, packed by git with deltas (offset deltas, or by name when
// byName), and returns its pack and index.
func deltaRepo(t *testing.T, byName bool) (dir, packPath, idxPath string) {
	t.Helper()
	fixtures.RequireGit(t)
	dir = t.TempDir()
	fixtures.Git(t, dir, "init", "-q", "-b", "main")
	rng := rand.New(rand.NewPCG(3, 4))
	lines := make([]string, 300)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of a note about the cache hit rate in eu-west", i)
	}
	for c := range 60 {
		for f := range 8 {
			lines[rng.IntN(len(lines))] = fmt.Sprintf("commit %d changed this line to %d", c, rng.Int())
			body := strings.Join(lines[f*30:], "\n")
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("note-%d.md", f)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fixtures.Git(t, dir, "add", "-A")
		fixtures.Git(t, dir, "commit", "-qm", "commit "+strconv.Itoa(c))
	}
	fixtures.Git(t, dir, "-c", "repack.usedeltabaseoffset="+strconv.FormatBool(!byName), "repack", "-adfq", "--depth=50", "--window=50")
	matches, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "pack-*.idx"))
	if len(matches) != 1 {
		t.Fatalf("packs: %v", matches)
	}
	idxPath = matches[0]
	return dir, strings.TrimSuffix(idxPath, ".idx") + ".pack", idxPath
}

// TestMappedReadsWhatGitWrote reads every object of packs git wrote with
// deltas of both kinds, and compares each with what git cat-file gives.
func TestMappedReadsWhatGitWrote(t *testing.T) {
	for _, byName := range []bool{false, true} {
		t.Run(fmt.Sprintf("ref-deltas=%v", byName), func(t *testing.T) {
			dir, packPath, idxPath := deltaRepo(t, byName)
			if verify := fixtures.Git(t, dir, "verify-pack", "-v", idxPath); !strings.Contains(verify, "chain length = 2") {
				t.Fatalf("git packed no delta chains:\n%.2000s", verify)
			}
			m, err := OpenMapped(packPath, idxPath)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			cmd := exec.Command("git", "-C", dir, "cat-file", "--batch-all-objects", "--batch")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(out)
			read := 0
			for {
				line, err := r.ReadString('\n')
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				var name, typ string
				var size int
				if _, err := fmt.Sscanf(line, "%s %s %d", &name, &typ, &size); err != nil {
					t.Fatalf("cat-file said %q", line)
				}
				want := make([]byte, size+1)
				if _, err := io.ReadFull(r, want); err != nil {
					t.Fatal(err)
				}
				gt, got, found, err := m.Read(plumbing.NewHash(name))
				if err != nil || !found {
					t.Fatalf("%s: found %v, %v", name, found, err)
				}
				if gt.String() != typ || !bytes.Equal(got, want[:size]) {
					t.Fatalf("%s: read a %s of %d bytes, git has a %s of %d", name, gt, len(got), typ, size)
				}
				read++
			}
			if err := cmd.Wait(); err != nil {
				t.Fatal(err)
			}
			if read != m.Len() || read < 500 {
				t.Fatalf("read %d objects of %d", read, m.Len())
			}
			if _, _, found, err := m.Read(plumbing.NewHash(strings.Repeat("ab", 20))); found || err != nil {
				t.Fatalf("a missing object: found %v, %v", found, err)
			}
		})
	}
}

// TestMappedRefusesDamage: an index cut short, a pack that is not the
// index's, and a damaged delta are errors, not panics.
func TestMappedRefusesDamage(t *testing.T) {
	_, packPath, idxPath := deltaRepo(t, false)
	idx, err := os.ReadFile(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	short := filepath.Join(dir, "short.idx")
	if err := os.WriteFile(short, idx[:len(idx)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMapped(packPath, short); err == nil {
		t.Error("an index cut short was opened")
	}
	other := filepath.Join(dir, "other.pack")
	pack, err := os.ReadFile(packPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(pack)
	bad[len(bad)-1] ^= 0xff
	if err := os.WriteFile(other, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenMapped(other, idxPath); err == nil {
		t.Error("a pack that is not the index's was opened")
	}
	for _, d := range [][]byte{nil, {0x05}, {0x05, 0x05, 0x90, 0x01}, {0x01, 0x02, 0x91, 0x00, 0x10}, {0x01, 0x01, 0x00}} {
		if _, err := applyDelta([]byte("x"), d); err == nil {
			t.Errorf("delta %x applied", d)
		}
	}
}
