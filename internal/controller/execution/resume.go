package execution

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// A command runs under a supervisor that does not depend on the agent (dd.Supervision), and its exec is in
// the Execution's status before it starts; an agent that finds an Execution Running with no run of its own
// resumes it from there (docs/design/decisions/0028-commands-run-under-a-supervisor.md).

// noteExec records the exec a command is about to start in: after this write, and only after it, the
// command may run. A failed write starts nothing, which judge reads as a command that did not run. launched
// is the Execution as its Running write left it, and becomes the Execution as this write leaves it.
func (r *Reconciler) noteExec(ctx context.Context, launched *dsv1alpha1.Execution, ref dd.ExecRef) error {
	_, err := r.patchWritten(ctx, launched, func(ex *dsv1alpha1.Execution) (bool, error) {
		if ex.UID != launched.UID || ex.Status.Phase != dsv1alpha1.ExecutionRunning {
			return false, fmt.Errorf("execution %s was replaced or is no longer Running", launched.Name)
		}
		return true, nil
	}, func(ex *dsv1alpha1.Execution) {
		ex.Status.Exec = &dsv1alpha1.ExecutionExec{ID: ref.ID, ProcessesBefore: ref.Before}
	})
	if err != nil {
		return dd.NewError(dd.KindUnavailable, dd.PhaseExec, launched.Name, "recording the exec before its start: "+err.Error())
	}
	return nil
}

// endRunning ends or resumes an Execution found Running with no run here: with the outcome its run kept
// because recording it failed, written by this pass; as Lost with nothing run when no exec was recorded (the
// agent stopped before the command started); as Lost with the container stopped when the command ran
// attached to an agent that is gone (endLost); or else by waiting for the command again (resume).
func (r *Reconciler) endRunning(ctx context.Context, ex *dsv1alpha1.Execution, sbx *dsv1alpha1.Sandbox) error {
	if o, ok := r.Runs.kept(ex.UID); ok {
		o.apply(ex)
		return nil
	}
	live, err := r.fullRead(ctx, ex)
	if err != nil || live == nil || live.Status.Phase != dsv1alpha1.ExecutionRunning {
		return err // gone, or the cache is behind a run of this agent that has just ended
	}
	switch ref := live.Status.Exec; {
	case ref == nil:
		settle(ex, dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonLost, fmt.Sprintf("Execution %s was recorded Running, but its agent stopped before the command started: nothing ran", ex.Name))
		return nil
	case ref.ID == "" || sbx == nil || sbx.UID != sandboxOwner(ex):
		return r.endLost(ctx, ex)
	}
	if capturing, _, ok := r.Freezes.StartRun(sbx, ex.Name); !ok {
		return fmt.Errorf("resuming Execution %s waits for Checkpoint %s to let the Sandbox go", ex.Name, capturing)
	}
	t := topology.Names{Sandbox: client.ObjectKeyFromObject(sbx), UID: sbx.UID, Generation: live.Status.TopologyGeneration}
	req := r.request(live, live.Spec, sbx.Spec.CommandEnv)
	req.Supervised.Created = func(dd.ExecRef) error { return nil }
	deadline := live.Status.StartTime.Add(req.Timeout)
	ref := dd.ExecRef{ID: live.Status.Exec.ID, Before: live.Status.Exec.ProcessesBefore}
	r.run(ex, t, true, func(ctx context.Context) (dd.ExecResult, error) {
		res, err := r.Driver.ResumeExec(ctx, t.Primary(), ref, req, time.Until(deadline))
		if res.Reason == dd.ExecCompleted && res.ExitCode == killedAtDeadline && time.Now().After(deadline) {
			res.Reason = dd.ExecDeadlineExceeded // the supervisor killed it while no agent watched
		}
		return res, err //nolint:wrapcheck // judge reads the driver's error kinds
	})
	return nil
}

// killedAtDeadline is what the supervisor exits with when it killed the command at its deadline.
const killedAtDeadline = 137

// judgeResumed corrects judge for a command found again: one never started ran nothing and leaves the
// Sandbox alone; one that cannot be found again (Docker does not know it, the container stopped) is lost, and the container is stopped, as before there was
// a supervisor; one ended by the supervisor at its deadline has its container stopped like any deadline.
func judgeResumed(ex *dsv1alpha1.Execution, res dd.ExecResult, err error, v verdict) verdict {
	switch {
	case res.Reason == dd.ExecNotStarted:
		return verdict{phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonLost,
			message: fmt.Sprintf("Execution %s: its agent stopped after making the exec and before starting it: nothing ran", ex.Name)}
	case err != nil:
		v = verdict{phase: dsv1alpha1.ExecutionFailed, reason: dsv1alpha1.ReasonLost,
			message: fmt.Sprintf("Execution %s was running when its agent stopped, and its command cannot be found again (%v); the Sandbox's container is stopped", ex.Name, err)}
		v.poison, v.stop = dsv1alpha1.ReasonLost, true
	case res.Reason == dd.ExecDeadlineExceeded && !res.ContainerKilled:
		v.stop = true
	}
	return v
}
