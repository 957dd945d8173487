package gitver

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/gitver/pack"
	"github.com/blackboard-mcp/blackboard-mcp/gitver/packidx"
	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sync/errgroup"
)

// A group of commits built together (group commit) is written as one pack,
// git's own format (objects/pack/pack-<sha>.pack and its .idx, version 2),
// instead of five loose files a commit: creating a file costs the file
// system more than compressing a note, and a pack is two files for the
// whole group. It is pending at first: written unsynced under names git
// passes over, read by the program alone, and published (checked, synced,
// renamed to git's names) before the branch names its objects.
//
// Published packs are read in place (mapped.go). Pending ones, which only
// the program reads, are read here from their indexes, as long as they are
// small and hold whole objects (as the program writes them); anything else
// reopens go-git's storage, the last resort. Small packs are merged into
// one once there are many of them, so that they stay few (git's gc packs
// them all again anyway).
//
// This file is that policy; the bytes of a pack and of its index are
// gitver/pack's and gitver/packidx's.

const (
	// ownPackMaxObjects bounds the packs read here rather than by go-git.
	ownPackMaxObjects = 1 << 16
	// mergeSmallPacks is how many small packs are merged into one.
	mergeSmallPacks = 16
	// smallPackBytes is the size under which a pack counts as small.
	smallPackBytes = 1 << 20
	// packTempPrefix and idxTempPrefix start the names of a pack and its
	// index while they are written: git's own prefixes, with the program's
	// mark, so that only the program's are ever cleaned up here.
	packTempPrefix = "tmp_pack_bb_"
	idxTempPrefix  = "tmp_idx_bb_"
	// pendingPackPrefix starts the names of pending packs (see
	// pendingPack): a temporary file's prefix to git.
	pendingPackPrefix = "tmp_bb_"
)

// Pack file names, by the pack's checksum: a published pack is git's
// (pack-<sha>.pack and .idx); a pending one, written for writes not yet
// committed, has names git passes over, and is published (synced, then
// renamed to git's names) before the branch names its objects. After a
// power failure a pending pack may be cut short: no one but the program
// ever reads it, and it checks the checksums first.
func publishedPack(dir, sha string) (pack, idx string) {
	return filepath.Join(dir, "pack-"+sha+".pack"), filepath.Join(dir, "pack-"+sha+".idx")
}

func pendingPack(dir, sha string) (pack, idx string) {
	return filepath.Join(dir, pendingPackPrefix+sha+"_pack"), filepath.Join(dir, pendingPackPrefix+sha+"_idx")
}

