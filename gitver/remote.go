package gitver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/config"
)

// Network operations go through the C git CLI, so that a person's ssh keys,
// ssh config, credential helpers and proxies work unchanged. git never
// prompts here: it runs in a session of its own with no terminal and no
// standard input, with GIT_TERMINAL_PROMPT=0, and ssh in batch mode unless
// the person configured ssh themselves; every operation has a timeout.

// ErrRemoteMoved means the remote's branch is not where the push built on:
// someone else's push came first. Fetch, and build on what it has.
var ErrRemoteMoved = errors.New("the remote's branch moved")

// ErrRemoteRewritten means the remote's branch no longer holds the commit
// this clone last fetched from it: its history was rewritten (a
// force-push).
var ErrRemoteRewritten = errors.New("the remote's history was rewritten")

// ErrRemoteUnavailable means the remote could not be reached or refused the
// operation for another reason (no network, a timeout, credentials, a hook).
var ErrRemoteUnavailable = errors.New("the remote is unavailable")

// RemoteTimeout bounds every network operation.
const RemoteTimeout = 20 * time.Second

// RemoteError is a failed network operation, with what git said.
type RemoteError struct {
	Op     string // "fetch", "push"
	Remote string
	Err    error  // ErrRemoteMoved, ErrRemoteRewritten or ErrRemoteUnavailable
	Stderr string // git's own words, trimmed
}

func (e *RemoteError) Error() string {
	msg := fmt.Sprintf("%s %s: %v", e.Op, Redact(e.Remote), e.Err)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *RemoteError) Unwrap() error { return e.Err }

// gitCommand runs the C git CLI in the repository, never prompting, and
// returns its standard output.
func gitCommand(ctx context.Context, dir string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "GIT_ASKPASS=", "SSH_ASKPASS=")
	if network[args[0]] && os.Getenv("GIT_SSH_COMMAND") == "" && os.Getenv("GIT_SSH") == "" && !sshConfigured(dir) {
		// The person's ssh, in batch mode: it fails rather than ask.
		cmd.Env = append(cmd.Env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes -o ConnectTimeout=10", "GIT_SSH_VARIANT=ssh")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // no controlling terminal to prompt on
	cmd.WaitDelay = time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out: %w", ctx.Err())
	}
	return out.String(), strings.TrimSpace(errOut.String()), err
}

// network are the git commands that may reach a remote.
var network = map[string]bool{"fetch": true, "push": true, "clone": true, "ls-remote": true}

// sshConfigured reports whether git's config, as seen from dir, sets
// core.sshCommand. The answer is kept while git's config files stay as they
// were: a busy board fetches and pushes several times a second, and asking
// git costs a process each time.
func sshConfigured(dir string) bool {
	stamp := configStamp(dir)
	sshConfig.mu.Lock()
	known, ok := sshConfig.known[dir]
	sshConfig.mu.Unlock()
	if ok && known.stamp == stamp {
		return known.has
	}
	cmd := exec.Command("git", "config", "--get", "core.sshCommand")
	cmd.Dir = dir
	has := cmd.Run() == nil
	sshConfig.mu.Lock()
	if sshConfig.known == nil || len(sshConfig.known) > 64 {
		sshConfig.known = map[string]sshConfigAnswer{}
	}
	sshConfig.known[dir] = sshConfigAnswer{stamp, has}
	sshConfig.mu.Unlock()
	return has
}

type sshConfigAnswer struct {
	stamp string
	has   bool
}

var sshConfig struct {
	mu    sync.Mutex
	known map[string]sshConfigAnswer
}

// configStamp names the state of the config files git reads from dir: the
// repository's, the person's and the system's (files they include are not
// followed).
func configStamp(dir string) string {
	files := []string{filepath.Join(dir, ".git", "config"), filepath.Join(dir, "config")}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" {
		files = append(files, g)
	} else {
		home, _ := os.UserHomeDir()
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" && home != "" {
			xdg = filepath.Join(home, ".config")
		}
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(xdg, "git", "config"))
	}
	if s := os.Getenv("GIT_CONFIG_SYSTEM"); s != "" {
		files = append(files, s)
	} else {
		files = append(files, "/etc/gitconfig")
	}
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s:", f)
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d.%d", st.ModTime().UnixNano(), st.Size())
		}
		b.WriteByte(';')
	}
	b.WriteString(os.Getenv("GIT_CONFIG_NOSYSTEM"))
	return b.String()
}

