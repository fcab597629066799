package dockerdriver

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
)

const (
	// supervisorPath is the supervisor in the run volume; runsPath holds one folder per run, which the
	// supervisor (running as the container's user) makes and clears.
	supervisorPath = RunMountPath + "/supervise"
	runsPath       = RunMountPath + "/runs"
	// The exec inspections that wait for a supervised command come every pollFirst during its first
	// pollQuick (most commands are short, and their round trip waits on this), then slow down, doubling up
	// to pollMax, so that a long command costs a few inspections a second.
	pollFirst = 20 * time.Millisecond
	pollQuick = time.Second
	pollMax   = 500 * time.Millisecond
	// superviseGrace is how much later than the host the supervisor enforces the deadline: the host's kill of
	// the container comes first whenever an agent waits, and the supervisor's only when none does.
	superviseGrace = 2 * time.Second
)

// execSupervised runs req under the supervisor, detached (see Supervision), and waits for it.
func (d *Docker) execSupervised(ctx context.Context, id, name string, req ExecRequest) (ExecResult, error) {
	ref, start, err := d.createSupervised(ctx, id, name, req)
	if err != nil {
		if ctx.Err() != nil { // nothing was started: say so rather than leave the outcome uncertain
			return ExecResult{}, NewError(KindUnavailable, PhaseExec, name, "cancelled before the command started")
		}
		return ExecResult{}, err
	}
	if err := req.Supervised.Created(ref); err != nil {
		return ExecResult{}, err
	}
	if err := d.startDetached(ctx, ref.ID, name, req.Stdin); err != nil {
		if ctx.Err() != nil { // it may have started: whoever resumes it finds out (ResumeExec)
			return ExecResult{Reason: ExecCanceled}, nil
		}
		return ExecResult{}, err
	}
	return d.awaitSupervised(ctx, id, name, ref, req, req.Timeout-time.Since(start))
}

// createSupervised puts the supervisor in place and makes the exec, without starting it; start is when its
// deadline begins to count.
func (d *Docker) createSupervised(ctx context.Context, id, name string, req ExecRequest) (ExecRef, time.Time, error) {
	if err := d.installSupervisor(ctx, id, name, req.Supervised.Image); err != nil {
		return ExecRef{}, time.Time{}, err
	}
	ref := ExecRef{}
	if req.KillSurvivors {
		before, err := d.processes(ctx, id, name)
		if err != nil {
			return ExecRef{}, time.Time{}, err
		}
		ref.Before = slices.Sorted(maps.Keys(before))
	}
	start := time.Now() // the deadline counts from here, before the supervisor's own
	cmd := append([]string{supervisorPath, runsPath + "/" + req.Supervised.Key, strconv.Itoa(req.OutputLimit),
		strconv.FormatInt(int64((req.Timeout+superviseGrace+time.Second-1)/time.Second), 10), "--"}, req.Command...)
	created, err := d.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd: cmd, Env: envList(req.Env), WorkingDir: req.WorkingDir, AttachStdin: req.Stdin != nil,
	})
	if err != nil {
		return ExecRef{}, time.Time{}, d.classify(err, PhaseExec, name)
	}
	ref.ID = created.ID
	return ref, start, nil
}

// startDetached starts the exec without waiting for it. With stdin it attaches to write it and close it;
// the command's output goes to the supervisor's files, never through the attachment, so the command does
// not depend on it.
func (d *Docker) startDetached(ctx context.Context, execID, name string, stdin []byte) error {
	if stdin == nil {
		return d.classify(d.cli.ContainerExecStart(ctx, execID, container.ExecStartOptions{Detach: true}), PhaseExec, name)
	}
	resp, err := d.cli.ContainerExecAttach(ctx, execID, container.ExecAttachOptions{})
	if err != nil {
		return d.classify(err, PhaseExec, name)
	}
	go func() { // ends when the command has read it all, or with the command
		defer resp.Close()
		if _, err := resp.Conn.Write(stdin); err == nil {
			_ = resp.CloseWrite()
			_, _ = resp.Reader.Discard(1) // holds the attachment until the command ends
		}
	}()
	return nil
}

