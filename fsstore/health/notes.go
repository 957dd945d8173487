package health

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/index"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/note"
	"github.com/blackboard-mcp/blackboard-mcp/gitver"
)

// noteInfo is what health needs of a note file's front matter.
type noteInfo struct {
	unread  bool   // its blob could not be read: nothing is known of it
	problem string // why it does not parse (parseNote's reason), "" when it does
	digest  string
	blob    string // the blob: field
}

func infoOf(content []byte) noteInfo {
	f, err := note.Parse(content)
	if err != nil {
		return noteInfo{problem: err.Error()}
	}
	return noteInfo{digest: f.Str(note.KeyDigest), blob: f.Str(note.KeyBlob)}
}

// readHeadNotes reads every blob of the last commit, checks that its content
// matches its name, and reads the notes' front matter. It returns the notes
// by path. The blobs are read by git cat-file --batch when the git CLI is
// installed (2.3 s for the 100,980 files of a board of 100,000 notes, three
// times faster than the program reads them one by one); what it cannot read
// is read here, to say why.
//
// Parsing the front matter of every note is most of the work (2 s of YAML
// at 100,000 notes), and the derived index parsed the same blobs: a note
// the index read from the same blob and found sound, with no blob file, is
// taken from the index (trustedReadings), and one in reparseOneIn of those
// is parsed again to check that the index's reading is what parsing gives.
func (c *checker) readHeadNotes(files map[string]gitver.Hash, reparseOneIn int, r *Report) map[string]noteInfo {
	notes := map[string]noteInfo{}
	paths := slices.Sorted(maps.Keys(files))
	trusted := c.trustedReadings(files)
	read := c.catFiles(paths, files, func(p string, content []byte) {
		if !note.IsNoteFile(p) {
			return
		}
		known, ok := trusted[p]
		if ok && rand.IntN(reparseOneIn) != 0 {
			notes[p] = known
			return
		}
		notes[p] = infoOf(content)
		if ok && notes[p] != known {
			r.Add(Finding{Check: "index", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the derived index read the note's front matter otherwise than it parses now (digest %q, problem %q)", known.digest, notes[p].problem),
				Fix:     fixReindex})
		}
	})
	for _, p := range paths[read:] {
		h := files[p]
		content, err := c.repo.ReadBlob(h)
		if err == nil && gitver.BlobHash(content) != h {
			err = errors.New("its content does not match its name")
		}
		if err != nil {
			r.Add(Finding{Check: "objects", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the last commit's blob %s of this file cannot be read: %v", h.Short(), err),
				Fix:     c.blobFix(p, h)})
			if note.IsNoteFile(p) {
				notes[p] = noteInfo{unread: true}
			}
			continue
		}
		if note.IsNoteFile(p) {
			notes[p] = infoOf(content)
		}
	}
	return notes
}

// trustedReadings is what the derived index read of the front matter of
// each note of files it read from the same blob: only notes it found sound
// and without a blob file, in the index and in files, whose reading is then
// whole (a sound note names no blob file when it has none). It is empty when
// the index cannot be read; every note is then parsed.
func (c *checker) trustedReadings(files map[string]gitver.Hash) map[string]noteInfo {
	readings, err := c.readings()
	if err != nil {
		return nil
	}
	out := make(map[string]noteInfo, len(readings))
	for p, rd := range readings {
		key := strings.TrimSuffix(p, ".md")
		if rd.NoteBlob != files[p] || rd.Problem != "" || rd.ContentPath != "" || strings.TrimSpace(rd.Digest) == "" {
			continue
		}
		if _, ok := files[key+".blob.md"]; ok {
			continue
		}
		if _, ok := files[key+".blob.tsv"]; ok {
			continue
		}
		out[p] = noteInfo{digest: rd.Digest}
	}
	return out
}