// Upstream returns the remote the board's branch follows
// (branch.<name>.remote in the repository's config), "" when it has none.
// It reads the config file itself: every process that opens the board asks.
func (r *Repo) Upstream() string {
	c := r.config()
	if c == nil {
		return ""
	}
	if b := c.Branches[strings.TrimPrefix(r.branch, "refs/heads/")]; b != nil {
		return b.Remote
	}
	return ""
}

// RemoteURL returns the URL of a remote, "" when there is none.
func (r *Repo) RemoteURL(remote string) string {
	c := r.config()
	if c == nil || c.Remotes[remote] == nil || len(c.Remotes[remote].URLs) == 0 {
		return ""
	}
	return c.Remotes[remote].URLs[0]
}

// config reads the repository's own config file, nil when it cannot.
func (r *Repo) config() *config.Config {
	f, err := os.Open(filepath.Join(r.gitDir, "config"))
	if err != nil {
		return nil
	}
	defer f.Close()
	c, err := config.ReadConfig(f)
	if err != nil {
		return nil
	}
	return c
}

// SetUpstream makes the board's branch follow url as the remote named
// remote, adding or changing it.
func (r *Repo) SetUpstream(remote, url string) error {
	ctx := context.Background()
	if r.RemoteURL(remote) == "" {
		if _, stderr, err := gitCommand(ctx, r.dir, "remote", "add", remote, url); err != nil {
			return fmt.Errorf("git remote add %s: %w: %s", remote, err, stderr)
		}
	} else if _, stderr, err := gitCommand(ctx, r.dir, "remote", "set-url", remote, url); err != nil {
		return fmt.Errorf("git remote set-url %s: %w: %s", remote, err, stderr)
	}
	branch := strings.TrimPrefix(r.branch, "refs/heads/")
	for _, kv := range [][2]string{{"branch." + branch + ".remote", remote}, {"branch." + branch + ".merge", r.branch}} {
		if _, stderr, err := gitCommand(ctx, r.dir, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("git config %s: %w: %s", kv[0], err, stderr)
		}
	}
	return nil
}

// TrackingRef is the ref that holds what this clone last knew of the
// remote's branch: refs/remotes/<remote>/<branch>.
func (r *Repo) TrackingRef(remote string) string {
	return "refs/remotes/" + remote + "/" + strings.TrimPrefix(r.branch, "refs/heads/")
}

// Tracking returns the commit of the tracking ref, zero when there is none.
func (r *Repo) Tracking(remote string) (Hash, error) {
	return r.readRef(r.TrackingRef(remote))
}

// Fetch brings the remote's branch into its tracking ref. The tracking ref
// only moves forward: a remote whose branch no longer holds what it held is
// ErrRemoteRewritten, and the tracking ref keeps the old commit. A remote
// whose branch does not exist yet leaves the tracking ref as it is.
func (r *Repo) Fetch(ctx context.Context, remote string) error {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	branch := strings.TrimPrefix(r.branch, "refs/heads/")
	var stderr string
	var err error
	for range 5 {
		// Not --quiet: git then says nothing of a rejected update.
		// No auto maintenance: MaybeMaintain packs the clone's objects,
		// and a busy board fetches several times a second.
		_, stderr, err = gitCommand(ctx, r.dir, "fetch", "--no-progress", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance", remote,
			r.branch+":"+r.TrackingRef(remote), turnsRefspec(remote))
		// Another fetch (a server's background one) moved the tracking
		// ref meanwhile: fetch again.
		if err == nil || !strings.Contains(stderr, "unable to update local ref") || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	switch {
	case err == nil:
		r.synced()
		return nil
	case strings.Contains(stderr, "non-fast-forward") || strings.Contains(stderr, "(rejected)"):
		return &RemoteError{Op: "fetch", Remote: remote, Err: ErrRemoteRewritten, Stderr: firstLines(stderr, err)}
	case strings.Contains(stderr, "couldn't find remote ref "+r.branch) || strings.Contains(stderr, "couldn't find remote ref "+branch):
		return nil // an empty remote
	}
	return &RemoteError{Op: "fetch", Remote: remote, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr, err)}
}

