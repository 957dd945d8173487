package engine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// ErrCommandLost is a command the engine took and did not answer: it died
// meanwhile, and whether a write it made was committed cannot be told.
var ErrCommandLost = errors.New("the board's engine stopped before it answered")

// RunCommand has the engine that serves place run a command line's verb
// (hello.Command) on its board, and returns what it printed. It returns
// ErrUnavailable (wrapped) when no engine of this protocol listens, before
// the engine saw the command: the caller then runs it itself.
func RunCommand(ctx context.Context, place Place, hello Hello) (Outcome, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", place.Socket)
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	hello.Protocol = Protocol
	rd := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetDeadline(time.Now().Add(helloTimeout))
	var w Welcome
	if err := writeLine(c, hello); err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if err := readLine(rd, &w); err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if w.Protocol != Protocol || w.Error != "" {
		why := w.Error
		if why == "" {
			why = fmt.Sprintf("it speaks protocol %d, this command %d", w.Protocol, Protocol)
		}
		return Outcome{}, fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	_ = c.SetDeadline(time.Time{})
	var out Outcome
	if err := readLine(rd, &out); err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrCommandLost, err)
	}
	return out, nil
}