// catFiles reads the blobs of paths, in order, through git cat-file
// --batch, and hands each whose content matches its name to fn, which must
// not keep it. It returns
// how many it read so: all of them, or up to the first it could not (a
// missing or damaged object, git not installed), from which the caller
// reads on.
func (c *checker) catFiles(paths []string, files map[string]gitver.Hash, fn func(p string, content []byte)) int {
	gitPath, err := exec.LookPath("git")
	if err != nil || len(paths) == 0 {
		return 0
	}
	cmd := exec.Command(gitPath, "cat-file", "--batch")
	cmd.Dir = c.dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0
	}
	if err := cmd.Start(); err != nil {
		return 0
	}
	go func() {
		w := bufio.NewWriter(stdin)
		for _, p := range paths {
			fmt.Fprintln(w, files[p])
		}
		w.Flush()
		stdin.Close()
	}()
	out := bufio.NewReaderSize(stdout, 1<<16)
	var buf []byte // one buffer for every blob: a board's last commit may hold a gigabyte
	read := 0
	for _, p := range paths {
		// "<name> blob <size>\n<content>\n", or "<name> missing\n".
		line, err := out.ReadString('\n')
		fields := strings.Fields(line)
		if err != nil || len(fields) != 3 || fields[1] != "blob" {
			break
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			break
		}
		buf = slices.Grow(buf[:0], size+1)[:size+1]
		if _, err := io.ReadFull(out, buf); err != nil || gitver.BlobHash(buf[:size]) != files[p] {
			break
		}
		fn(p, buf[:size])
		read++
	}
	// Done, or stopped at what it cannot read: its exit says nothing more.
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return read
}

// blobFix says how to repair a damaged blob. When the work tree still holds
// its content, the object can be written again from the file; git itself
// would not overwrite the damaged loose object, so it goes first.
func (c *checker) blobFix(p string, h gitver.Hash) string {
	content, _, ok, err := c.ws.ReadFile(p)
	if err != nil || !ok || gitver.BlobHash(content) != h {
		return fixObjects
	}
	loose := filepath.Join(c.repo.GitDir(), "objects", h.String()[:2], h.String()[2:])
	if _, err := os.Stat(loose); err != nil {
		return fixObjects
	}
	return fmt.Sprintf("the file on disk still holds this content: delete the damaged object (rm -f %s), then write it again from the file (git hash-object -w %s)",
		c.ws.Rel(loose), p)
}

// diskFile is a note or blob file in the work tree.
type diskFile struct {
	blob gitver.Hash
	info *noteInfo // parsed when it is a note file that differs from the last commit
}

// checkDisk compares the work tree's note and blob files with the last
// commit, as `git status` would, and returns them by path. A file whose stat
// is what the index recorded when it last matched the committed blob is not
// read again.
func (c *checker) checkDisk(files map[string]gitver.Hash, r *Report) map[string]diskFile {
	disk := map[string]diskFile{}
	found, problems, listed := c.ws.WalkNotes()
	for _, p := range problems {
		severity := SeverityError
		if p.Minor {
			severity = SeverityWarning
		}
		r.Add(Finding{Check: "files", Severity: severity, Path: p.Path, Message: p.What, Fix: p.Fix})
	}
	if !listed {
		return disk
	}
	// A file git's index records with the committed blob and its stat is
	// not read either: a board whose files git checked out (a clone, a
	// restore) has no stats in the derived index until a server looks.
	byGit, err := c.repo.SameAsIndexed(found, files)
	if err != nil {
		r.Infof("git's index: not read (%v); every file is read instead", err)
	}
	err = c.ws.ReadIndex(func(s *index.Snapshot) error {
		stats, err := s.DiskAll()
		if err != nil {
			return err
		}
		for _, p := range slices.Sorted(maps.Keys(found)) {
			fi := found[p]
			committed := files[p]
			if d, ok := stats[p]; ok && !committed.IsZero() && d.Blob == committed && fsstore.SameStat(d, fi) || byGit[p] {
				disk[p] = diskFile{blob: committed}
				continue
			}
			content, _, exists, err := c.ws.ReadFile(p)
			if err != nil {
				r.Add(Finding{Check: "files", Severity: SeverityError, Path: p,
					Message: "cannot be read: " + message(err), Fix: "fix the file, or remove it"})
				continue
			}
			if !exists {
				continue
			}
			df := diskFile{blob: gitver.BlobHash(content)}
			if df.blob != committed && note.IsNoteFile(p) {
				info := infoOf(content)
				df.info = &info
			}
			disk[p] = df
		}
		return nil
	})
	if err != nil {
		r.Add(Finding{Check: "index", Severity: SeverityError, Path: note.IndexFile,
			Message: "the derived index cannot be read: " + err.Error(), Fix: fixReindex})
	}
	for _, p := range slices.Sorted(maps.Keys(disk)) {
		committed, ok := files[p]
		switch {
		case !ok:
			r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
				Message: "new on disk, not committed", Fix: fixUncommitted})
		case disk[p].blob != committed:
			r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
				Message: "differs from the last commit (an edit not committed yet)", Fix: fixUncommitted})
		}
	}
	return disk
}

