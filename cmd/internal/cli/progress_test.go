package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// started is a progress line on out, as StartProgress starts one on a
// terminal.
func started(out io.Writer) *Progress {
	p := &Progress{out: out, verb: "health", start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// TestProgressLine: a command done within a second draws nothing; a longer
// one draws its stage, then clears the line.
func TestProgressLine(t *testing.T) {
	var quick lockedBuffer
	p := started(&quick)
	p.Stage("the repository")
	p.Stop()
	if quick.String() != "" {
		t.Errorf("a quick command drew %q", quick.String())
	}
	var slow lockedBuffer
	p = started(&slow)
	p.Stage("the 100980 files of the last commit")
	time.Sleep(progressAfter + progressEvery)
	p.Stop()
	out := slow.String()
	if !strings.Contains(out, "\r\033[Khealth: the 100980 files of the last commit (1 s)") || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("a slow command drew %q", out)
	}
}

// TestNoProgressWhenNotATerminal: to a pipe or a file, and with --json,
// nothing is drawn and the verb runs as it is.
func TestNoProgressWhenNotATerminal(t *testing.T) {
	var out bytes.Buffer
	verb := WithProgress("ls", func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
		ProgressOf(ctx).Stage("listing") // a nil line says nothing
		time.Sleep(progressAfter + progressEvery)
		_, err := io.WriteString(stdout, strings.Join(args, " "))
		return err
	})
	for _, args := range [][]string{{"research"}, {"research", "--json"}} {
		out.Reset()
		var stderr bytes.Buffer
		if err := verb(context.Background(), args, nil, &out, &stderr); err != nil {
			t.Fatal(err)
		}
		if out.String() != strings.Join(args, " ") || stderr.Len() != 0 {
			t.Errorf("%q: stdout %q, stderr %q", args, out.String(), stderr.String())
		}
	}
	if StartProgress(&out, "ls") != nil {
		t.Error("a progress line was started on a buffer")
	}
}
