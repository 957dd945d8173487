package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/cli"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/engine"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/rpcguard"
	"github.com/blackboard-mcp/blackboard-mcp/cmd/internal/web"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
	"github.com/blackboard-mcp/blackboard-mcp/fsstore/access"
	"github.com/blackboard-mcp/blackboard-mcp/tools"
)

// servedBoard is an open board with its MCP server: what a standalone server
// and the engine both hold.
type servedBoard struct {
	ws       *fsstore.Workspace
	watching *fsstore.Watching
	srv      *tools.Server
	// log reaches the sessions that ask for it too (logging/setLevel),
	// once the server is built: the workspace's callbacks, which may run
	// from its start, read it as it is then. transportLog is the plain
	// one, for the transports: what the MCP library logs of its own
	// sessions must not loop back into them.
	log          atomic.Pointer[slog.Logger]
	transportLog *slog.Logger
}

// logger is the board's log as it is now.
func (b *servedBoard) logger() *slog.Logger { return b.log.Load() }

// openBoard opens the workspace in dir, watches people's edits and builds
// the MCP server on it.
func openBoard(dir string, noSync bool, roots []string, log *slog.Logger) (*servedBoard, error) {
	collectSooner()
	b := &servedBoard{transportLog: log}
	b.log.Store(log)
	ws, err := fsstore.Open(dir, fsstore.Options{NoSync: noSync, Agent: agentName(), SourceRoots: roots, IndexInBackground: true,
		OnEdits: func(r *fsstore.EditReport) {
			for _, line := range r.Lines() {
				b.logger().Info("committed a person's edit", "edit", line, "commit", r.Commit[:7])
			}
		},
		Logf: func(format string, args ...any) { b.logger().Warn(fmt.Sprintf(format, args...)) }})
	if err != nil {
		return nil, err
	}
	b.ws = ws
	// People's edits become versions while the board is served; those
	// made while no server ran are found in the background as it starts.
	b.watching = ws.Watch(fsstore.WatchOptions{Logf: func(format string, args ...any) {
		b.logger().Warn(fmt.Sprintf(format, args...))
	}})
	b.srv = tools.NewServer(ws, log, version)
	b.log.Store(b.srv.ForwardLogs(log.Handler()))
	return b, nil
}

func (b *servedBoard) close() {
	b.watching.Stop()
	b.ws.Close()
}

// admit is who a stdio agent is: with an access file, the agent of its
// token, else the agent it names, with every topic.
func admit(af *access.File, restricted bool, agent, token string) (*fsstore.Caller, error) {
	if !restricted {
		return fsstore.OpenCaller(agent), nil
	}
	a, ok := af.Authenticate(token)
	if !ok {
		return nil, errors.New("this board has access control: set BLACKBOARD_TOKEN to the token `blackboard-mcp token add` printed for this agent (the token given is missing, unknown or revoked)")
	}
	return fsstore.AgentCaller(a), nil
}

// relayToEngine serves one MCP client over stdio through the board's
// engine, starting it when none runs. It returns engine.ErrUnavailable
// (wrapped) when no engine can serve the board, before reading stdin.
func relayToEngine(ctx context.Context, dir string, noSync bool, roots []string, stdin io.Reader, stdout, stderr io.Writer, log *slog.Logger) error {
	place, err := engine.Locate(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	cwd, _ := os.Getwd()
	r := &engine.Relay{
		Place: place,
		Hello: engine.Hello{Version: version, Agent: agentName(), Token: os.Getenv("BLACKBOARD_TOKEN"),
			Dir: cwd, SourceRoots: absolute(roots), PID: os.Getpid()},
		Start:    func() error { return startEngine(place, noSync) },
		Log:      log,
		Tail:     stderr,
		Patience: 15 * time.Second,
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := r.Connect(ctx); err != nil {
		return err // before anything of the relay's: this process may serve the board
	}
	// A relay holds nothing of the board: what the program's start-up
	// allocated for the engine's packages goes back to the system, and so
	// do the pages of the program it touched, once the agent's first calls
	// are answered (done at once, it delayed the first answer by 7-19 ms
	// on two busy cores). It passes lines on, one at a time: with one
	// thread running Go, its wakeups no longer spin a second one looking
	// for work on the cores the engine and the client need.
	runtime.GOMAXPROCS(1)
	debug.SetGCPercent(25)
	time.AfterFunc(time.Second, func() {
		debug.FreeOSMemory()
		dropProgramPages()
	})
	// A client that dies closes our stdout: the next answer must fail
	// with EPIPE, not kill the relay.
	signal.Ignore(syscall.SIGPIPE)
	return r.Run(ctx, stdin, stdout)
}

// startEngine starts `blackboard-mcp engine` for the board at place, in a
// session of its own (a signal to the relay's process group does not
// reach it), its output appended to the engine's log.
func startEngine(place engine.Place, noSync bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(place.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	args := []string{"engine", "--dir", place.Board}
	if noSync {
		args = append(args, "--no-sync")
	}
	cmd := exec.Command(self, args...)
	cmd.Dir = place.Board
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }() // reaped when it exits before the relay
	return nil
}

// engineIdle is how long an engine stays once its last agent left:
// $BLACKBOARD_ENGINE_IDLE (a Go duration), else half a minute, so that a
// client restarting finds it warm.
func engineIdle() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("BLACKBOARD_ENGINE_IDLE")); err == nil && d >= 0 {
		return d
	}
	return 30 * time.Second
}