// installPack writes a pack and its index into objects/pack under the
// names paths gives: each written under a temporary name first, then the
// index renamed into place and the pack after it (see PublishPacks).
// Synced, both files are, then the directory.
func (r *Repo) installPack(pack, idx []byte, sha string, paths func(dir, sha string) (string, string), synced bool) error {
	dir := filepath.Join(r.gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(prefix string, data []byte) (string, error) {
		f, err := os.CreateTemp(dir, prefix)
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil && synced {
			err = r.syncer(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(f.Name(), 0o444) // as git leaves packs
		}
		if err != nil {
			os.Remove(f.Name())
			return "", err
		}
		return f.Name(), nil
	}
	var tmpPack, tmpIdx string
	var g errgroup.Group
	g.Go(func() (err error) { tmpPack, err = write(packTempPrefix, pack); return err })
	g.Go(func() (err error) { tmpIdx, err = write(idxTempPrefix, idx); return err })
	err := g.Wait()
	packPath, idxPath := paths(dir, sha)
	if err == nil { // the index first (see PublishPacks)
		err = os.Rename(tmpIdx, idxPath)
	}
	if err == nil {
		err = os.Rename(tmpPack, packPath)
	}
	if err != nil {
		for _, t := range []string{tmpPack, tmpIdx} {
			if t != "" {
				os.Remove(t)
			}
		}
		return err
	}
	if synced && r.sync {
		return syncDir(dir)
	}
	return nil
}

// PublishPacks makes the pending packs shas (WriteStaged's) git's, and
// returns the names of the packs that hold their objects now, for
// ReleasePacks once the branch names them. Each is checked against its
// checksums first. One pending pack is synced and renamed to git's names
// (the index first: git finds a pack by its index and passes over an index
// without its pack, go-git by its pack, and fails on a pack without an
// index), then the directory synced. Several, as a chain that several
// processes built has, are copied into one pack, written and synced as
// one, and removed: two files to sync, to rename and later to merge,
// rather than two for each. A pack published already (and maybe merged
// since) is left alone; one a killed publisher left half renamed is
// finished.
func (r *Repo) PublishPacks(shas []string) ([]string, error) {
	dir := filepath.Join(r.gitDir, "objects", "pack")
	var whole, renamed []string // pending; half renamed by a killed publisher
	for _, sha := range shas {
		pack, idx := pendingPack(dir, sha)
		switch hasPack, hasIdx := fileExists(pack), fileExists(idx); {
		case !hasPack && !hasIdx:
			// published
		case !hasPack || !hasIdx:
			renamed = append(renamed, sha)
		case !slices.Contains(whole, sha):
			whole = append(whole, sha)
		}
	}
	var published []string
	if len(whole) > 1 {
		name, err := r.publishCombined(dir, whole)
		if err != nil {
			return nil, err
		}
		published = append(published, name)
	} else {
		renamed = append(renamed, whole...) // one: renamed, not copied
	}
	type move struct{ fromPack, fromIdx, toPack, toIdx string }
	var todo []move
	for _, sha := range renamed {
		// Written unsynced: after a power failure a pending pack may be
		// cut short or hold zeros. git must never be given one.
		if err := verifyPendingPack(dir, sha); err != nil {
			return nil, err
		}
		pack, idx := packFiles(dir, sha)
		toPack, toIdx := publishedPack(dir, sha)
		todo = append(todo, move{pack, idx, toPack, toIdx})
	}
	if len(todo) == 0 {
		return published, nil
	}
	if r.sync {
		var files []string
		for _, m := range todo {
			files = append(files, m.fromPack, m.fromIdx)
		}
		if err := syncAll(files); err != nil {
			return nil, fmt.Errorf("sync the pending packs: %w", err)
		}
	}
	for _, m := range todo {
		// Kept from git until the branch names its objects (ReleasePacks).
		sha := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m.toIdx), "pack-"), ".idx")
		if err := os.WriteFile(keepPath(dir, sha), []byte(ourKeep), 0o644); err != nil {
			return nil, err
		}
		published = append(published, sha)
	}
	for _, m := range todo {
		for _, mv := range [][2]string{{m.fromIdx, m.toIdx}, {m.fromPack, m.toPack}} {
			if mv[0] == mv[1] {
				continue
			}
			if err := os.Rename(mv[0], mv[1]); err != nil {
				return nil, err
			}
		}
	}
	if r.sync {
		return published, syncDir(dir)
	}
	return published, nil
}

// publishCombined copies the objects of the pending packs shas, each
// checked against its checksums, into one pack, kept (.keep) and synced
// under git's names, and then removes the pending packs: their objects are
// in the new one, which it names. Killed before the removal, the next
// publisher copies them again.
func (r *Repo) publishCombined(dir string, shas []string) (string, error) {
	var all [][]pack.RawEntry
	total := 0
	for _, sha := range shas {
		entries, err := pendingEntries(dir, sha)
		if err != nil {
			return "", err
		}
		all = append(all, entries)
		total += len(entries)
	}
	w := pack.NewWriter(total, nil)
	for _, entries := range all {
		for _, e := range entries {
			w.CopyEntry(e.Hash, e.Entry)
		}
	}
	packData, idx, name := w.Finish()
	// Kept from git until the branch names its objects (ReleasePacks).
	keep := keepPath(dir, name)
	if err := os.WriteFile(keep, []byte(ourKeep), 0o644); err != nil {
		return "", err
	}
	if err := r.installPack(packData, idx, name, publishedPack, true); err != nil {
		os.Remove(keep) // the pending packs still hold the objects
		return "", err
	}
	for _, sha := range shas {
		pack, idx := pendingPack(dir, sha)
		os.Remove(pack)
		os.Remove(idx)
	}
	return name, nil
}

// ourKeep is the content of the .keep files PublishPacks writes. A pack
// made git's before the branch names its objects holds objects nothing
// names yet, and a person's `git repack -a -d` run then would drop them
// with the pack; git leaves a pack with a .keep file alone.
const ourKeep = "blackboard-mcp: objects of writes being committed\n"

func keepPath(dir, sha string) string { return filepath.Join(dir, "pack-"+sha+".keep") }

// ourKeepFile reports whether the .keep file at p is one PublishPacks wrote.
func ourKeepFile(p string) bool {
	b, err := os.ReadFile(p)
	return err == nil && string(b) == ourKeep
}