// Push offers commit to the remote as its branch, on the condition that
// the remote's branch is still where the tracking ref says (a lease; zero:
// that it does not exist). The caller makes sure commit holds the tracking
// ref's commit, so the push only ever moves the remote forward; the lease
// makes any other move of the remote since the last fetch, forward or a
// rewrite, a refusal: ErrRemoteMoved, to be told apart by a fetch. The
// tracking ref moves to commit when the remote took it.
func (r *Repo) Push(ctx context.Context, remote string, commit Hash) error {
	expected, err := r.Tracking(remote)
	if err != nil {
		return err
	}
	return r.push(ctx, remote, commit, expected, nil)
}

// PushTaking is Push by a clone that announced it waits for its turn
// (turns.go): the push also says, on the turns ref, that the clone took
// its turn, so that the others no longer hold their pushes back for it.
func (r *Repo) PushTaking(ctx context.Context, remote string, commit Hash, t Turn) error {
	expected, err := r.Tracking(remote)
	if err != nil {
		return err
	}
	t.Taken = true
	return r.push(ctx, remote, commit, expected, &t)
}

// PushOver is Push with the lease given: the remote's branch must be at
// expected.
func (r *Repo) PushOver(ctx context.Context, remote string, commit, expected Hash) error {
	return r.push(ctx, remote, commit, expected, nil)
}

// push pushes commit as the remote's branch, with the lease expected, and
// the turns ref at the turn this clone knows, or at taken, a turn that
// follows it.
func (r *Repo) push(ctx context.Context, remote string, commit, expected Hash, taken *Turn) error {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	lease := "--force-with-lease=" + r.branch + ":"
	if !expected.IsZero() {
		lease += expected.String()
	}
	args := []string{"push", "--porcelain", "--quiet", lease}
	refspecs := []string{commit.String() + ":" + r.branch}
	if !r.noAtomic.Load() {
		// Refused, too, when a clone announced since the last fetch that
		// it waits for its turn (turns.go).
		turnLease, turnRefspec, err := r.turnLease(remote, taken)
		if err != nil {
			return err
		}
		args = append(args, "--atomic", turnLease)
		refspecs = append(refspecs, turnRefspec)
	}
	r.stamp(pushedName)
	stdout, stderr, err := gitCommand(ctx, r.dir, append(append(args, remote), refspecs...)...)
	if err == nil {
		r.synced()
		return errors.Join(r.setRef(r.TrackingRef(remote), commit), r.setRef(r.turnsTracking(remote), r.turnValue(refspecs)))
	}
	if len(refspecs) > 1 && strings.Contains(stderr, "does not support --atomic") {
		// A remote that cannot update two refs at once: no turns there.
		r.noAtomic.Store(true)
		return r.push(ctx, remote, commit, expected, nil)
	}
	refused := map[string]string{} // the refused refs, with what git said
	for _, line := range strings.Split(stdout, "\n") {
		if fields := strings.Split(line, "\t"); len(fields) == 3 && fields[0] == "!" {
			_, dst, _ := strings.Cut(fields[1], ":")
			refused[dst] = fields[2]
		}
	}
	// Refused because the remote's branch is elsewhere: found when the
	// push began (stale info: not where the lease said), or when the
	// remote moved the branch, by another push that won the race for its
	// lock (failed to update ref, failed to lock).
	// An atomic push's lost race is the remote's transaction failing over
	// a ref's lock: the ref moved under it.
	for ref := range refused {
		if strings.Contains(refused[ref], "atomic transaction failed") && strings.Contains(stderr, "cannot lock ref '"+ref+"'") {
			refused[ref] += ": " + firstLines(stderr, nil)
		}
	}
	moved := func(ref string) bool {
		for _, why := range []string{"stale info", "fetch first", "non-fast-forward", "failed to update ref", "failed to lock", "cannot lock ref"} {
			if strings.Contains(refused[ref], why) {
				return true
			}
		}
		return false
	}
	switch {
	case moved(r.branch):
		return &RemoteError{Op: "push", Remote: remote, Err: ErrRemoteMoved, Stderr: Redact(refused[r.branch])}
	case moved(r.turnsRef()):
		return &RemoteError{Op: "push", Remote: remote, Err: ErrOthersWaiting, Stderr: Redact(refused[r.turnsRef()])}
	}
	return &RemoteError{Op: "push", Remote: remote, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr+"\n"+stdout, err)}
}

