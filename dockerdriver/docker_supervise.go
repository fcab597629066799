package dockerdriver

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/supervision"
)

// SupervisorLabel is the holder image's label that names the version of the supervisor in it
// (supervision.Version).
const SupervisorLabel = dsv1alpha1.LabelPrefix + "supervisor"

const (
	// supervisorPath is the supervisor in the run volume (where a primary without a supervisor volume has it,
	// and whose name it has in a supervisor volume); runsPath holds one folder per run, which the
	// supervisor (running as the container's user) makes and clears. The name changes with what the agent
	// and the supervisor agree on (v2: the input in supervision.StdinEnv), so that a primary started under an
	// older agent gets this supervisor beside its own; the older one, at supervisorV1Path, is emptied then,
	// which gives its room in the run volume back (a running one keeps its file until it exits).
	supervisorPath   = RunMountPath + "/supervise.v" + supervision.Version
	supervisorV1Path = RunMountPath + "/supervise"
	runsPath         = RunMountPath + "/runs"
	// The exec inspections that wait for a supervised command come every pollFirst during its first
	// pollQuick (most commands are short, and their round trip waits on this), then slow down, doubling up
	// to pollMax, so that a long command costs a few inspections a second.
	pollFirst = 20 * time.Millisecond
	pollQuick = time.Second
	pollMax   = 500 * time.Millisecond
	// superviseGrace is how much later than the host the supervisor enforces the deadline: the host's kill of
	// the container comes first whenever an agent waits, and the supervisor's only when none does.
	superviseGrace = 2 * time.Second
	// readBackGrace is how long past the command's deadline its output may still be read back: the read is
	// bounded in bytes, and this bounds it in time whatever the files claim.
	readBackGrace = 5 * time.Second
)

// execSupervised runs req under the supervisor, detached (see Supervision), and waits for it.
func (d *Docker) execSupervised(ctx context.Context, info ContainerInfo, name string, req ExecRequest) (ExecResult, error) {
	ref, start, err := d.createSupervised(ctx, info, name, req)
	if err != nil {
		if ctx.Err() != nil { // nothing was started: say so rather than leave the outcome uncertain
			return ExecResult{}, NewError(KindUnavailable, PhaseExec, name, "cancelled before the command started")
		}
		return ExecResult{}, err
	}
	if err := req.Supervised.Created(ref); err != nil {
		return ExecResult{}, err
	}
	if err := d.startDetached(ctx, ref.ID, name); err != nil {
		if ctx.Err() != nil { // it may have started: whoever resumes it finds out (ResumeExec)
			return ExecResult{Reason: ExecCanceled}, nil
		}
		return ExecResult{}, err
	}
	return d.awaitSupervised(ctx, info, name, ref, req, req.Timeout-time.Since(start))
}

// createSupervised puts the supervisor in place and makes the exec, without starting it; start is when its
// deadline begins to count.
func (d *Docker) createSupervised(ctx context.Context, info ContainerInfo, name string, req ExecRequest) (ExecRef, time.Time, error) {
	id := info.ID
	supervisor, err := d.placeSupervisor(ctx, info, name, req.Supervised.Image)
	if err != nil {
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
	cmd := append([]string{supervisor, runsPath + "/" + req.Supervised.Key, strconv.Itoa(req.OutputLimit),
		strconv.FormatInt(int64((req.Timeout+superviseGrace+time.Second-1)/time.Second), 10), "--"}, req.Command...)
	created, err := d.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd: cmd, Env: supervisorEnv(req), WorkingDir: req.WorkingDir,
	})
	if err != nil {
		return ExecRef{}, time.Time{}, d.classify(err, PhaseExec, name)
	}
	ref.ID = created.ID
	return ref, start, nil
}

// startDetached starts the exec without waiting for it: its input, if any, is in its environment
// (supervisorEnv), and its output goes to the supervisor's files, so the command depends on no connection.
func (d *Docker) startDetached(ctx context.Context, execID, name string) error {
	return d.classify(d.cli.ContainerExecStart(ctx, execID, container.ExecStartOptions{Detach: true}), PhaseExec, name)
}

// supervisorEnv is the exec's environment: the command's, and its standard input for the supervisor to feed
// it (supervision.StdinEnv). A variable of the command's own by that name is dropped: the supervisor would
// take it for input.
func supervisorEnv(req ExecRequest) []string {
	env := envList(slices.DeleteFunc(slices.Clone(req.Env), func(e EnvVar) bool { return e.Name == supervision.StdinEnv }))
	if req.Stdin != nil {
		env = append(env, supervision.StdinEnv+"="+base64.StdEncoding.EncodeToString(req.Stdin))
	}
	return env
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
	return d.awaitSupervised(ctx, info, name, ref, req, max(left, time.Millisecond))
}

// awaitSupervised waits at most left for the supervised exec in container info, then reads its outcome: the
// exit code from Docker, the output from the run's files (readOutput). At the deadline the container is
// frozen, what the command printed until then is read, and the container is killed, as for any exec (its
// tmpfs run volume goes with it); when ctx ends first, the command is left running (Supervision).
func (d *Docker) awaitSupervised(ctx context.Context, info ContainerInfo, name string, ref ExecRef, req ExecRequest, left time.Duration) (ExecResult, error) {
	id, start := info.ID, time.Now()
	runCtx, cancel := context.WithTimeout(ctx, left)
	defer cancel()
	readCtx, cancelRead := context.WithDeadlineCause(ctx, start.Add(left+readBackGrace), errReadBackTime)
	defer cancelRead()
	code, err := d.pollExit(runCtx, ref.ID, name)
	switch {
	case ctx.Err() != nil:
		return ExecResult{Reason: ExecCanceled, Duration: time.Since(start)}, nil
	case runCtx.Err() != nil:
		res := d.outputAtDeadline(ctx, info, req)
		killErr := d.kill(ctx, id, name)
		res.Reason, res.ContainerKilled, res.Duration = ExecDeadlineExceeded, killErr == nil, time.Since(start)
		return res, killErr
	case err != nil:
		return ExecResult{}, err
	}
	res, err := d.readOutput(readCtx, info, req)
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
func (d *Docker) outputAtDeadline(ctx context.Context, info ContainerInfo, req ExecRequest) ExecResult {
	kctx, cancel := context.WithTimeoutCause(context.WithoutCancel(ctx), killTimeout, errReadBackTime)
	defer cancel()
	if err := d.cli.ContainerPause(kctx, info.ID); err != nil && !cerrdefs.IsConflict(err) {
		return ExecResult{}
	}
	res, _ := d.readOutput(kctx, info, req)
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
