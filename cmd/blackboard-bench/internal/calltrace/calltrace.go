// Package calltrace records which of a module's files call which, for
// blackboard-bench path. It is never linked into the product: the bench
// copies this file into a copy of the module as internal/calltrace and makes
// every function (and closure) of that copy begin with
//
//	defer calltrace.Enter()()
//
// A process of that copy started with $BLACKBOARD_CALLTRACE set to a file
// records from SIGUSR1 to SIGUSR2, then writes what it recorded to that file
// (as JSON, renamed into place, so a reader never sees it half written).
// Right after SIGUSR1 has turned recording on, it makes the file FILE.on: the
// bench waits for it before the call it measures.
//
// It knows files and functions by what the runtime says of its frames: the
// module's files are those under the directory two levels above this file's,
// and its functions those of packages under the import path two levels above
// this package's (with -trimpath, both are the module path).
package calltrace

import (
	"encoding/json"
	"os"
	"os/signal"
	"path"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Env names the file a traced process writes its record to.
const Env = "BLACKBOARD_CALLTRACE"

// Record is what a process saw between SIGUSR1 and SIGUSR2.
type Record struct {
	// Module is the module's import path, stripped from every function
	// below; Root is its directory (the module path with -trimpath),
	// stripped from every file.
	Module string `json:"module"`
	Root   string `json:"root"`
	// Calls are the function entries, by the nearest file of the module
	// that the calling goroutine was in (From, "" when none: a goroutine
	// that the module's code started through a library, or the runtime)
	// and the entered function's file (To).
	Calls []Call `json:"calls"`
	// Funcs are the functions entered, with their file.
	Funcs []Func `json:"funcs"`
}

// Call is one caller file → callee file pair and its count.
type Call struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Count int    `json:"count"`
}

// Func is one function entered and its count.
type Func struct {
	Name  string `json:"name"`
	File  string `json:"file"`
	Count int    `json:"count"`
}

var (
	// on is all a function's entry reads while nothing is recorded: the
	// process runs at its speed between the measured windows.
	on atomic.Bool
	// root and module are the prefixes of the module's files and of its
	// functions' names, with their last slash; set once at init.
	root, module string

	mu    sync.Mutex // guards calls and funcs, written by every goroutine
	calls map[[2]string]int
	funcs map[[2]string]int
)

func init() {
	pc, file, _, _ := runtime.Caller(0)
	// file is ROOT/internal/calltrace/calltrace.go, and this function
	// MODULE/internal/calltrace.init.0.
	root = path.Dir(path.Dir(path.Dir(file))) + "/"
	pkg, _, _ := strings.Cut(runtime.FuncForPC(pc).Name(), "/internal/calltrace.")
	module = pkg + "/"
	out := os.Getenv(Env)
	if out == "" {
		return
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for s := range sig {
			if s == syscall.SIGUSR1 {
				Start()
				// Best effort: the bench then waits until its patience ends.
				_ = os.WriteFile(out+".on", nil, 0o600)
				continue
			}
			// Best effort: a record that cannot be written is missing,
			// and the bench says so when its wait ends.
			_ = write(out, Stop())
		}
	}()
}

// Start forgets what was recorded and records from now on.
func Start() {
	mu.Lock()
	calls, funcs = map[[2]string]int{}, map[[2]string]int{}
	mu.Unlock()
	on.Store(true)
}

// Stop ends the recording and returns it.
func Stop() Record {
	on.Store(false)
	mu.Lock()
	defer mu.Unlock()
	r := Record{Module: strings.TrimSuffix(module, "/"), Root: strings.TrimSuffix(root, "/")}
	for k, n := range calls {
		r.Calls = append(r.Calls, Call{From: k[0], To: k[1], Count: n})
	}
	for k, n := range funcs {
		r.Funcs = append(r.Funcs, Func{Name: k[0], File: k[1], Count: n})
	}
	calls, funcs = nil, nil
	return r
}

// write puts r in file whole: written beside it, then renamed.
func write(file string, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

func nothing() {}

// Enter records that its caller was entered, and from which of the
// module's files. As `defer Enter()()`, it runs where the defer statement
// is, at the function's start; the function it returns runs at the
// function's return, and does nothing.
func Enter() func() {
	if on.Load() {
		record()
	}
	return nothing
}

// maxDepth is how far up the stack a caller of the module is looked for:
// one further up counts as none.
const maxDepth = 64

func record() {
	var pcs [maxDepth]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs[:])])
	var callee runtime.Frame
	from := ""
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "" || strings.HasPrefix(f.Function, module+"internal/calltrace."):
			// This package's own frames, inlined or not.
		case callee.Function == "":
			callee = f
		case strings.HasPrefix(f.File, root):
			from = strings.TrimPrefix(f.File, root)
			more = false
		}
		if !more {
			break
		}
	}
	if callee.Function == "" {
		return
	}
	to := strings.TrimPrefix(callee.File, root)
	name := strings.TrimPrefix(callee.Function, module)
	mu.Lock()
	if calls != nil { // Stop may have run since on was read
		calls[[2]string{from, to}]++
		funcs[[2]string{name, to}]++
	}
	mu.Unlock()
}