// turnValue is the turn a push of refspecs left on the remote: the
// source of its second refspec, zero for a push without turns.
func (r *Repo) turnValue(refspecs []string) Hash {
	if len(refspecs) < 2 {
		return ZeroHash
	}
	src, _, _ := strings.Cut(refspecs[1], ":")
	h, _ := ParseHash(src)
	return h
}

// syncedName is the file, in .git, whose time says when this clone last
// heard from its remote (a fetch or a push that went through): a fetch
// that finds nothing new leaves the tracking ref untouched.
const syncedName = "blackboard-synced"

// pushedName is the file, in .git, whose time says when a process of this
// clone last pushed.
const pushedName = "blackboard-pushed"

func (r *Repo) synced() { r.stamp(syncedName) }

// LastSync is when this clone last heard from its remote, zero for never.
func (r *Repo) LastSync() time.Time { return r.stampTime(syncedName) }

// LastPush is when a process of this clone last pushed, whether the remote
// took the push or not, zero for never: pushes to a host that limits them
// are paced by it.
func (r *Repo) LastPush() time.Time { return r.stampTime(pushedName) }

// stamp records now as the time of the file name in .git.
func (r *Repo) stamp(name string) {
	p := filepath.Join(r.gitDir, name)
	now := time.Now()
	if err := os.Chtimes(p, now, now); errors.Is(err, os.ErrNotExist) {
		_ = os.WriteFile(p, nil, 0o644)
	}
}

func (r *Repo) stampTime(name string) time.Time {
	fi, err := os.Stat(filepath.Join(r.gitDir, name))
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// ConfigDuration reads section.key from the repository's git config as a
// duration ("10s", "1m"; a bare number is seconds); ok is false when it is
// not set or not a duration.
func (r *Repo) ConfigDuration(section, key string) (d time.Duration, ok bool) {
	c := r.config()
	if c == nil || !c.Raw.Section(section).HasOption(key) {
		return 0, false
	}
	v := strings.TrimSpace(c.Raw.Section(section).Option(key))
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		return time.Duration(secs * float64(time.Second)), secs >= 0
	}
	d, err := time.ParseDuration(v)
	return d, err == nil && d >= 0
}

// HostPacesPushes reports whether url names a host that asks for few
// pushes to one repository (GitHub: at most 6 a minute).
func HostPacesPushes(url string) bool {
	return remoteHost(url) == "github.com"
}

// remoteHost is the host of a git remote URL: scheme://[user@]host[:port]/path
// or the scp-like [user@]host:path; "" for a local path.
func remoteHost(url string) string {
	rest, hasScheme := "", false
	if i := strings.Index(url, "://"); i >= 0 {
		rest, hasScheme = url[i+3:], true
	}
	if !hasScheme {
		// scp-like only when a colon comes before any slash.
		colon, slash := strings.IndexByte(url, ':'), strings.IndexByte(url, '/')
		if colon < 0 || (slash >= 0 && slash < colon) {
			return ""
		}
		rest = url[:colon]
	}
	host, _, _ := strings.Cut(rest, "/")
	if at := strings.LastIndexByte(host, '@'); at >= 0 {
		host = host[at+1:]
	}
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
		host = h
	}
	return strings.ToLower(host)
}

