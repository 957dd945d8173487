package gitver

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // git's index checksum is SHA-1.
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// git's split index (index-format.txt, "Split index"): most entries live in
// a shared index file, $GIT_DIR/sharedindex.<SHA-1>, written once; the index
// file itself holds only what changed since, and a `link` extension naming
// the shared file with two EWAH bitmaps over its positions: entries deleted,
// and entries replaced by the first entries of the index file (stored without
// their names). The remaining entries of the index file are added ones.
//
// At 100,000 notes the whole index is about 11 MB; rewriting and hashing it
// on every write was the largest cost that grew with the board. Split, a
// write rewrites a few kilobytes. git reads and keeps this form (since 2.1),
// and so does blackboard-mcp whoever wrote it.

// gitIndex is git's index in memory: whole (*rawIndex) or split
// (*splitIndex).
type gitIndex interface {
	// entry returns the bytes of path's stage-0 entry: stat data, then the
	// object name at 40..60.
	entry(path string) ([]byte, bool)
	// set records e (see rawIndex.set).
	set(e IndexEntry)
	// len is the number of entries.
	len() int
}

func (x *rawIndex) len() int { return len(x.offs) }

// When blackboard-mcp splits the index it writes (git's core.splitIndex
// unset): at this many entries, about 1 MB, the rewrite starts to cost a
// write more than a millisecond.
const splitMinEntries = 10_000

// defaultMaxPercentChange is git's splitIndex.maxPercentChange: when more
// entries than this share of the whole are not in the shared index, a new
// shared index is written.
const defaultMaxPercentChange = 20

// splitIndex is an index in split form. The shared index is never changed:
// it is parsed once and kept by its checksum.
type splitIndex struct {
	shared    *rawIndex
	sharedSum Hash
	replaced  map[int][]byte // shared position -> its new entry, with its name
	deleted   map[int]bool   // shared positions removed
	added     *rawIndex      // entries the shared index lacks, in order
}

func newSplitIndex(shared *rawIndex, sum Hash) *splitIndex {
	return &splitIndex{shared: shared, sharedSum: sum, replaced: map[int][]byte{}, deleted: map[int]bool{},
		added: emptyRawIndex()}
}

func (s *splitIndex) len() int { return s.shared.len() - len(s.deleted) + s.added.len() }

func (s *splitIndex) entry(path string) ([]byte, bool) {
	if i, ok := s.added.find(path, 0); ok {
		return s.added.buf[s.added.offs[i]:s.added.entryEnd(i)], true
	}
	i, ok := s.shared.find(path, 0)
	if !ok || s.deleted[i] {
		return nil, false
	}
	if e, ok := s.replaced[i]; ok {
		return e, true
	}
	return s.shared.buf[s.shared.offs[i]:s.shared.entryEnd(i)], true
}

func (s *splitIndex) set(e IndexEntry) {
	for stage := uint8(1); stage <= 3; stage++ {
		if i, ok := s.added.find(e.Path, stage); ok {
			s.added.removeAt(i)
		}
		if i, ok := s.shared.find(e.Path, stage); ok {
			delete(s.replaced, i)
			s.deleted[i] = true
		}
	}
	if _, ok := s.added.find(e.Path, 0); ok {
		s.added.set(e)
		return
	}
	i, inShared := s.shared.find(e.Path, 0)
	switch {
	case inShared && e.Info == nil:
		delete(s.replaced, i)
		s.deleted[i] = true
	case inShared && s.deleted[i]:
		delete(s.deleted, i)
		s.replaced[i] = encodeEntry(e.Path, 0, e.Blob, statFor(e.Info), 0)
	case inShared:
		r, ok := s.replaced[i]
		if !ok {
			r = bytes.Clone(s.shared.buf[s.shared.offs[i]:s.shared.entryEnd(i)])
		}
		putStat(r, statFor(e.Info), e.Blob)
		s.replaced[i] = r
	case e.Info != nil:
		s.added.set(e)
	}
}

