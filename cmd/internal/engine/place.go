package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Place is where the engine of one board lives.
type Place struct {
	// Board is the board's directory, absolute.
	Board string
	// Socket is the engine's Unix socket. It lives in a directory of the
	// user's that no one else may enter (0700), not in the board: a board
	// may sit on a file system without sockets, and its path may be longer
	// than a socket's address allows (108 bytes).
	Socket string
	// Lock is held by the board's engine as long as it runs: two engines
	// never serve one board. It is in the board's git directory, as every
	// binary built from any version finds it there, and git ignores it.
	Lock string
	// Log is the engine's log.
	Log string
}

// Locate returns the place of board's engine, making the socket's
// directory when it does not exist. It refuses a directory that another
// user owns or may enter: their process could then stand in for the engine.
func Locate(board string) (Place, error) {
	abs, err := filepath.Abs(board)
	if err != nil {
		return Place{}, err
	}
	dir, err := socketDir()
	if err != nil {
		return Place{}, err
	}
	sum := sha256.Sum256([]byte(abs))
	gitDir := filepath.Join(abs, ".git")
	return Place{
		Board:  abs,
		Socket: filepath.Join(dir, hex.EncodeToString(sum[:8])+".sock"),
		Lock:   filepath.Join(gitDir, "blackboard-engine.lock"),
		Log:    filepath.Join(gitDir, "blackboard-engine.log"),
	}, nil
}

// socketDir is the user's directory of engine sockets:
// $XDG_RUNTIME_DIR/blackboard-mcp where a session has one, else
// blackboard-mcp-UID in the temporary directory.
func socketDir() (string, error) {
	uid := os.Getuid()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("blackboard-mcp-%d", uid))
	if run := os.Getenv("XDG_RUNTIME_DIR"); run != "" && filepath.IsAbs(run) {
		dir = filepath.Join(run, "blackboard-mcp")
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return "", fmt.Errorf("%s is not a directory", dir)
	case !ok || int(st.Uid) != uid:
		return "", fmt.Errorf("%s belongs to another user", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%s may be entered by other users (mode %o)", dir, fi.Mode().Perm())
	}
	return dir, nil
}

// Hold takes the engine lock of p without waiting: ok is false when another
// engine holds it. The lock lasts as long as the returned file is open.
func (p Place) Hold() (lock *os.File, ok bool, err error) {
	f, err := os.OpenFile(p.Lock, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	// The lock file names the engine: `health` shows it, and a person
	// knows what to stop.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, true, nil
}

// Running reports whether an engine holds p's lock.
func (p Place) Running() bool {
	f, err := os.Open(p.Lock)
	if err != nil {
		return false
	}
	defer f.Close()
	return errors.Is(unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB), unix.EWOULDBLOCK)
}

// Engine returns the process id of the engine that holds p's lock, 0 when
// none does.
func (p Place) Engine() int {
	if !p.Running() {
		return 0
	}
	b, err := os.ReadFile(p.Lock)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