// maxEngineLog is the size past which an engine starting empties its log.
const maxEngineLog = 8 << 20

func runEngine(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	var c cli.WorkspaceFlags
	fs := cli.NewFlagSet("engine", stderr, &c)
	fs.Usage = func() {
		fmt.Fprintln(stderr, `Usage: blackboard-mcp engine [--dir DIR]

The board's engine: the one process that holds the board and serves every
agent's `+"`serve`"+`, which starts it when none runs. It listens on a Unix socket
only its user reaches, and exits once no agent has been connected for
$BLACKBOARD_ENGINE_IDLE (default 30s), or once the board is gone.`)
		fs.PrintDefaults()
	}
	if _, err := cli.Parse(fs, args); err != nil {
		return err
	}
	place, err := engine.Locate(c.Dir())
	if err != nil {
		return err
	}
	if fi, err := os.Stat(place.Log); err == nil && fi.Size() > maxEngineLog {
		_ = os.Truncate(place.Log, 0)
	}
	// An engine on its way out still holds the lock for a moment.
	var lock *os.File
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ok bool
		if lock, ok, err = place.Hold(); err != nil {
			return err
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil // another engine serves the board
		}
		time.Sleep(50 * time.Millisecond)
	}
	defer lock.Close()
	if path := profilePath("BLACKBOARD_ENGINE_CPUPROFILE"); path != "" {
		// A maintainer's look at where the engine spends its time, over
		// the real clients: its CPU profile, written as it exits.
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("engine", os.Getpid())
	b, err := openBoard(place.Board, c.NoSync, nil, log)
	if err != nil {
		return err
	}
	defer b.close()
	if path := profilePath("BLACKBOARD_ENGINE_MEMPROFILE"); path != "" {
		// And where its memory goes: the heap as it exits, before the
		// board closes.
		defer func() {
			if f, err := os.Create(path); err == nil {
				runtime.GC()
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	signal.Ignore(syscall.SIGPIPE)
	go b.srv.WatchBoard(ctx)
	go giveBackMemoryWhenQuiet(ctx, b.ws.ReleaseMemory)
	b.srv.SetCaller(func(ctx context.Context) *fsstore.Caller {
		if caller := requestCaller(ctx); caller != nil {
			return caller // a request to serve --http's endpoint
		}
		caller, _ := engine.Admitted(ctx).(*fsstore.Caller)
		return caller
	})
	host := &engine.Host{
		Place:   place,
		MCP:     b.srv.MCP(),
		Version: version,
		Admit: func(h engine.Hello) (any, error) {
			// The access file is read at each agent's arrival: a token
			// added or revoked since the engine started counts.
			af, restricted, err := b.ws.Access()
			if err != nil {
				return nil, fmt.Errorf("the access file %s is unreadable: %w", ".blackboard/access.yaml", err)
			}
			agent := h.Agent
			if agent == "" {
				agent = "agent"
			}
			caller, err := admit(af, restricted, agent, h.Token)
			if err != nil {
				return nil, err
			}
			return caller.ReadingFrom(b.ws.Dir(), h.Dir, h.SourceRoots), nil
		},
		Guard: func(admitted any, conn io.Reader, w io.Writer) (io.Reader, io.Writer) {
			g := rpcguard.NewStdio(conn, w, func(ctx context.Context, uri string) bool {
				return b.srv.NoteReadable(engine.WithAdmitted(ctx, admitted), uri)
			})
			return g.In(), g.Out()
		},
		Command: func(ctx context.Context, h engine.Hello) engine.Outcome { return runInEngine(ctx, b.ws, h) },
		Page:    (&engineHTTP{board: b, page: web.New(b.ws, b.logger(), false).Handler(), endpoints: map[string]http.Handler{}}).handler,
		Busy:    b.ws.NeedsRepair,
		Idle:    engineIdle(),
		Log:     b.transportLog,
	}
	b.logger().Info("engine serves the board", "workspace", b.ws.Name(), "socket", place.Socket)
	return host.Run(ctx)
}

// engineHTTP is what the engine serves over HTTP to a process in front of
// it: the board's page, or serve --http's endpoint.
type engineHTTP struct {
	board *servedBoard
	page  http.Handler
	mu    sync.Mutex
	// endpoints are serve --http's, one for each way a process in front
	// asked for one: their sessions outlive the connections their
	// requests come on, and a process in front started again finds them.
	endpoints map[string]http.Handler
}

// handler is what the engine serves to the process that said hello: the
// endpoint it describes, else the page, its requests made as the person
// that process names (BLACKBOARD_AGENT).
func (e *engineHTTP) handler(h engine.Hello) http.Handler {
	if len(h.HTTP) > 0 {
		return e.endpoint(h.HTTP)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.Agent != "" {
			r = r.WithContext(web.AsPerson(r.Context(), h.Agent))
		}
		e.page.ServeHTTP(w, r)
	})
}

// endpoint is serve --http's endpoint as raw (an httpEndpoint) describes
// it. A board with an access file is served with tokens whatever the
// process in front found.
func (e *engineHTTP) endpoint(raw []byte) http.Handler {
	var ep httpEndpoint
	if err := json.Unmarshal(raw, &ep); err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeRPCError(w, http.StatusInternalServerError, codeRefused, "the engine could not read the endpoint asked for: "+err.Error())
		})
	}
	if _, restricted, err := e.board.ws.Access(); restricted || err != nil {
		ep.Restricted = true
	}
	key, _ := json.Marshal(ep)
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.endpoints[string(key)]
	if !ok {
		h = fromFront(newEndpoint(e.board.ws, e.board.srv, e.board.transportLog, ep))
		e.endpoints[string(key)] = h
	}
	return h
}