// notShared is how many entries the index file itself holds.
func (s *splitIndex) notShared() int { return len(s.replaced) + s.added.len() }

// merged returns the whole index as one.
func (s *splitIndex) merged() *rawIndex {
	x := emptyRawIndex()
	x.version = max(s.shared.version, s.added.version)
	sh, ad := s.shared, s.added
	i, j := 0, 0
	for i < sh.len() || j < ad.len() {
		if i < sh.len() && s.deleted[i] {
			i++
			continue
		}
		takeAdded := i == sh.len()
		if !takeAdded && j < ad.len() {
			a, b := ad.names[j], sh.names[i]
			takeAdded = a < b || a == b && ad.stages[j] <= sh.stages[i]
			if a == b && ad.stages[j] == sh.stages[i] {
				i++ // the added entry stands for the shared one
			}
		}
		if takeAdded {
			x.appendEntry(ad.buf[ad.offs[j]:ad.entryEnd(j)], ad.names[j], ad.stages[j])
			j++
			continue
		}
		e, ok := s.replaced[i]
		if !ok {
			e = sh.buf[sh.offs[i]:sh.entryEnd(i)]
		} else if binary.BigEndian.Uint16(e[60:])&flagExtended != 0 {
			x.version = 3
		}
		x.appendEntry(e, sh.names[i], sh.stages[i])
		i++
	}
	return x
}

// appendEntry adds an entry known to sort after every other.
func (x *rawIndex) appendEntry(e []byte, name string, stage uint8) {
	x.offs = append(x.offs, len(x.buf))
	x.buf = append(x.buf, e...)
	x.names = append(x.names, name)
	x.stages = append(x.stages, stage)
}

// bytes returns the index file: the replacing entries without their names
// in the order of their positions, the added entries, the link extension and
// the checksum.
func (s *splitIndex) bytes() []byte {
	version := uint32(2)
	positions := slices.Sorted(maps.Keys(s.replaced))
	out := make([]byte, indexHeaderLen, indexHeaderLen+len(positions)*72+len(s.added.buf)+128)
	copy(out, "DIRC")
	for _, p := range positions {
		e := s.replaced[p]
		flags := binary.BigEndian.Uint16(e[60:])
		fixed := entryFixedLen
		if flags&flagExtended != 0 {
			fixed += 2
			version = 3
		}
		n := len(out)
		out = append(out, make([]byte, entryLen(fixed, 0))...)
		copy(out[n:], e[:fixed])
		binary.BigEndian.PutUint16(out[n+60:], flags&^flagNameMask)
	}
	out = append(out, s.added.buf[indexHeaderLen:]...)
	version = max(version, s.added.version)
	binary.BigEndian.PutUint32(out[4:], version)
	binary.BigEndian.PutUint32(out[8:], uint32(len(positions)+s.added.len()))

	deleted := slices.Sorted(maps.Keys(s.deleted))
	link := append([]byte(nil), s.sharedSum[:]...)
	link = appendEWAH(link, deleted)
	link = appendEWAH(link, positions)
	out = append(out, "link"...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(link)))
	out = append(out, link...)
	sum := sha1.Sum(out) //nolint:gosec // see the import.
	return append(out, sum[:]...)
}

