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
	"sync"

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
	zr, err := looseReader(f)
	if err != nil {
		return 0, nil, true, fmt.Errorf("loose object %s: %w", hex, err)
	}
	defer looseReaders.Put(zr)
	t, content, err := readLooseObject(zr)
	if err != nil {
		return 0, nil, true, fmt.Errorf("loose object %s: %w", hex, err)
	}
	return t, content, true, nil
}

// looseReaders keeps decompressors between loose objects: every write
// reads back trees the write before it left loose, and a new one is 40 KB.
var looseReaders sync.Pool

// looseReader is a decompressor reading f, kept from an earlier object
// where there is one.
func looseReader(f io.Reader) (io.ReadCloser, error) {
	if zr, ok := looseReaders.Get().(io.ReadCloser); ok {
		return zr, zr.(zlib.Resetter).Reset(f, nil)
	}
	return zlib.NewReader(f)
}

// readLooseObject reads a loose object, "<type> <size>\x00<content>": the
// header first, then the content into a slice of its size (read to its
// end, an object grew its buffer over and over), then its end, where zlib
// checks its checksum.
func readLooseObject(zr io.Reader) (plumbing.ObjectType, []byte, error) {
	var head [32]byte
	n, err := io.ReadFull(zr, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return 0, nil, err
	}
	nul := bytes.IndexByte(head[:n], 0)
	if nul < 0 {
		return 0, nil, errors.New("a bad header")
	}
	kind, sizeText, ok := bytes.Cut(head[:nul], []byte{' '})
	size, err := strconv.Atoi(string(sizeText))
	if !ok || err != nil || size < n-nul-1 {
		return 0, nil, errors.New("a bad header")
	}
	t, err := plumbing.ParseObjectType(string(kind))
	if err != nil {
		return 0, nil, err
	}
	var content []byte
	if size <= maxPresized {
		content = make([]byte, size)
		_, err = io.ReadFull(zr, content[copy(content, head[nul+1:n]):])
	} else {
		content, err = io.ReadAll(io.MultiReader(bytes.NewReader(head[nul+1:n]), io.LimitReader(zr, int64(size))))
	}
	if err != nil {
		return 0, nil, err
	}
	if len(content) != size {
		return 0, nil, errors.New("a bad header")
	}
	if m, err := io.ReadFull(zr, head[:1]); m != 0 || !errors.Is(err, io.EOF) {
		if err == nil || m != 0 {
			err = errors.New("a bad header")
		}
		return 0, nil, err
	}
	return t, content, nil
}

// maxPresized is the largest object read into a slice made for its size
// before its content is read: a header that lies cannot make more.
const maxPresized = 16 << 20