// fromFront is h with each request's local address the one it came in on
// at the process in front (localAddrHeader).
func fromFront(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if addr, err := net.ResolveTCPAddr("tcp", r.Header.Get(localAddrHeader)); err == nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, net.Addr(addr)))
		}
		h.ServeHTTP(w, r)
	})
}

// profilePath is where the engine writes a profile, from the variable
// name: "" for none. A "%p" in it is the engine's process id, so that the
// engines of several boards (a remote's clones in a benchmark) each write
// their own.
func profilePath(name string) string {
	return strings.ReplaceAll(os.Getenv(name), "%p", strconv.Itoa(os.Getpid()))
}

// giveBackMemoryWhenQuiet returns to the system the memory the engine
// does not need while it is quiet (allocated next to nothing for
// quietEvery): a burst of work (a first look at a large board's files, a
// search that loads its vectors, writes) leaves the Go runtime holding
// pages that it gives back only slowly, and caches that only make the
// next call faster (release), and an engine lives as long as agents work.
// While quiet, the garbage collector also keeps the heap within
// quietGCPercent of what is live, instead of letting it grow to twice that
// before it collects; the first busy moment sets it back. What costs the
// next write most to build again (git's index, parsed) goes only once the
// engine has been quiet for longQuiet: an agent that writes every minute
// does not pay for it each time.
//
// On a 100,000-note board, after 400 writes and a round of reads, a quiet
// engine held 151-158 MB with the heap given back alone; 94 MB with every
// cache released too, and the first write after that took 78-134 ms
// instead of 10-24. The program's own pages (code and read-only data,
// dropProgramPages) go last, with git's index.
func giveBackMemoryWhenQuiet(ctx context.Context, release func(all bool)) {
	// An idle engine still allocates about 1.4 MB in 5 s (its background
	// looks at the board every second), a call or a write hundreds of KB
	// to hundreds of MB.
	const quietEvery, quietAllocs = 5 * time.Second, 4 << 20
	const quietGCPercent, longQuiet = 20, 2 * time.Minute
	allocs := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	tick := time.NewTicker(quietEvery)
	defer tick.Stop()
	var last uint64
	var quietSince time.Time // zero while busy
	releasedAll := false
	busyGCPercent := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		metrics.Read(allocs)
		now := allocs[0].Value.Uint64()
		quiet := now-last < quietAllocs
		last = now
		switch {
		case !quiet && !quietSince.IsZero():
			debug.SetGCPercent(busyGCPercent)
			quietSince, releasedAll = time.Time{}, false
		case quiet && quietSince.IsZero():
			release(false)
			busyGCPercent = debug.SetGCPercent(quietGCPercent)
			debug.FreeOSMemory()
			quietSince = time.Now()
		case quiet && !releasedAll && time.Since(quietSince) >= longQuiet:
			release(true)
			debug.FreeOSMemory()
			// The program's pages that its calls touched go too: the
			// next call reads back from the page cache those it needs,
			// while it parses git's index again.
			dropProgramPages()
			releasedAll = true
		}
	}
}
