package fake

import (
	"context"
	"fmt"
	"time"

	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// supervised is an exec run under the supervisor (dd.Supervision), as Docker keeps it: it runs whether or
// not anyone waits, ends with its container, and its exit code stays until the container is removed.
type supervised struct {
	container string // ID
	started   bool
	cancel    context.CancelFunc
	done      chan struct{}
	out       ExecOutput
}

// execSupervised plays a supervised exec: in a container without a run volume it runs attached, as the real
// driver does; otherwise it is made, handed to Created, started detached and waited for.
func (f *Driver) execSupervised(ctx context.Context, name string, req dd.ExecRequest, handler ExecHandler) (dd.ExecResult, error) {
	f.mu.Lock()
	c, err := f.existing(name, dd.PhaseExec)
	if err != nil {
		f.mu.Unlock()
		return dd.ExecResult{}, err
	}
	if c.info.RunVolume == "" {
		f.mu.Unlock()
		if err := req.Supervised.Created(dd.ExecRef{}); err != nil {
			return dd.ExecResult{}, err
		}
		attached := req
		attached.Supervised = nil
		return f.Exec(ctx, name, attached)
	}
	f.nextExec++
	id := fmt.Sprintf("exec-%d", f.nextExec)
	e := &supervised{container: c.info.ID, done: make(chan struct{})}
	f.execs[id] = e
	f.mu.Unlock()
	if err := req.Supervised.Created(dd.ExecRef{ID: id}); err != nil {
		return dd.ExecResult{}, err
	}
	f.mu.Lock()
	if !c.active() {
		f.mu.Unlock()
		return dd.ExecResult{}, dd.NewError(dd.KindConflict, dd.PhaseExec, name, "the container is not running")
	}
	runCtx, cancel := context.WithTimeout(context.Background(), req.Timeout) // the supervisor's deadline
	e.started, e.cancel = true, cancel
	f.mu.Unlock()
	go func() {
		out := handler(runCtx, name, req)
		cancel()
		f.mu.Lock()
		e.out = out
		f.mu.Unlock()
		close(e.done)
	}()
	return f.await(ctx, name, e, req, req.Timeout)
}

// ResumeExec waits again for a supervised exec, as the real driver does.
func (f *Driver) ResumeExec(ctx context.Context, name string, ref dd.ExecRef, req dd.ExecRequest, left time.Duration) (dd.ExecResult, error) {
	return call(f, ctx, OpResumeExec, name, func() (dd.ExecResult, error) {
		if err := req.Validate(name); err != nil {
			return dd.ExecResult{}, err
		}
		if _, err := f.execTarget(name); err != nil {
			return dd.ExecResult{}, err
		}
		f.mu.Lock()
		e, ok := f.execs[ref.ID]
		f.mu.Unlock()
		switch {
		case !ok:
			return dd.ExecResult{}, dd.NewError(dd.KindNotFound, dd.PhaseExec, name, "Docker knows no exec "+ref.ID)
		case !e.started:
			return dd.ExecResult{Reason: dd.ExecNotStarted}, nil
		}
		return f.await(ctx, name, e, req, max(left, time.Millisecond))
	})
}

// await waits at most left for the exec: its end gives its outcome, the deadline kills the container, and
// ctx ending leaves the command running.
func (f *Driver) await(ctx context.Context, name string, e *supervised, req dd.ExecRequest, left time.Duration) (dd.ExecResult, error) {
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	select {
	case <-e.done:
	case <-runCtx.Done():
		if ctx.Err() != nil {
			return dd.ExecResult{Reason: dd.ExecCanceled, Duration: time.Since(start)}, nil
		}
		f.killForDeadline(name)
		return dd.ExecResult{Reason: dd.ExecDeadlineExceeded, ContainerKilled: true, Duration: time.Since(start)}, nil
	}
	f.mu.Lock()
	out := e.out
	f.mu.Unlock()
	return f.completed(name, req, out, start), nil
}

// endExecs ends the supervised execs of a container that stopped. Called with f.mu held.
func (f *Driver) endExecs(id string) {
	for _, e := range f.execs {
		if e.container == id && e.cancel != nil {
			e.cancel()
		}
	}
}

// forgetExecs drops the execs of a removed container. Called with f.mu held.
func (f *Driver) forgetExecs(id string) {
	for eid, e := range f.execs {
		if e.container == id {
			delete(f.execs, eid)
		}
	}
}

// mountedAt names the volume the spec mounts at target (read-only when readOnly), "" for none.
func mountedAt(spec dd.ContainerSpec, target string, readOnly bool) string {
	for _, m := range spec.Mounts {
		if m.Target == target && (m.ReadOnly || !readOnly) {
			return m.Volume
		}
	}
	return ""
}