// ReleasePacks lets git have the packs shas (PublishPacks'), once the
// branch names their objects: their .keep files go.
func (r *Repo) ReleasePacks(shas []string) {
	dir := filepath.Join(r.gitDir, "objects", "pack")
	for _, sha := range shas {
		if p := keepPath(dir, sha); ourKeepFile(p) {
			os.Remove(p)
		}
	}
}

// packDeflate compresses a pack's objects as loose ones are (see deflate).
func packDeflate(w io.Writer, t plumbing.ObjectType, content []byte) error {
	return deflate(w, t.String(), content)
}

// ErrPackDamaged says a pending pack is not whole.
var ErrPackDamaged = errors.New("a pending pack is damaged")

// verifyPendingPack checks a pending pack against its checksums: the
// pack's own, over every byte, its index's, and each entry's.
func verifyPendingPack(dir, sha string) error {
	_, err := pendingEntries(dir, sha)
	return err
}

// pendingEntries reads the pending pack sha whole, checks it against its
// checksums (ErrPackDamaged), and returns its entries as stored: whole
// objects, as the program writes them.
func pendingEntries(dir, sha string) ([]pack.RawEntry, error) {
	p, err := loadOwnPack(dir, sha, ownPackMaxObjects)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPackDamaged, err)
	}
	defer p.close()
	data, entries, err := p.entries()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPackDamaged, err)
	}
	if pack.Checksum(data).String() != sha {
		return nil, fmt.Errorf("%w: pack %s", ErrPackDamaged, sha)
	}
	return entries, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fileSize is the size of the file at p, or -1.
func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return -1
	}
	return fi.Size()
}

// ownPack is a small pack read here (see above), open.
type ownPack struct {
	name string // the pack's checksum, in hex
	*pack.Reader
}

// packFiles is where the pack sha and its index are now: each file under
// git's name once it has it, else under its pending one (publishing renames
// one file, then the other).
func packFiles(dir, sha string) (pack, idx string) {
	pack, idx = publishedPack(dir, sha)
	pendingPackPath, pendingIdxPath := pendingPack(dir, sha)
	if !fileExists(idx) {
		idx = pendingIdxPath
	}
	if !fileExists(pack) {
		pack = pendingPackPath
	}
	return pack, idx
}

// loadOwnPack reads the index of the pack sha in dir, published or
// pending, checks both files' checksums, and opens the pack. It refuses a
// pack of more than limit objects.
func loadOwnPack(dir, sha string, limit int) (*ownPack, error) {
	packPath, idxPath := packFiles(dir, sha)
	b, err := os.ReadFile(idxPath)
	if err != nil {
		return nil, err
	}
	idx, err := packidx.Parse(b, limit)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", sha, err)
	}
	r, err := pack.Open(packPath, idx)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", sha, err)
	}
	return &ownPack{name: sha, Reader: r}, nil
}

func (p *ownPack) close() { p.Close() }

// entries reads the pack whole and returns it and its entries as stored,
// each checked against its CRC (see pack.Reader.Entries).
func (p *ownPack) entries() ([]byte, []pack.RawEntry, error) {
	data, entries, err := p.Entries()
	if err != nil {
		return nil, nil, fmt.Errorf("pack %s: %w", p.name, err)
	}
	return data, entries, nil
}

// packSHAs lists the packs in dir by checksum: git's (pack-<sha>.idx),
// and pending ones too when withPending.
func packSHAs(dir string, withPending bool) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var shas []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".idx"); ok && strings.HasPrefix(n, "pack-") {
			shas = append(shas, strings.TrimPrefix(n, "pack-"))
		} else if n, ok := strings.CutSuffix(e.Name(), "_idx"); ok && withPending && strings.HasPrefix(n, pendingPackPrefix) {
			shas = append(shas, strings.TrimPrefix(n, pendingPackPrefix))
		}
	}
	return shas, err
}

// readOwnPacks looks for h in the packs go-git's storage did not find when
// it was opened, loading those that appeared since. ok is false when h is
// not there, or stored in a way go-git reads. The caller holds mu.
func (r *Repo) readOwnPacks(h Hash) (t plumbing.ObjectType, b []byte, ok bool) {
	if t, b, ok := r.readLoadedOwnPacks(h); ok {
		return t, b, true
	}
	dir := filepath.Join(r.gitDir, "objects", "pack")
	names, err := packSHAs(dir, true)
	if err != nil {
		return 0, nil, false
	}
	r.forgetGonePacks(names)
	loaded := false
	for _, name := range names {
		if r.known[name] || slices.ContainsFunc(r.own, func(p *ownPack) bool { return p.name == name }) {
			continue
		}
		if len(r.own) >= 4*mergeSmallPacks {
			break // many new packs: go-git's storage is opened again
		}
		p, err := loadOwnPack(dir, name, ownPackMaxObjects)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue // caught between its two renames: looked at again next time
		case err != nil:
			r.known[name] = true // go-git's to read, once reopened
			continue
		}
		r.own = append(r.own, p)
		loaded = true
	}
	if !loaded {
		return 0, nil, false
	}
	return r.readLoadedOwnPacks(h)
}