// setRef records that the remote's ref that name tracks is at commit
// (nothing for zero).
func (r *Repo) setRef(name string, commit Hash) error {
	if commit.IsZero() {
		return nil
	}
	cur, err := r.readRef(name)
	if err != nil || cur == commit {
		return err
	}
	err = r.UpdateRef(name, cur, commit, Signature{Name: "blackboard-mcp", Email: "blackboard-mcp@blackboard.local", When: time.Now()}, "blackboard: pushed")
	if errors.Is(err, ErrBranchMoved) {
		return nil // a fetch meanwhile moved it, forward only
	}
	return err
}

// userinfo matches the credentials a URL may carry (https://user:token@host).
var userinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// Redact hides the credentials a URL carries, wherever one appears in s:
// what git says and a remote's URL reach logs and agents.
func Redact(s string) string { return userinfo.ReplaceAllString(s, "${1}***@") }

// firstLines keeps what a failed git command said that tells why: its
// "fatal:" and "error:" lines, or its first lines, credentials hidden.
func firstLines(stderr string, err error) string {
	return Redact(keepLines(stderr, err))
}

func keepLines(stderr string, err error) string {
	var keep []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "fatal:") || strings.HasPrefix(line, "error:") || strings.HasPrefix(line, "remote:") || strings.HasPrefix(line, "!") {
			keep = append(keep, line)
		}
	}
	if len(keep) == 0 {
		for _, line := range strings.Split(stderr, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				keep = append(keep, line)
			}
		}
	}
	if len(keep) > 3 {
		keep = keep[:3]
	}
	if len(keep) == 0 && err != nil {
		return err.Error()
	}
	return strings.Join(keep, "; ")
}

// DefaultBranch returns the branch a clone of url checks out: the one the
// remote's HEAD names when it exists, else its only branch, else main when
// it has one; "" when it has no branch at all.
func DefaultBranch(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	out, stderr, err := gitCommand(ctx, ".", "ls-remote", "--symref", "--", url)
	if err != nil {
		return "", &RemoteError{Op: "ls-remote", Remote: url, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr, err)}
	}
	head := ""
	var branches []string
	for _, line := range strings.Split(out, "\n") {
		if target, ok := strings.CutPrefix(line, "ref: "); ok && strings.HasSuffix(target, "\tHEAD") {
			head = strings.TrimPrefix(strings.TrimSuffix(target, "\tHEAD"), "refs/heads/")
			continue
		}
		if _, ref, ok := strings.Cut(line, "\t"); ok {
			if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
				branches = append(branches, b)
			}
		}
	}
	switch {
	case slices.Contains(branches, head):
		return head, nil
	case len(branches) == 1:
		return branches[0], nil
	case slices.Contains(branches, "main"):
		return "main", nil
	case len(branches) == 0:
		return "", nil
	}
	return "", fmt.Errorf("%s has branches %s and its HEAD names none of them: say which holds the board", url, strings.Join(branches, ", "))
}

// Clone makes dir a clone of url, checked out at branch ("" for the
// remote's default), never prompting.
func Clone(ctx context.Context, url, dir, branch string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*RemoteTimeout)
	defer cancel()
	args := []string{"clone", "--quiet", "--no-tags"}
	if branch != "" {
		args = append(args, "--branch", branch)
	}
	args = append(args, "--", url, dir)
	if _, stderr, err := gitCommand(ctx, ".", args...); err != nil {
		return &RemoteError{Op: "clone", Remote: url, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr, err)}
	}
	return nil
}

