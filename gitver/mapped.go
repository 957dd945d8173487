package gitver

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/blackboard-mcp/blackboard-mcp/gitver/pack"
	"github.com/go-git/go-git/v5/plumbing"
)

// Objects are read here, in place: the board's published packs through
// their indexes mapped into memory (gitver/pack.Mapped), and loose objects
// from their files. A server's memory then does not grow with the board's
// history: go-git's storage keeps every object name of every pack in the
// heap, and a map from offsets to names beside them, about 120 bytes an
// object, 60 MB on a board of 100,000 notes and as many commits. go-git's
// storage stays as the last resort, for what is read nowhere here (objects
// of alternates, a pack of an older format).

// mappedPack is a published pack, open.
type mappedPack struct {
	name string // the pack's checksum, in hex
	*pack.Mapped
}

// readMapped looks for h in the published packs, listing them first if
// they were not yet. The caller holds mu.
func (r *Repo) readMapped(h Hash) (plumbing.ObjectType, []byte, bool) {
	if r.mapped == nil {
		r.refreshMapped()
	}
	for _, p := range r.mapped {
		t, b, found, err := p.Read(plumbing.Hash(h))
		if found && err == nil {
			return t, b, true
		}
	}
	return 0, nil, false
}

// refreshMapped opens the published packs not open yet and closes those
// whose files are gone (a repack or a merge replaced them). A pack whose
// index is there and not its pack file (published half way) is left for
// the next look. The caller holds mu.
func (r *Repo) refreshMapped() {
	dir := filepath.Join(r.gitDir, "objects", "pack")
	names, _ := packSHAs(dir, false)
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	kept := r.mapped[:0]
	open := map[string]bool{}
	for _, p := range r.mapped {
		if present[p.name] {
			kept = append(kept, p)
			open[p.name] = true
			continue
		}
		p.Close()
	}
	r.mapped = kept
	for _, n := range names {
		if open[n] {
			continue
		}
		packPath, idxPath := publishedPack(dir, n)
		m, err := pack.OpenMapped(packPath, idxPath)
		if err != nil {
			continue // go-git's to read, or not whole yet
		}
		r.mapped = append(r.mapped, &mappedPack{name: n, Mapped: m})
	}
	if r.mapped == nil {
		r.mapped = []*mappedPack{} // listed, and none
	}
}

// closeMapped closes the packs read in place. The caller holds mu.
func (r *Repo) closeMapped() {
	for _, p := range r.mapped {
		p.Close()
	}
	r.mapped = nil
}

// readLoose reads h from its loose object file, if it has one.
func (r *Repo) readLoose(h Hash) (plumbing.ObjectType, []byte, bool, error) {
	hex := h.String()
	f, err := os.Open(r.loosePath(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, false, nil
	}
	if err != nil {
		return 0, nil, false, err
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return 0, nil, true, fmt.Errorf("loose object %s: %w", hex, err)
	}
	defer zr.Close()
	b, err := io.ReadAll(zr)
	if err != nil {
		return 0, nil, true, fmt.Errorf("loose object %s: %w", hex, err)
	}
	// "<type> <size>\x00<content>"
	head, content, ok := bytes.Cut(b, []byte{0})
	kind, size, ok2 := bytes.Cut(head, []byte{' '})
	n, err := strconv.Atoi(string(size))
	if !ok || !ok2 || err != nil || n != len(content) {
		return 0, nil, true, fmt.Errorf("loose object %s: a bad header", hex)
	}
	t, err := plumbing.ParseObjectType(string(kind))
	if err != nil {
		return 0, nil, true, fmt.Errorf("loose object %s: %w", hex, err)
	}
	return t, content, true, nil
}