// forgetGonePacks closes the packs read here whose files are gone from
// the pack directory, which holds names: merged into a newer pack (loaded
// in their place), or dropped. Kept, they would fill the list until the
// storage is opened again, which reads every index of the board's packs.
// One listed by mistake (caught mid-rename) is loaded again at its next
// miss. The caller holds mu.
func (r *Repo) forgetGonePacks(names []string) {
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	r.own = slices.DeleteFunc(r.own, func(p *ownPack) bool {
		if present[p.name] {
			return false
		}
		p.close()
		return true
	})
}

// readLoadedOwnPacks looks for h in the packs read here already. They are
// the newest objects, most read (the pending writes, the commits to catch
// up with), and a look costs a search in memory: they come before go-git's
// storage, whose look at loose objects costs a system call. The caller
// holds mu.
func (r *Repo) readLoadedOwnPacks(h Hash) (plumbing.ObjectType, []byte, bool) {
	for _, p := range r.own {
		if i, found := p.Find(plumbing.Hash(h)); found {
			t, b, err := p.Read(i)
			return t, b, err == nil
		}
	}
	return 0, nil, false
}

// forgetOwnPacks closes the packs read here: go-git's storage, opened
// again, finds them. The caller holds mu.
func (r *Repo) forgetOwnPacks() {
	for _, p := range r.own {
		p.close()
	}
	r.own, r.known = nil, nil
}

// noteKnownPacks records, before the storage's first read, the packs it
// is about to find: go-git lists them at its first read. The caller holds
// mu.
func (r *Repo) noteKnownPacks() {
	if r.known != nil {
		return
	}
	r.known = map[string]bool{}
	dir := filepath.Join(r.gitDir, "objects", "pack")
	names, _ := packSHAs(dir, false)
	for _, n := range names {
		// go-git finds a pack by its pack file: a half-published one
		// (its index renamed, not the pack yet) is read here.
		if pack, _ := publishedPack(dir, n); fileExists(pack) {
			r.known[n] = true
		}
	}
}

// Stage keeps a built commit's objects in memory, readable by this Repo,
// to be written with those of other commits as one pack by WriteStaged.
func (r *Repo) Stage(p *PendingCommit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.staged == nil {
		r.staged = map[Hash]pendingObject{}
	}
	for _, o := range p.w.pending {
		if _, ok := r.staged[o.hash]; !ok {
			r.staged[o.hash] = o
			r.stagedOrder = append(r.stagedOrder, o.hash)
		}
	}
}

// WriteStaged writes the staged objects as one pending pack, unsynced, and
// forgets them; it returns the pack's checksum ("" for no objects), which
// PublishPacks takes before anything names them in git.
func (r *Repo) WriteStaged() (string, error) {
	r.mu.Lock()
	objs := make([]pendingObject, 0, len(r.stagedOrder))
	for _, h := range r.stagedOrder {
		objs = append(objs, r.staged[h])
	}
	r.mu.Unlock()
	sha := ""
	if len(objs) > 0 {
		p := pack.NewWriter(len(objs), packDeflate)
		for _, o := range objs {
			t, err := plumbing.ParseObjectType(o.kind)
			if err != nil {
				return "", err
			}
			if err := p.Add(plumbing.Hash(o.hash), t, o.content); err != nil {
				return "", err
			}
		}
		packData, idx, name := p.Finish()
		if err := r.installPack(packData, idx, name, pendingPack, false); err != nil {
			return "", err
		}
		sha = name
	}
	r.DropStaged()
	return sha, nil
}

// isStaged reports whether h is a staged object, not written yet.
func (r *Repo) isStaged(h Hash) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.staged[h]
	return ok
}

// DropStaged forgets the staged objects.
func (r *Repo) DropStaged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.staged, r.stagedOrder = nil, nil
}