// reportDeleted reports the last commit's notes and blob files that are
// gone from the work tree.
func (c *checker) reportDeleted(files map[string]gitver.Hash, notes map[string]noteInfo, disk map[string]diskFile, r *Report) {
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if _, ok := note.KeyOf(p); !ok {
			continue
		}
		if _, ok := disk[p]; !ok {
			if _, listed := notes[p]; listed || note.IsBlobFile(p) {
				r.Add(Finding{Check: "uncommitted", Severity: SeverityWarning, Path: p,
					Message: "deleted on disk but not in git",
					Fix:     "commit the deletion (git rm " + p + " and git commit), or bring the file back with git restore " + p})
			}
		}
	}
}

// checkNotes reports unreadable front matter, notes without a digest, blob
// files no note uses and notes whose blob file is missing: in the last
// commit (what agents read) and in the work tree (what the next commit
// holds). A problem only the work tree has says so.
func checkNotes(head map[string]noteInfo, disk map[string]diskFile, files map[string]gitver.Hash, r *Report) {
	headBlobs := map[string]bool{}
	for p := range files {
		if note.IsBlobFile(p) {
			headBlobs[p] = true
		}
	}
	committed := notesFindings(head, headBlobs)
	seen := map[Finding]bool{}
	for _, f := range committed {
		seen[f] = true
		r.Add(f)
	}

	diskNotes := map[string]noteInfo{}
	diskBlobs := map[string]bool{}
	for p, f := range disk {
		switch {
		case note.IsBlobFile(p):
			diskBlobs[p] = true
		case f.info != nil:
			diskNotes[p] = *f.info
		default:
			if info, ok := head[p]; ok {
				diskNotes[p] = info
			}
		}
	}
	for _, f := range notesFindings(diskNotes, diskBlobs) {
		if !seen[f] {
			f.Message += " (in the copy on disk, not committed)"
			r.Add(f)
		}
	}
}

func notesFindings(notes map[string]noteInfo, blobs map[string]bool) []Finding {
	var out []Finding
	for _, p := range slices.Sorted(maps.Keys(notes)) {
		n := notes[p]
		key, _ := note.KeyOf(p)
		switch {
		case n.unread:
			continue // reported under objects
		case n.problem != "":
			out = append(out, Finding{Check: "front_matter", Severity: SeverityError, Path: p,
				Message: "the front matter cannot be read: " + n.problem, Fix: fixFrontMatter})
			continue
		case strings.TrimSpace(n.digest) == "":
			out = append(out, Finding{Check: "digest", Severity: SeverityWarning, Path: p,
				Message: "the note has no digest",
				Fix:     "add a `digest:` line to its front matter (one line saying what the note holds) and commit it, or rewrite it with `blackboard-mcp put " + key + " --digest ...`"})
		}
		if n.blob == "" {
			continue
		}
		want := note.SiblingBlobPath(key, n.blob)
		switch {
		case want == "":
			out = append(out, Finding{Check: "blob", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the front matter names blob %q, which is not this note's own blob file", n.blob),
				Fix:     "set `blob:` to " + path.Base(key) + ".blob.md (or .blob.tsv for a table), the file beside the note, or remove it and put the content in the body"})
		case !blobs[want]:
			out = append(out, Finding{Check: "blob", Severity: SeverityError, Path: p,
				Message: fmt.Sprintf("the note's content is in blob %s, which is missing", want),
				Fix:     "bring the blob back from history (git log -- " + want + ", then git checkout COMMIT -- " + want + ") and commit it, or rewrite the note with its content (blackboard-mcp put " + key + ")"})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(blobs)) {
		key, _ := note.KeyOf(p)
		n, ok := notes[key+".md"]
		switch {
		case !ok:
			out = append(out, Finding{Check: "blob", Severity: SeverityWarning, Path: p,
				Message: fmt.Sprintf("a blob file with no note (%s.md does not exist)", key),
				Fix:     "delete it (git rm " + p + ") if it is not needed, or restore the note " + key + ".md from history"})
		case !n.unread && n.problem == "" && note.SiblingBlobPath(key, n.blob) != p:
			out = append(out, Finding{Check: "blob", Severity: SeverityWarning, Path: p,
				Message: fmt.Sprintf("a blob file no note uses: %s.md does not name it in `blob:`", key),
				Fix:     "delete it (git rm " + p + ") if it is not needed, or set `blob: " + path.Base(p) + "` in " + key + ".md"})
		}
	}
	return out
}

// message is an error's text for a finding, without the operation prefix.
func message(err error) string {
	var e *fsstore.Error
	if errors.As(err, &e) {
		return e.Msg
	}
	return err.Error()
}
