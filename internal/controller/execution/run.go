package execution

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// recordTimeout bounds writing a run's outcome, which happens even when the run was cancelled.
const recordTimeout = 30 * time.Second

// launch runs the command of an Execution recorded Running, in the background: the pass that started it
// ends at once. The command runs under the supervisor (dd.Supervision), its exec recorded in the status
// before it starts (noteExec), so that it outlives this agent (resume.go). A command Docker refused to start
// because the Sandbox was paused meanwhile is queued again (requeue).
func (r *Reconciler) launch(ex *dsv1alpha1.Execution, p runPlan) {
	r.run(ex, p.target, false, func(ctx context.Context) (dd.ExecResult, error) {
		req := r.request(ex, p.spec, p.commandEnv)
		req.Supervised.Created = func(ref dd.ExecRef) error { return r.noteExec(ctx, ex, ref) }
		return r.Driver.Exec(ctx, p.target.Primary(), req)
	})
}

// run waits for a command in the background (exec starts it, or finds it again when resumed) until it ends,
// its deadline passes, the Execution is deleted or the agent stops, and then records its outcome and gives
// the Sandbox back to captures (Freezes). When the agent stops, a supervised command is left running and
// nothing is recorded: the next agent resumes it.
func (r *Reconciler) run(ex *dsv1alpha1.Execution, t topology.Names, resumed bool, exec func(context.Context) (dd.ExecResult, error)) {
	key := client.ObjectKeyFromObject(ex)
	ctx, cancel := context.WithCancel(r.base)
	r.Runs.start(key, execRun{uid: ex.UID, sandbox: t.UID, cancel: cancel})
	log := ctrl.Log.WithName("execution").WithValues("execution", key, "sandbox", t.Sandbox.Name)
	go func() {
		defer r.notifyEnded(ex) // after end: the passes it brings see the Sandbox free
		defer r.Freezes.EndRun(t.UID)
		defer r.Runs.end(key)
		defer cancel()
		log.V(1).Info("Running the command", "resumed", resumed)
		ctx := traceRun(ctx, ex)
		runCtx, endRun := traceCommand(ctx)
		var res dd.ExecResult
		awake, err := r.wake(runCtx, t)
		if err == nil {
			res, err = exec(runCtx)
			awake()
		}
		endRun(res, err)
		if res.Reason == dd.ExecCanceled && !res.ContainerKilled && r.base.Err() != nil {
			log.Info("The agent stops; the command goes on, for the next agent to report")
			return
		}
		rctx, done := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer done()
		if refused(res, err) && ctx.Err() == nil && !resumed {
			if reason, ok := r.stillPaused(rctx, t); ok {
				if err := r.requeue(rctx, ex, reason); err != nil {
					log.Error(err, "Queueing again an Execution whose command Docker refused to start")
				}
				return
			}
		}
		v := judge(ex, res, err, r.base.Err() != nil)
		if resumed {
			v = judgeResumed(ex, res, err, v)
		}
		rctx, endOutcome := traceOutcome(rctx, ex, v)
		defer endOutcome()
		if v.poison != "" {
			if v.stop {
				if err := r.Driver.StopContainer(rctx, t.Primary(), 0); err != nil {
					log.Error(err, "Stopping the Sandbox's container after a lost run; the Sandbox reconciler retries")
				}
			}
			if err := r.poisonSandbox(rctx, ex, t, v.poison, v.message); err != nil {
				log.Error(err, "Marking the Sandbox TopologyPoisoned")
			}
		}
		if o := newOutcome(v, res); r.record(rctx, ex, o) != nil {
			// Before the run ends: the pass its end brings must find the outcome, not a lost run.
			log.Info("Recording the outcome failed; it is kept for the next pass to write")
			r.Runs.keep(key, ex.UID, o)
		}
		log.V(1).Info("Finished", "reason", v.reason)
	}()
}

// wake marks the command as going on in its Sandbox, until awake is called, thawing the Sandbox first when
// its agent froze it for idleness (docs/design/idle-pause.md). A thaw that fails is a conflict with no
// outcome: the command did not start, and stillPaused decides whether it waits.
func (r *Reconciler) wake(ctx context.Context, t topology.Names) (awake func(), err error) {
	awake, _, err = r.Idle.Use(ctx, t.Sandbox, t.UID)
	if err != nil {
		return nil, dd.NewError(dd.KindConflict, dd.PhaseExec, t.Primary(), err.Error())
	}
	return awake, nil
}

// notifyEnded brings a pass for an Execution whose run has ended, which moves its Sandbox's queue along:
// passes that ran while the run was still recording its outcome left both alone.
func (r *Reconciler) notifyEnded(ex *dsv1alpha1.Execution) {
	select {
	case r.ended <- event.GenericEvent{Object: ex}:
	case <-r.base.Done(): // the agent stops; its successor looks at everything anyway
	}
}

// request is the driver's exec for an Execution's whole spec: the command runs under the supervisor, its
// output is capped at the lower of its maxOutputBytes and the node's ceiling, and nothing it starts may
// outlive it. sandboxEnv is the Sandbox's commandEnv, which the Execution's own env overrides. The caller
// sets Supervised.Created.
func (r *Reconciler) request(ex *dsv1alpha1.Execution, spec dsv1alpha1.ExecutionSpec, sandboxEnv []dsv1alpha1.ExecutionEnvVar) dd.ExecRequest {
	req := dd.ExecRequest{
		Command: spec.Command, WorkingDir: spec.WorkingDir, KillSurvivors: true,
		Supervised:  &dd.Supervision{Image: r.Options.SupervisorImage, Key: string(ex.UID)},
		Timeout:     time.Duration(max(spec.TimeoutSeconds, 1)) * time.Second,
		OutputLimit: min(int(spec.MaxOutputBytes), r.Options.MaxOutputBytes),
	}
	if spec.MaxOutputBytes == 0 {
		req.OutputLimit = min(65536, r.Options.MaxOutputBytes)
	}
	if spec.TimeoutSeconds == 0 {
		req.Timeout = time.Minute
	}
	req.Env = topology.CommandEnv(sandboxEnv, spec.Env)
	if spec.Stdin != "" {
		req.Stdin = []byte(spec.Stdin)
	}
	return req
}

