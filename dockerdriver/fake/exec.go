package fake

import (
	"context"
	"errors"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// ExecOutput is what an exec handler's command produced.
type ExecOutput struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	// Survivors is how many processes the command leaves running; with KillSurvivors the fake kills the
	// container for them, as the real driver does.
	Survivors int
}

// ExecHandler plays the command of an exec. It should return when ctx ends; if it does not, the fake
// still enforces the deadline as the real driver does (by killing the container, unless KeepOnTimeout:
// then the handler is left running, as the real exec's process is).
type ExecHandler func(ctx context.Context, container string, req dd.ExecRequest) ExecOutput

// SetExecHandler sets how execs behave; the default succeeds at once with no output.
func (f *Driver) SetExecHandler(h ExecHandler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.execHandler = h
}

// Exec runs the handler with the same deadline and output cap semantics as the real driver: output
// beyond OutputLimit is cut and counted, and a deadline or cancel kills the container (exit 137), unless
// req.KeepOnTimeout, which only stops the wait.
func (f *Driver) Exec(ctx context.Context, name string, req dd.ExecRequest) (dd.ExecResult, error) {
	return call(f, ctx, OpExec, name, func() (dd.ExecResult, error) {
		if err := req.Validate(name); err != nil {
			return dd.ExecResult{}, err
		}
		handler, err := f.execTarget(name)
		if err != nil {
			return dd.ExecResult{}, err
		}
		if req.Supervised != nil {
			return f.execSupervised(ctx, name, req, handler)
		}
		start := time.Now()
		runCtx, cancel := context.WithTimeout(ctx, req.Timeout)
		defer cancel()
		done := make(chan ExecOutput, 1)
		go func() { done <- handler(runCtx, name, req) }()
		select {
		case out := <-done:
			return f.completed(name, req, out, start), nil
		case <-runCtx.Done():
			res := dd.ExecResult{Reason: dd.ExecDeadlineExceeded}
			if errors.Is(ctx.Err(), context.Canceled) {
				res.Reason = dd.ExecCanceled
			}
			if !req.KeepOnTimeout {
				res.ContainerKilled = true
				f.killForDeadline(name)
			}
			res.Duration = time.Since(start)
			return res, nil
		}
	})
}

// completed is the result of a command that ended with out: its output capped and counted, and the
// container killed for the processes it left, as the real driver does.
func (f *Driver) completed(name string, req dd.ExecRequest, out ExecOutput, start time.Time) dd.ExecResult {
	res := dd.ExecResult{Reason: dd.ExecCompleted, ExitCode: out.ExitCode, Duration: time.Since(start)}
	res.Stdout, res.StdoutCut = head(out.Stdout, req.OutputLimit)
	res.Stderr, res.StderrCut = head(out.Stderr, req.OutputLimit)
	if req.KillSurvivors && out.Survivors > 0 {
		res.Survivors, res.ContainerKilled = out.Survivors, true
		f.killForDeadline(name)
	}
	return res
}

// execTarget checks that the container runs and returns the handler to play the command.
func (f *Driver) execTarget(name string) (ExecHandler, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.runningTarget(name); err != nil {
		return nil, err
	}
	return f.execHandler, nil
}

// runningTarget is the container an exec or a path command runs in: only a running one, not paused. Called
// with f.mu held.
func (f *Driver) runningTarget(name string) (*container, error) {
	c, err := f.existing(name, dd.PhaseExec)
	switch {
	case err != nil:
		return nil, err
	case c.info.State != dd.StateRunning:
		return nil, dd.NewError(dd.KindConflict, dd.PhaseExec, name, "the container is not running")
	}
	return c, nil
}

func (f *Driver) killForDeadline(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.container(name); ok && c.active() {
		f.exit(c, 137, false)
	}
}

// head keeps the first limit bytes and counts the rest.
func head(b []byte, limit int) ([]byte, int64) {
	if len(b) <= limit {
		return append([]byte(nil), b...), 0
	}
	return append([]byte(nil), b[:limit]...), int64(len(b) - limit)
}