// splitFrom reads the main file of a split index: x holds its entries, link
// the link extension's payload, shared the shared index it names.
func splitFrom(x *rawIndex, link []byte, shared func(Hash) (*rawIndex, error)) (*splitIndex, error) {
	if len(link) < sha1.Size {
		return nil, fmt.Errorf("%w: link extension too short", errIndexFormat)
	}
	var sum Hash
	copy(sum[:], link)
	base, err := shared(sum)
	if err != nil {
		return nil, err
	}
	s := newSplitIndex(base, sum)
	var deleted, replaced []int
	if rest := link[sha1.Size:]; len(rest) > 0 {
		d, n, err := readEWAH(rest)
		if err != nil {
			return nil, err
		}
		r, m, err := readEWAH(rest[n:])
		if err != nil {
			return nil, err
		}
		if n+m != len(rest) {
			return nil, fmt.Errorf("%w: garbage after the link extension's bitmaps", errIndexFormat)
		}
		deleted, replaced = d, r
	}
	if len(replaced) > x.len() {
		return nil, fmt.Errorf("%w: %d replaced entries, %d in the index file", errIndexFormat, len(replaced), x.len())
	}
	for _, p := range deleted {
		if p >= base.len() {
			return nil, fmt.Errorf("%w: deleted position %d past the shared index", errIndexFormat, p)
		}
		s.deleted[p] = true
	}
	for k, p := range replaced {
		if p >= base.len() || s.deleted[p] || x.names[k] != "" {
			return nil, fmt.Errorf("%w: bad replacement of shared position %d", errIndexFormat, p)
		}
		e := bytes.Clone(x.buf[x.offs[k]:x.entryEnd(k)])
		// The entry takes the shared entry's name back: it is kept whole in
		// memory, and written without it again.
		flags := binary.BigEndian.Uint16(e[60:])
		fixed := entryFixedLen
		if flags&flagExtended != 0 {
			fixed += 2
		}
		name := base.names[p]
		whole := append(make([]byte, 0, entryLen(fixed, len(name))), e[:fixed]...)
		whole = append(whole, name...)
		whole = append(whole, make([]byte, entryLen(fixed, len(name))-len(whole))...)
		nameLen := min(len(name), flagNameMask)
		binary.BigEndian.PutUint16(whole[60:], flags&^flagNameMask|uint16(nameLen))
		s.replaced[p] = whole
	}
	for k := len(replaced); k < x.len(); k++ {
		if x.names[k] == "" {
			return nil, fmt.Errorf("%w: an added entry without a name", errIndexFormat)
		}
		e := x.buf[x.offs[k]:x.entryEnd(k)]
		i, _ := s.added.find(x.names[k], x.stages[k])
		s.added.insertAt(i, bytes.Clone(e))
	}
	s.added.version = x.version
	return s, nil
}

// sharedIndexPath is where git keeps the shared index with checksum sum.
func (r *Repo) sharedIndexPath(sum Hash) string {
	return filepath.Join(r.gitDir, "sharedindex."+hex.EncodeToString(sum[:]))
}

// readSharedIndex parses the shared index named sum, checking that its
// content is what its name says.
func (r *Repo) readSharedIndex(sum Hash) (*rawIndex, error) {
	if r.shared != nil && r.shared.sum == sum {
		return r.shared.x, nil
	}
	path := r.sharedIndexPath(sum)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the git index links a shared index that cannot be read: %w", err)
	}
	if len(data) < sha1.Size || sha1.Sum(data[:len(data)-sha1.Size]) != [sha1.Size]byte(data[len(data)-sha1.Size:]) || //nolint:gosec // see the import.
		!bytes.Equal(data[len(data)-sha1.Size:], sum[:]) {
		return nil, fmt.Errorf("%s: %w: its checksum is not its name", path, errIndexFormat)
	}
	x, err := parseRawIndex(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.shared = &sharedCache{sum: sum, x: x}
	return x, nil
}

// sharedCache is the last shared index read or written.
type sharedCache struct {
	sum Hash
	x   *rawIndex
}

// writeSharedIndex writes x as a new shared index and returns the split
// index that starts from it. x must not be changed afterwards.
func (r *Repo) writeSharedIndex(x *rawIndex) (*splitIndex, error) {
	data := x.bytes()
	var sum Hash
	copy(sum[:], data[len(data)-sha1.Size:])
	path := r.sharedIndexPath(sum)
	if _, err := os.Stat(path); err != nil {
		f, err := os.CreateTemp(r.gitDir, "sharedindex_")
		if err != nil {
			return nil, err
		}
		_, err = f.Write(data)
		if err == nil && r.sync {
			// Unlike the index file, a shared index that lost its content
			// in a crash would break every git command: it is synced.
			err = r.syncer(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Chmod(f.Name(), 0o644)
		}
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			os.Remove(f.Name())
			return nil, err
		}
		if r.sync {
			if err := r.SyncDir(r.gitDir); err != nil {
				return nil, err
			}
		}
		r.removeExpiredSharedIndexes(sum)
	}
	r.shared = &sharedCache{sum: sum, x: x}
	return newSplitIndex(x, sum), nil
}