// verdict is how a run ended, for the Execution and, when the agent killed (or could not vouch for) the
// Sandbox's container, for the Sandbox too.
type verdict struct {
	phase    dsv1alpha1.ExecutionPhase
	reason   string
	message  string
	exitCode *int32
	poison   string // TopologyPoisoned reason for the Sandbox; "" leaves it alone
	stop     bool   // the container may still run: stop it
}

// judge reads the driver's result. Nothing is ever retried: a command that may have run has run.
func judge(ex *dsv1alpha1.Execution, res dd.ExecResult, err error, agentStopping bool) verdict {
	failed := func(reason, format string, args ...any) verdict {
		return verdict{phase: dsv1alpha1.ExecutionFailed, reason: reason, message: fmt.Sprintf(format, args...)}
	}
	switch {
	case res.Reason == dd.ExecDeadlineExceeded:
		v := failed(dsv1alpha1.ReasonDeadlineExceeded, "Execution %s ran past timeoutSeconds (%ds): the Sandbox's container was killed", ex.Name, ex.Spec.TimeoutSeconds)
		v.poison = dsv1alpha1.ReasonDeadlineExceeded
		return v
	case res.Reason == dd.ExecCanceled:
		why := "was deleted while its command ran"
		if agentStopping {
			why = "was running when its agent stopped"
		}
		v := failed(dsv1alpha1.ReasonCanceled, "Execution %s %s: the Sandbox's container was killed", ex.Name, why)
		v.poison, v.stop = dsv1alpha1.ReasonCanceled, !res.ContainerKilled // a supervised command is left to us
		return v
	case dd.IsNotFound(err) || dd.IsConflict(err) || dd.IsUnavailable(err):
		return failed(dsv1alpha1.ReasonSandboxNotReady, "the command did not run: %v", err)
	case dd.IsInvalidSpec(err):
		return failed(dsv1alpha1.ReasonError, "the command was refused: %v", err)
	case err != nil:
		v := failed(dsv1alpha1.ReasonLost, "Execution %s: the outcome is unknown (%v); the Sandbox's container is stopped", ex.Name, err)
		v.poison, v.stop = dsv1alpha1.ReasonLost, true
		return v
	}
	code := int32(res.ExitCode)
	v := verdict{phase: dsv1alpha1.ExecutionSucceeded, reason: dsv1alpha1.ReasonCompleted, exitCode: &code,
		message: fmt.Sprintf("the command exited with code %d", code)}
	switch {
	case res.StdoutCut > 0 || res.StderrCut > 0 || res.CutUnread:
		v.phase, v.reason = dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonOutputLimitExceeded
		v.message += cutMessage(res)
	case code != 0:
		v.phase, v.reason = dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonError
	}
	if res.Survivors > 0 {
		v.message += fmt.Sprintf("; it left %d processes running, so the Sandbox's container was killed", res.Survivors)
		v.poison = dsv1alpha1.ReasonLeftoverProcesses
	}
	return v
}

// cutMessage says how much output was cut: exactly, or at least, when the driver did not read it all.
func cutMessage(res dd.ExecResult) string {
	if res.CutUnread {
		return fmt.Sprintf("; output past the cap was cut (at least %d bytes of stdout, %d of stderr: the rest was not read back)",
			res.StdoutCut, res.StderrCut)
	}
	return fmt.Sprintf("; output past the cap was cut (%d bytes of stdout, %d of stderr)", res.StdoutCut, res.StderrCut)
}

// refused tells whether Docker refused to start the command for the container's state (paused, not
// running) before anything ran: a conflict that comes with no outcome (dd.ExecResult.Reason).
func refused(res dd.ExecResult, err error) bool {
	return dd.IsConflict(err) && res.Reason == ""
}

// stillPaused looks at a primary whose exec Docker refused: paused (spec.lifecycle turned Paused as the
// command was about to start) or running again (resumed since), the command may run later, and it says
// with which reason the Execution waits. Anything else (stopped, gone) is for judge.
func (r *Reconciler) stillPaused(ctx context.Context, t topology.Names) (string, bool) {
	c, err := r.Driver.ObserveContainer(ctx, t.Primary())
	switch {
	case err != nil:
		return "", false
	case c.State == dd.StatePaused:
		return dsv1alpha1.ReasonSandboxPaused, true
	case c.State == dd.StateRunning:
		return dsv1alpha1.ReasonQueued, true
	}
	return "", false
}

// requeue records a launched Execution Queued again: its command never started, so it takes its turn
// again, first in its Sandbox's queue, when the Sandbox is Ready and running.
func (r *Reconciler) requeue(ctx context.Context, launched *dsv1alpha1.Execution, reason string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		ex := &dsv1alpha1.Execution{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(launched), ex); err != nil || ex.UID != launched.UID {
			return client.IgnoreNotFound(err)
		}
		before := ex.DeepCopy()
		ex.Status.StartTime, ex.Status.TopologyGeneration = nil, 0
		queued(ex, reason, fmt.Sprintf("Docker refused to start the command because the container of Sandbox %s was paused at that moment; the command did not run and takes its turn again", ex.Spec.SandboxName))
		return client.IgnoreNotFound(r.Status().Patch(ctx, ex, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
	})
}
