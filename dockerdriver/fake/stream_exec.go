package fake

import (
	"context"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// StreamExecHandler plays the command of a streamed exec: it reads req.Stdin, writes req.Stdout and
// req.Stderr as the command would, and returns its exit code. It should return when ctx ends; the fake
// waits for it either way, as the real driver waits for its copies, so that no write outlives the call.
type StreamExecHandler func(ctx context.Context, container string, req dd.StreamExecRequest) (exitCode int)

// SetStreamExecHandler sets how streamed execs behave; the default exits 0 at once with no output.
func (f *Driver) SetStreamExecHandler(h StreamExecHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.streamExec = h
}

// StreamExec runs the handler in a running container; a paused or stopped one is a Conflict, as with Docker.
// A ctx that ends before the handler returns is the error the real driver reports for a cut stream.
func (f *Driver) StreamExec(ctx context.Context, name string, req dd.StreamExecRequest) (dd.StreamExecResult, error) {
	return call(f, ctx, OpStreamExec, name, func() (dd.StreamExecResult, error) {
		if err := req.Validate(name); err != nil {
			return dd.StreamExecResult{}, err
		}
		if _, err := f.execTarget(name); err != nil {
			return dd.StreamExecResult{}, err
		}
		f.mu.Lock()
		handler := f.streamExec
		f.mu.Unlock()
		code := handler(ctx, name, req)
		if ctx.Err() != nil {
			return dd.StreamExecResult{}, dd.NewError(dd.KindUncertain, dd.PhaseExec, name, "the stream ended before the command: its processes were ended")
		}
		return dd.StreamExecResult{ExitCode: code}, nil
	})
}