// removeExpiredSharedIndexes removes shared indexes other than current
// that nothing has read or written for splitIndex.sharedIndexExpire (two
// weeks unless configured), as git does when it writes a new one: git
// touches a shared index each time it reads it.
func (r *Repo) removeExpiredSharedIndexes(current Hash) {
	expire := 14 * 24 * time.Hour
	if c := r.config(); c != nil {
		switch v := strings.TrimSpace(c.Raw.Section("splitIndex").Option("sharedIndexExpire")); v {
		case "":
		case "never":
			return
		case "now":
			expire = 0
		default:
			if d, ok := approxAgo(v); ok {
				expire = d
			}
		}
	}
	matches, _ := filepath.Glob(filepath.Join(r.gitDir, "sharedindex.*"))
	keep := filepath.Base(r.sharedIndexPath(current))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && filepath.Base(m) != keep && time.Since(fi.ModTime()) > expire {
			os.Remove(m)
		}
	}
}

// approxAgo reads the few forms of git's approxidate a person writes for an
// expiry: "2.weeks.ago", "3 days ago", "1.hour.ago".
func approxAgo(v string) (time.Duration, bool) {
	f := strings.FieldsFunc(v, func(r rune) bool { return r == '.' || r == ' ' })
	if len(f) != 3 || f[2] != "ago" {
		return 0, false
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return 0, false
	}
	units := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour,
		"day": 24 * time.Hour, "week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour}
	u, ok := units[strings.TrimSuffix(f[1], "s")]
	return time.Duration(n) * u, ok
}

// splitPolicy is what git's config asks of the index's form: core.splitIndex
// (-1 unset, 0 false, 1 true) and splitIndex.maxPercentChange. It is read
// again only when the repository's config file changed (the person's own
// config is not read: the default then is to keep the form git left).
func (r *Repo) splitPolicy() (split, maxPercent int) {
	fi, err := os.Stat(filepath.Join(r.gitDir, "config"))
	if err != nil {
		return -1, defaultMaxPercentChange
	}
	if p := r.policy; p != nil && p.size == fi.Size() && p.mtime.Equal(fi.ModTime()) && p.ino == inode(fi) {
		return p.split, p.maxPercent
	}
	split, maxPercent = -1, defaultMaxPercentChange
	if c := r.config(); c != nil {
		if v := strings.ToLower(strings.TrimSpace(c.Raw.Section("core").Option("splitIndex"))); v != "" {
			split = 0
			if v == "true" || v == "yes" || v == "on" || v == "1" {
				split = 1
			}
		}
		if v, err := strconv.Atoi(strings.TrimSpace(c.Raw.Section("splitIndex").Option("maxPercentChange"))); err == nil &&
			v >= 0 && v <= 100 {
			maxPercent = v
		}
	}
	r.policy = &splitPolicyCache{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi), split: split, maxPercent: maxPercent}
	return split, maxPercent
}

// splitPolicyCache is splitPolicy's answer for one state of the config file.
type splitPolicyCache struct {
	size              int64
	mtime             time.Time
	ino               uint64
	split, maxPercent int
}

