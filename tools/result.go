package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/blackboard-mcp/blackboard-mcp/fsstore"
)

// Error codes of tool results (SPEC section 5).
var errorCodes = []struct {
	kind error
	code string
}{
	{fsstore.ErrInvalid, "invalid"},
	{fsstore.ErrConflict, "conflict"},
	{fsstore.ErrNotFound, "not_found"},
	{fsstore.ErrForbidden, "forbidden"},
	{fsstore.ErrTooLarge, "too_large"},
	{fsstore.ErrUnavailable, "unavailable"},
}

// errorResult turns an error into a tool result: `code: message`, with
// isError set. Domain errors say what to do; anything else is logged with
// its details and reported as internal, so paths and library messages never
// reach the model.
func errorResult(ctx context.Context, log *slog.Logger, tool string, err error) *mcp.CallToolResult {
	for _, c := range errorCodes {
		if errors.Is(err, c.kind) {
			msg := err.Error()
			var e *fsstore.Error
			if errors.As(err, &e) {
				msg = e.Msg
				if e.URI != "" && !strings.Contains(msg, e.URI) && strings.HasPrefix(e.URI, "bb://") {
					msg = e.URI + ": " + msg
				}
			}
			return mcp.NewToolResultError(c.code + ": " + msg)
		}
	}
	log.ErrorContext(ctx, "tool failed", "tool", tool, "err", err)
	if errors.Is(err, fsstore.ErrOutcomeUnknown) {
		return mcp.NewToolResultError("internal: the write failed where the server cannot tell whether it was committed; read the note's version before writing it again")
	}
	if Writes(tool) {
		// A write that fails past its commit point is acknowledged with a
		// warning instead (fsstore's UpdateResult.Unfinished): an internal
		// error from a write always means it did not happen.
		return mcp.NewToolResultError("internal: nothing was written; the server could not complete the call (its log says why)")
	}
	return mcp.NewToolResultError("internal: the server could not complete the call; its log says why")
}

// Writes reports whether the tool named writes: its internal error means
// nothing was written, and a relay marks its calls so that one sent again
// is never applied twice.
func Writes(tool string) bool { return tool == "update_state" || tool == "link_state" }

// invalid is a caller's mistake found by the tool layer itself.
func invalid(format string, args ...any) error {
	return &fsstore.Error{Op: "call", Kind: fsstore.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}

// jsonResult encodes v as compact JSON in one text block.
func jsonResult(v any) (*mcp.CallToolResult, error) {
	b, err := marshal(v)
	if err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(string(b)), nil
}

// marshal is compact JSON without HTML escaping (< and > stay readable and
// cost one token, not six).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// handler adapts a typed tool function to mcp-go: it binds the arguments
// (an unknown or mistyped argument is an invalid result, not a protocol
// error) and maps errors. Only a broken server returns a Go error.
//
// A caller that asks for progress hears, besides, how far the build of the
// index has come when the answer was made while one runs (build): a
// listing as far as the index has come, or a call told to retry.
func handler[T any](log *slog.Logger, build func() (fsstore.BuildProgress, bool), name string,
	fn func(ctx context.Context, in T) (*mcp.CallToolResult, error)) func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in T
		raw, err := json.Marshal(req.GetRawArguments())
		if err == nil {
			raw, err = withoutHostArguments(raw)
		}
		if err != nil {
			return errorResult(ctx, log, name, invalid("arguments are not a JSON object")), nil
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return errorResult(ctx, log, name, invalid("%s", argumentError(err))), nil
		}
		ctx = withWriteID(ctx, req.Params.Meta)
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			token := req.Params.Meta.ProgressToken
			defer tellBuild(ctx, token, build)
			defer reportProgress(ctx, token, name)()
		}
		res, err := fn(ctx, in)
		if err != nil {
			return errorResult(ctx, log, name, err), nil
		}
		return res, nil
	}
}

// hostArguments are arguments a host adds to every tool's schema for its
// own use and passes on to the server with the model's: Gemini CLI's
// wait_for_previous, which its model is told to set. They are not the
// model's mistakes, so they are dropped before the arguments are bound.
var hostArguments = []string{"wait_for_previous"}

// withoutHostArguments returns the arguments object raw without
// hostArguments.
func withoutHostArguments(raw []byte) ([]byte, error) {
	if !slices.ContainsFunc(hostArguments, func(name string) bool { return bytes.Contains(raw, []byte(name)) }) {
		return raw, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return raw, nil // binding says what is wrong with it
	}
	for _, name := range hostArguments {
		delete(args, name)
	}
	return json.Marshal(args)
}

// argumentError explains a JSON binding failure without Go type names.
func argumentError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "argument " + te.Field + " has the wrong type (got " + te.Value + ")"
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return "unknown argument " + f
	}
	return "arguments do not parse: " + strings.TrimPrefix(msg, "json: ")
}

// A call that asks for progress (a progressToken) and takes a while, a
// write waiting for a workspace another writer holds, a large source_path
// read, hears notifications/progress: after progressAfter, then every
// progressEvery, until it is answered.
const (
	progressAfter = 250 * time.Millisecond
	progressEvery = 500 * time.Millisecond
)

// tellBuild tells the caller of ctx how far the build of the index has
// come, while one runs.
func tellBuild(ctx context.Context, token mcp.ProgressToken, build func() (fsstore.BuildProgress, bool)) {
	srv := server.ServerFromContext(ctx)
	p, ok := build()
	if srv == nil || !ok {
		return
	}
	n := map[string]any{"progressToken": token, "progress": p.Done, "message": p.Message}
	if p.Total > 0 {
		n["total"] = p.Total
	}
	_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), n)
}

// reportProgress starts telling the caller of ctx that tool is at work, and
// returns what stops it.
func reportProgress(ctx context.Context, token mcp.ProgressToken, tool string) (stop func()) {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		wait := time.NewTimer(progressAfter)
		defer wait.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-wait.C:
			}
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token,
				"progress":      n,
				"message":       fmt.Sprintf("%s: still working after %.1f s (a busy workspace, a large source)", tool, time.Since(start).Seconds()),
			})
			wait.Reset(progressEvery)
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