// IsAncestor reports whether a is b or one of its ancestors.
func (r *Repo) IsAncestor(a, b Hash) (bool, error) {
	if a == b {
		return true, nil
	}
	// Usually a is a few commits back from b (the remote moved on by a
	// push or two): look there before asking git, which costs a process.
	const walk = 256
	seen := map[Hash]bool{b: true}
	queue := []Hash{b}
	for ; len(queue) > 0 && len(seen) <= walk; queue = queue[1:] {
		c, err := r.ReadCommit(queue[0])
		if err != nil {
			return false, err
		}
		for _, p := range c.Parents {
			if p == a {
				return true, nil
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	if len(queue) == 0 {
		return false, nil // b's whole history, without a
	}
	_, stderr, err := gitCommand(context.Background(), r.dir, "merge-base", "--is-ancestor", a.String(), b.String())
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return false, nil
	}
	return false, fmt.Errorf("git merge-base --is-ancestor: %w: %s", err, stderr)
}

// MergeBase returns the best common ancestor of a and b, zero when their
// histories are unrelated.
func (r *Repo) MergeBase(a, b Hash) (Hash, error) {
	out, stderr, err := gitCommand(context.Background(), r.dir, "merge-base", a.String(), b.String())
	var exit *exec.ExitError
	switch {
	case err == nil:
		return ParseHash(strings.TrimSpace(out))
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		return ZeroHash, nil
	}
	return ZeroHash, fmt.Errorf("git merge-base: %w: %s", err, stderr)
}

// RemoveRemote forgets a remote, and that the board's branch followed it.
func (r *Repo) RemoveRemote(remote string) error {
	if _, stderr, err := gitCommand(context.Background(), r.dir, "remote", "remove", remote); err != nil {
		return fmt.Errorf("git remote remove %s: %w: %s", remote, err, stderr)
	}
	return nil
}

// Count is the number of commits to reaches and from does not.
func (r *Repo) Count(from, to Hash) (int, error) {
	if to.IsZero() || from == to {
		return 0, nil
	}
	args := []string{"rev-list", "--count", to.String()}
	if !from.IsZero() {
		args = append(args, "^"+from.String())
	}
	out, stderr, err := gitCommand(context.Background(), r.dir, args...)
	if err != nil {
		return 0, fmt.Errorf("git rev-list: %w: %s", err, stderr)
	}
	return strconv.Atoi(strings.TrimSpace(out))
}

// Subjects lists "<short hash> <subject>" of the commits to reaches and from
// does not, newest first, at most limit (from zero: all of to's history).
func (r *Repo) Subjects(from, to Hash, limit int) ([]string, error) {
	if to.IsZero() || from == to {
		return nil, nil
	}
	args := []string{"log", "--format=%h %s", fmt.Sprintf("--max-count=%d", limit), to.String()}
	if !from.IsZero() {
		args = append(args, "^"+from.String())
	}
	out, stderr, err := gitCommand(context.Background(), r.dir, args...)
	if err != nil {
		return nil, fmt.Errorf("git log: %w: %s", err, stderr)
	}
	if out = strings.TrimSpace(out); out == "" {
		return nil, nil
	}
	return strings.Split(out, "\n"), nil
}

// FetchRewritten fetches the remote's branch as it is now, whatever its
// history, into ref (not the tracking ref, which keeps what this clone
// knew), and returns its commit.
func (r *Repo) FetchRewritten(ctx context.Context, remote, ref string) (Hash, error) {
	ctx, cancel := context.WithTimeout(ctx, RemoteTimeout)
	defer cancel()
	if _, stderr, err := gitCommand(ctx, r.dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote,
		"+"+r.branch+":"+ref); err != nil {
		return ZeroHash, &RemoteError{Op: "fetch", Remote: remote, Err: ErrRemoteUnavailable, Stderr: firstLines(stderr, err)}
	}
	return r.readRef(ref)
}

// MergeCommit writes a commit of tree with the given parents, by who: the
// merge that joins a rewritten remote's history and this clone's.
func (r *Repo) MergeCommit(tree Hash, parents []Hash, who Signature, message string) (Hash, error) {
	return r.WriteCommit(CommitObject{Tree: tree, Parents: parents, Author: who, Committer: who, Message: message})
}

// DeleteRef removes a ref, loose or packed.
func (r *Repo) DeleteRef(name string) error {
	if _, stderr, err := gitCommand(context.Background(), r.dir, "update-ref", "-d", name); err != nil {
		return fmt.Errorf("git update-ref -d %s: %w: %s", name, err, stderr)
	}
	return nil
}

// ProtectBare makes the bare repository at path refuse pushes that rewrite
// or delete a branch.
func ProtectBare(ctx context.Context, path string) error {
	for _, key := range []string{"receive.denyNonFastForwards", "receive.denyDeletes"} {
		if _, stderr, err := gitCommand(ctx, path, "config", key, "true"); err != nil {
			return fmt.Errorf("git config %s in %s: %w: %s", key, path, err, stderr)
		}
	}
	return nil
}