// ResumeExec waits again for a supervised exec started by a caller gone since (see Driver).
func (d *Docker) ResumeExec(ctx context.Context, name string, ref ExecRef, req ExecRequest, left time.Duration) (ExecResult, error) {
	if err := req.Validate(name); err != nil {
		return ExecResult{}, err
	}
	if req.Supervised == nil || ref.ID == "" {
		return ExecResult{}, NewError(KindInvalidSpec, PhaseExec, name, "only a supervised exec with an ID can be resumed")
	}
	info, err := d.running(ctx, name, PhaseExec)
	if err != nil {
		return ExecResult{}, err
	}
	ins, err := d.cli.ContainerExecInspect(ctx, ref.ID)
	switch {
	case cerrdefs.IsNotFound(err):
		return ExecResult{}, NewError(KindNotFound, PhaseExec, name, "Docker knows no exec "+ref.ID)
	case err != nil:
		return ExecResult{}, d.classify(err, PhaseExec, name)
	case ins.ContainerID != info.ID:
		return ExecResult{}, NewError(KindNotFound, PhaseExec, name, "exec "+ref.ID+" belongs to another container")
	case !ins.Running && ins.Pid == 0:
		return ExecResult{Reason: ExecNotStarted}, nil
	}
	return d.awaitSupervised(ctx, info.ID, name, ref, req, max(left, time.Millisecond))
}

// awaitSupervised waits at most left for the supervised exec, then reads its outcome: the exit code from
// Docker, the output from the run's files. At the deadline the container is frozen, what the command printed
// until then is read, and the container is killed, as for any exec (its tmpfs run volume goes with it); when
// ctx ends first, the command is left running (Supervision).
func (d *Docker) awaitSupervised(ctx context.Context, id, name string, ref ExecRef, req ExecRequest, left time.Duration) (ExecResult, error) {
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	code, err := d.pollExit(runCtx, ref.ID, name)
	switch {
	case ctx.Err() != nil:
		return ExecResult{Reason: ExecCanceled, Duration: time.Since(start)}, nil
	case runCtx.Err() != nil:
		res := d.outputAtDeadline(ctx, id, name, req)
		killErr := d.kill(ctx, id, name)
		res.Reason, res.ContainerKilled, res.Duration = ExecDeadlineExceeded, killErr == nil, time.Since(start)
		return res, killErr
	case err != nil:
		return ExecResult{}, err
	}
	var res ExecResult
	if !d.printedNothing(ctx, id, req.Supervised.Key) {
		res, err = d.readRun(ctx, id, name, req.Supervised.Key, req.OutputLimit)
	}
	res.Reason, res.ExitCode, res.Duration = ExecCompleted, code, time.Since(start)
	if err != nil {
		return res, err
	}
	if req.KillSurvivors {
		before := map[string]bool{}
		for _, pid := range ref.Before {
			before[pid] = true
		}
		return d.killSurvivors(ctx, id, name, before, res)
	}
	return res, nil
}

// outputAtDeadline freezes the container, so that nothing is printed past the deadline, and reads what the
// command printed before it. Either step may fail (a container already paused, or gone): the output is then
// what could be read, or none, and the kill that follows ends the command all the same.
func (d *Docker) outputAtDeadline(ctx context.Context, id, name string, req ExecRequest) ExecResult {
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), killTimeout)
	defer cancel()
	if err := d.cli.ContainerPause(kctx, id); err != nil && !cerrdefs.IsConflict(err) {
		return ExecResult{}
	}
	res, _ := d.readRun(kctx, id, name, req.Supervised.Key, req.OutputLimit)
	return res
}

// pollExit inspects the exec until it has exited, quickly at first and then more and more slowly, and
// returns its exit code.
func (d *Docker) pollExit(ctx context.Context, execID, name string) (int, error) {
	start := time.Now()
	for wait := pollFirst; ; {
		if time.Since(start) > pollQuick {
			wait = min(2*wait, pollMax)
		}
		ins, err := d.cli.ContainerExecInspect(ctx, execID)
		switch {
		case err != nil && ctx.Err() != nil:
			return 0, ctx.Err()
		case err != nil:
			return 0, d.classify(err, PhaseExec, name)
		case !ins.Running:
			return ins.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// errNoSupervisor says the supervisor image holds no supervisor.
var errNoSupervisor = errors.New("the image has no /dockside-supervise")
