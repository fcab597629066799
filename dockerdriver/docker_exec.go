package dockerdriver

import (
	"context"
	"errors"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

const (
	// killTimeout bounds the kill that enforces an exec deadline; it runs even when the caller's ctx is over.
	killTimeout = 10 * time.Second
	// execPoll is how often an exec whose output already closed is checked for exit.
	execPoll = 50 * time.Millisecond
)

// Exec runs req.Command in the running container and keeps the first req.OutputLimit bytes of each stream.
//
// The deadline is enforced from the host by killing the whole container (SIGKILL through the daemon).
// Killing only the exec's process tree is not enough: a process can stop its supervisor (SIGSTOP to its
// parent), double-fork out of the tree onto the container's init, or race a tree walk with new forks. The
// container's cgroup is the one boundary none of them can leave, and a deadline, a cancel or an uncertain
// result stops the container anyway; recovery goes through a Checkpoint (docs/design/executions.md).
// With req.KeepOnTimeout (readiness probes) the deadline only ends the wait and the container is left
// alone; the exec's process may go on running, as Docker cannot kill it by itself.
func (d *Docker) Exec(ctx context.Context, name string, req ExecRequest) (ExecResult, error) {
	if err := req.Validate(name); err != nil {
		return ExecResult{}, err
	}
	info, err := d.running(ctx, name, PhaseExec)
	if err != nil {
		return ExecResult{}, err
	}
	if info.State == StatePaused {
		return ExecResult{}, NewError(KindConflict, PhaseExec, name, "the container is paused")
	}
	if req.KillSurvivors && !hostPIDs(info.Runtime) {
		return ExecResult{}, refusedUnderGVisor(name, info.Runtime, "the command is refused: what it leaves behind could not be found and ended, since gVisor's processes are not the host's")
	}
	if req.Supervised != nil && info.RunVolume != "" {
		return d.execSupervised(ctx, info, name, req)
	}
	if req.Supervised != nil {
		if err := req.Supervised.Created(ExecRef{}); err != nil {
			return ExecResult{}, err
		}
	}
	var before map[string]bool
	if req.KillSurvivors {
		if before, err = d.processes(ctx, info.ID, name); err != nil {
			return ExecResult{}, err
		}
	}
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	stdout, stderr := &headBuffer{limit: req.OutputLimit}, &headBuffer{limit: req.OutputLimit}
	exitCode, err := d.runExec(runCtx, info.ID, name, req, stdout, stderr)
	res := ExecResult{
		ExitCode: exitCode, Stdout: stdout.buf, Stderr: stderr.buf, StdoutCut: stdout.cut, StderrCut: stderr.cut,
	}
	if runCtx.Err() != nil {
		res.Reason = ExecDeadlineExceeded
		if errors.Is(ctx.Err(), context.Canceled) {
			res.Reason = ExecCanceled
		}
		if req.KeepOnTimeout {
			res.Duration = time.Since(start)
			return res, nil
		}
		killErr := d.kill(ctx, info.ID, name)
		res.ContainerKilled = killErr == nil
		res.Duration = time.Since(start)
		return res, killErr
	}
	res.Duration = time.Since(start)
	if err != nil {
		return res, err
	}
	res.Reason = ExecCompleted
	if req.KillSurvivors {
		return d.killSurvivors(ctx, info.ID, name, before, res)
	}
	return res, nil
}

// runExec creates and starts the exec, copies its output into the capped writers and waits for its exit
// code. It returns as soon as ctx ends; the caller then kills the container, unless req.KeepOnTimeout.
func (d *Docker) runExec(ctx context.Context, id, name string, req ExecRequest, stdout, stderr io.Writer) (int, error) {
	created, err := d.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd: req.Command, Env: envList(req.Env), WorkingDir: req.WorkingDir,
		AttachStdin: req.Stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return 0, d.classify(err, PhaseExec, name)
	}
	resp, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return 0, d.classify(err, PhaseExec, name)
	}
	defer resp.Close()
	if req.Stdin != nil {
		go func() { // ends when the command has read it all, or when resp is closed
			if _, err := resp.Conn.Write(req.Stdin); err == nil {
				_ = resp.CloseWrite()
			}
		}()
	}
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, stderr, resp.Reader)
		copied <- err
	}()
	select {
	case <-ctx.Done():
		resp.Close() // unblocks the copy, which must finish before the writers are read
		<-copied
		return 0, ctx.Err()
	case err := <-copied:
		if err != nil && ctx.Err() == nil {
			return 0, NewError(KindUncertain, PhaseExec, name, "the output stream broke")
		}
	}
	return d.awaitExit(ctx, created.ID, name)
}

// awaitExit waits for the exec to exit after its output closed (a process may close its streams and keep
// running) and returns its exit code.
func (d *Docker) awaitExit(ctx context.Context, execID, name string) (int, error) {
	ins, err := d.awaitExitInspect(ctx, execID, name)
	return ins.ExitCode, err
}

// awaitExitInspect is awaitExit with the exec's last inspection (its host PID as well as its exit code).
func (d *Docker) awaitExitInspect(ctx context.Context, execID, name string) (container.ExecInspect, error) {
	for {
		ins, err := d.cli.ContainerExecInspect(ctx, execID)
		if err != nil {
			return container.ExecInspect{}, d.classify(err, PhaseExec, name)
		}
		if !ins.Running {
			return ins, nil
		}
		select {
		case <-ctx.Done():
			return container.ExecInspect{}, ctx.Err()
		case <-time.After(execPoll):
		}
	}
}

// kill SIGKILLs the container even if ctx is over: what the exec started must not outlive its deadline.
func (d *Docker) kill(ctx context.Context, id, name string) error {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	err := d.cli.ContainerKill(kctx, id, "KILL")
	if err == nil || cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) { // gone or no longer running
		return nil
	}
	return d.classify(err, PhaseExec, name)
}