// MergeSmallPacks merges small packs of whole objects into one when there
// are mergeSmallPacks or more, and removes them: the program writes one
// pack per group of commits, and git looks through every pack for an
// object. It merges the smallest packs, each up to twice the size of those
// smaller together (git's geometric repack, factor 2): a pack merged before
// is copied again only once as much came after it, so an object is copied
// a few times in all, not at every merge until its pack is no longer small.
// Packs git keeps for a reason of its own (.keep, bitmaps, promisor packs,
// cruft packs) are left alone. Concurrent readers that lose a pack find its
// objects in the merged one (readObject reopens). It runs under the
// caller's write lock, so two processes never merge at once.
func (r *Repo) MergeSmallPacks() error {
	dir := filepath.Join(r.gitDir, "objects", "pack")
	removeOldPackTemps(dir)
	names, err := packSHAs(dir, false)
	if err != nil || len(names) < mergeSmallPacks {
		return err
	}
	// Only the sizes first: this runs after every group.
	var candidates []string
	sizes := map[string]int64{}
	r.mu.Lock()
	for _, name := range names {
		if r.unmergeable[name] {
			continue
		}
		pack, _ := publishedPack(dir, name)
		if size := fileSize(pack); size >= 0 && size < smallPackBytes {
			candidates = append(candidates, name)
			sizes[name] = size
		}
	}
	r.mu.Unlock()
	unmergeable := func(name string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.unmergeable == nil {
			r.unmergeable = map[string]bool{}
		}
		r.unmergeable[name] = true
	}
	if len(candidates) < mergeSmallPacks {
		return nil
	}
	var eligible []string
	for _, name := range candidates {
		if ourKeepFile(keepPath(dir, name)) {
			continue // its writes are being committed
		}
		special := false
		for _, ext := range []string{".keep", ".bitmap", ".promisor", ".mtimes"} {
			if fileExists(filepath.Join(dir, "pack-"+name+ext)) {
				special = true
			}
		}
		if special {
			unmergeable(name)
			continue
		}
		eligible = append(eligible, name)
	}
	if len(eligible) < mergeSmallPacks {
		return nil
	}
	var small []*ownPack
	defer func() {
		for _, p := range small {
			p.close()
		}
	}()
	for _, name := range geometricPrefix(eligible, sizes) {
		p, err := loadOwnPack(dir, name, ownPackMaxObjects)
		if err != nil {
			unmergeable(name)
			continue
		}
		small = append(small, p)
	}
	total := 0
	for _, p := range small {
		total += p.Len()
	}
	w := pack.NewWriter(total, nil)
	var merged []*ownPack
	for _, p := range small {
		_, entries, err := p.entries()
		if err != nil {
			unmergeable(p.name)
			continue
		}
		for _, e := range entries {
			w.CopyEntry(e.Hash, e.Entry)
		}
		merged = append(merged, p)
	}
	if len(merged) < 2 {
		return nil
	}
	packData, idx, name := w.Finish()
	if err := r.installPack(packData, idx, name, publishedPack, true); err != nil {
		return err
	}
	for _, p := range merged {
		if p.name == name {
			continue
		}
		// The pack first: go-git finds a pack by it, and fails on one
		// without its index; git passes over an index without its pack.
		packPath, idxPath := publishedPack(dir, p.name)
		os.Remove(packPath)
		os.Remove(idxPath)
		os.Remove(filepath.Join(dir, "pack-"+p.name+".rev"))
	}
	return nil
}

// geometricPrefix is the packs to merge: by size, the smallest of names up
// to the largest that is at most twice the size of those smaller together.
// The packs above it each hold more than twice all smaller ones, and stay.
// (Stopping at the first pack too large would leave a tiny pack followed by
// many equal ones unmerged forever.)
func geometricPrefix(names []string, sizes map[string]int64) []string {
	names = slices.Clone(names)
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(sizes[a], sizes[b]) })
	n := min(len(names), 1)
	var sum int64
	for i, name := range names {
		if i > 0 && sizes[name] <= 2*sum {
			n = i + 1
		}
		sum += sizes[name]
	}
	return names[:n]
}

// removeOldPackTemps removes what killed writers of this program left in
// dir: temporary files of packs, and the .keep files of packs whose writes
// were never committed, an hour after they were made; pending packs whose
// writes were never committed after two weeks (git's own expiry for
// temporary files).
func removeOldPackTemps(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		age := time.Duration(0)
		switch {
		case strings.HasPrefix(e.Name(), packTempPrefix), strings.HasPrefix(e.Name(), idxTempPrefix):
			age = time.Hour
		case strings.HasSuffix(e.Name(), ".keep") && ourKeepFile(filepath.Join(dir, e.Name())):
			age = time.Hour // its writes were dropped
		case strings.HasPrefix(e.Name(), pendingPackPrefix):
			age = 14 * 24 * time.Hour
		default:
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > age {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