// encodeIndex returns the bytes to write for c's index, choosing its form
// as git would: kept as it is unless core.splitIndex says otherwise, split
// when the board is large enough for the rewrite to matter, and given a new
// shared index when too much of it lives in the index file.
func (r *Repo) encodeIndex(c *indexCache) ([]byte, error) {
	split, maxPercent := r.splitPolicy()
	switch idx := c.idx.(type) {
	case *rawIndex:
		if split == 0 || (split < 0 && idx.len() < splitMinEntries) {
			return idx.bytes(), nil
		}
		s, err := r.writeSharedIndex(idx)
		if err != nil {
			return nil, err
		}
		c.idx = s
		return s.bytes(), nil
	case *splitIndex:
		if split == 0 {
			x := idx.merged()
			c.idx = x
			return x.bytes(), nil
		}
		if maxPercent == 0 || idx.len()*maxPercent < idx.notShared()*100 && maxPercent < 100 {
			s, err := r.writeSharedIndex(idx.merged())
			if err != nil {
				return nil, err
			}
			c.idx = s
			return s.bytes(), nil
		}
		// git freshens the shared index whenever it writes the index file:
		// it is in use. One removed meanwhile is written again.
		now := time.Now()
		if err := os.Chtimes(r.sharedIndexPath(idx.sharedSum), now, now); err != nil {
			s, err := r.writeSharedIndex(idx.merged())
			if err != nil {
				return nil, err
			}
			c.idx = s
			return s.bytes(), nil
		}
		return idx.bytes(), nil
	}
	return nil, fmt.Errorf("%w: unknown form", errIndexFormat)
}

// appendEWAH appends git's EWAH serialization of the set bits at positions
// (ascending): bit size, word count, the words (each run-length word says how
// many all-zero words precede the literal words it counts), and the position
// of the last run-length word.
func appendEWAH(out []byte, positions []int) []byte {
	type literal struct {
		at   int // the word's index in the uncompressed bitmap
		bits uint64
	}
	var lits []literal
	for _, p := range positions {
		if len(lits) == 0 || lits[len(lits)-1].at != p/64 {
			lits = append(lits, literal{at: p / 64})
		}
		lits[len(lits)-1].bits |= 1 << (p % 64)
	}
	words := []uint64{0}
	rlw, next := 0, 0
	for k := 0; k < len(lits); {
		j := k + 1 // lits[k:j] are consecutive words
		for j < len(lits) && lits[j].at == lits[j-1].at+1 {
			j++
		}
		if k > 0 {
			words = append(words, 0)
			rlw = len(words) - 1
		}
		words[rlw] = uint64(lits[k].at-next)<<1 | uint64(j-k)<<33
		for _, l := range lits[k:j] {
			words = append(words, l.bits)
		}
		next = lits[j-1].at + 1
		k = j
	}
	bitSize := 0
	if len(positions) > 0 {
		bitSize = positions[len(positions)-1] + 1
	}
	out = binary.BigEndian.AppendUint32(out, uint32(bitSize))
	out = binary.BigEndian.AppendUint32(out, uint32(len(words)))
	for _, w := range words {
		out = binary.BigEndian.AppendUint64(out, w)
	}
	return binary.BigEndian.AppendUint32(out, uint32(rlw))
}

// readEWAH reads one EWAH bitmap and returns its set positions and the
// bytes it took.
func readEWAH(b []byte) (positions []int, n int, err error) {
	bad := fmt.Errorf("%w: corrupt bitmap in the link extension", errIndexFormat)
	if len(b) < 8 {
		return nil, 0, bad
	}
	count := int(binary.BigEndian.Uint32(b[4:]))
	n = 8 + 8*count + 4
	if count < 0 || len(b) < n {
		return nil, 0, bad
	}
	word := func(i int) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	const maxPositions = 1 << 26 // far past any index
	pos := 0
	for i := 0; i < count; {
		rlw := word(i)
		i++
		run := int(rlw >> 1 & 0xffffffff)
		lits := int(rlw >> 33)
		if rlw&1 != 0 {
			if len(positions)+run*64 > maxPositions {
				return nil, 0, bad
			}
			for k := range run * 64 {
				positions = append(positions, pos+k)
			}
		}
		pos += run * 64
		if i+lits > count {
			return nil, 0, bad
		}
		for range lits {
			w := word(i)
			i++
			for bit := 0; w != 0; bit++ {
				if w&1 != 0 {
					positions = append(positions, pos+bit)
				}
				w >>= 1
			}
			pos += 64
		}
	}
	if !sort.IntsAreSorted(positions) {
		return nil, 0, bad
	}
	return positions, n, nil
}
