package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

const sessionDeadlineMessage = "the session reached activeDeadlineSeconds and was stopped"

// releaseSecretFiles removes secrets holders that hold files no start needs any more: once the primary
// they were written for has started (it holds the volume itself from then on), once the topology settled,
// and any of an older generation. Without a holder and a running primary, the volume's files are gone.
func (r *Reconciler) releaseSecretFiles(ctx context.Context, s *scope) (bool, error) {
	for name, c := range s.containers {
		owner, role, service := dd.OwnerFromLabels(c.Labels)
		if role != dsv1alpha1.RoleHolder || service != secretsHolderService {
			continue
		}
		if owner.Generation == s.gen() && !s.started() && !topology.Settled(s.sbx) {
			continue
		}
		if err := r.Driver.RemoveContainer(ctx, name); err != nil {
			return s.fail(dsv1alpha1.ReasonCleanupFailed, "removing the holder of the secret files", err)
		}
		delete(s.containers, name)
	}
	return false, nil
}

// removeFailedStart removes the containers and network of a topology poisoned before its primary ever ran
// (the startup deadline passed, or a service failed on the way): nothing of it ran that is worth keeping
// stopped, and its network holds address space. The workspace and its holder stay. A topology poisoned
// after its primary ran is only stopped (holdSettled).
func (r *Reconciler) removeFailedStart(ctx context.Context, s *scope) (bool, error) {
	if !topology.Poisoned(s.sbx) || s.started() {
		return false, nil
	}
	if err := r.removeTopology(ctx, s, 0); err != nil {
		return s.fail(dsv1alpha1.ReasonCleanupFailed, "removing what the failed start built", err)
	}
	s.sbx.Status.NetworkID = ""
	r.releaseSubnet(string(s.sbx.UID)) // no network of the Sandbox is left to hold it
	return false, nil
}

// holdSettled keeps a settled topology as it ended: a finished run, a session stopped at its deadline or a
// poisoned topology is never restarted, only kept stopped (the workspace holder stays up) until a spec
// change rolls it or the Sandbox goes. A finished run is deleted ttlSecondsAfterFinished after it ended.
func (r *Reconciler) holdSettled(ctx context.Context, s *scope) (bool, error) {
	st := &s.sbx.Status
	switch {
	case topology.Poisoned(s.sbx):
		c := meta.FindStatusCondition(st.Conditions, dsv1alpha1.ConditionTopologyPoisoned)
		s.note(factFailed, c.Reason, "%s", c.Message)
	case st.Result != nil:
		runOutcome(s)
	case st.FinishTime != nil:
		s.note(factFailed, dsv1alpha1.ReasonDeadlineExceeded, sessionDeadlineMessage)
	default:
		return false, nil
	}
	// Nothing of a settled topology starts again: a start that failed before its deadline (a service never
	// ready, say) lets go of the wakeup it asked for at it, or the Sandbox is woken at rest.
	r.Wake.Cancel(s.key())
	if err := r.stopTopology(ctx, s); err != nil {
		return true, err
	}
	if err := r.keepHolder(ctx, s); err != nil {
		return true, err
	}
	markServicesStopped(s)
	if st.Result != nil {
		return r.expire(ctx, s)
	}
	return true, nil
}

// followPrimary settles the Sandbox when its primary ended or vanished, before anything else is looked at:
// a run that finished has its result even when its services stopped around the same time.
func (r *Reconciler) followPrimary(ctx context.Context, s *scope) (bool, error) {
	c := s.containers[s.primaryName()]
	switch {
	case topology.Ended(c):
		return r.primaryEnded(ctx, s, c)
	case !c.Exists && s.sbx.Status.ContainerID != "":
		if s.isRun() {
			return r.loseRun(s)
		}
		return r.poison(ctx, s, dsv1alpha1.ReasonPrimaryExited, "the primary container was removed")
	}
	return false, nil
}

// Settling decisions (poisoned, finished) only record themselves and end the pass; what follows from them
// (stopping the topology, expiring) is done by holdSettled in the pass that reads them back, so that
// nothing is ever stopped on a decision whose status write was lost.

// poison marks the topology failed for good. Nothing repairs it but a spec change (which rolls it) or a new
// Sandbox; it is stopped, its workspace kept.
func (r *Reconciler) poison(ctx context.Context, s *scope, reason, format string, args ...any) (bool, error) {
	msg := fmt.Sprintf(format, args...)
	status.Set(s.sbx, dsv1alpha1.ConditionTopologyPoisoned, true, reason, msg)
	s.note(factFailed, reason, "%s", msg)
	ctrl.LoggerFrom(ctx).Info("Topology poisoned", "reason", reason, "detail", msg)
	r.event(s.sbx, true, EventPoisoned, "Poison", "%s; the topology is stopped, the workspace kept", msg)
	return true, nil
}

// finishRun records how a run's primary ended, with the tail of its output.
func (r *Reconciler) finishRun(ctx context.Context, s *scope, c dd.ContainerInfo) (bool, error) {
	code := int32(c.ExitCode)
	res := &dsv1alpha1.RunResult{ExitCode: &code, Reason: runReason(s, c)}
	tail, err := r.Driver.LogTail(ctx, c.Name, dsv1alpha1.MaxOutputTailBytes)
	if err != nil {
		return s.fail(dsv1alpha1.ReasonRunning, "reading the run's output", err)
	}
	res.OutputTail, res.TruncatedBytes = outputTail(tail)
	return r.settleRun(s, res, c.FinishedAt), nil
}

// loseRun records a run whose primary container vanished before the agent saw it end.
func (r *Reconciler) loseRun(s *scope) (bool, error) {
	return r.settleRun(s, &dsv1alpha1.RunResult{Reason: dsv1alpha1.ReasonLost}, time.Now()), nil
}

func (r *Reconciler) settleRun(s *scope, res *dsv1alpha1.RunResult, finished time.Time) bool {
	s.sbx.Status.Result = res
	s.sbx.Status.FinishTime = &metav1.Time{Time: finished}
	for i := range s.sbx.Status.Services {
		s.sbx.Status.Services[i].Message = "stopped: the run finished"
	}
	runOutcome(s)
	r.event(s.sbx, res.Reason != dsv1alpha1.ReasonCompleted, runEvent(res), "Finish", "%s", describeRun(res))
	return true
}

// runReason says how a run ended, from what Docker recorded (so a restarted agent says the same).
func runReason(s *scope, c dd.ContainerInfo) string {
	switch at, ok := deadline(s, c); {
	case c.OOMKilled:
		return dsv1alpha1.ReasonOOMKilled
	case ok && !c.FinishedAt.Before(at):
		return dsv1alpha1.ReasonDeadlineExceeded
	case c.ExitCode == 0:
		return dsv1alpha1.ReasonCompleted
	}
	return dsv1alpha1.ReasonError
}

func runOutcome(s *scope) {
	res := s.sbx.Status.Result
	if res.Reason == dsv1alpha1.ReasonCompleted {
		s.note(factSucceeded, dsv1alpha1.ReasonCompleted, "%s", describeRun(res))
		return
	}
	s.note(factFailed, res.Reason, "%s", describeRun(res))
}

func runEvent(res *dsv1alpha1.RunResult) string {
	if res.Reason == dsv1alpha1.ReasonCompleted {
		return EventRunSucceeded
	}
	return EventRunFailed
}

func describeRun(res *dsv1alpha1.RunResult) string {
	switch res.Reason {
	case dsv1alpha1.ReasonDeadlineExceeded:
		return "the command ran past activeDeadlineSeconds and was killed"
	case dsv1alpha1.ReasonOOMKilled:
		return "the command was killed by its memory limit"
	case dsv1alpha1.ReasonLost:
		return "the primary container vanished; the command's outcome is unknown"
	}
	return fmt.Sprintf("the command exited with code %d", *res.ExitCode)
}

// outputTail makes a log tail a string the API accepts: a character cut in half at the start is dropped
// (and counted as cut), and bytes that are not UTF-8 are replaced.
func outputTail(t dd.LogTail) (string, int64) {
	data, cut := t.Data, t.Cut
	for i := 0; i < utf8.UTFMax-1 && len(data) > 0 && !utf8.RuneStart(data[0]); i++ {
		data, cut = data[1:], cut+1
	}
	return strings.ToValidUTF8(string(data), "\uFFFD"), cut
}

// expire deletes a finished run ttlSecondsAfterFinished after it ended.
func (r *Reconciler) expire(ctx context.Context, s *scope) (bool, error) {
	ttl := s.sbx.Spec.TTLSecondsAfterFinished
	if ttl == nil {
		return true, nil
	}
	if left := time.Until(s.sbx.Status.FinishTime.Add(time.Duration(*ttl) * time.Second)); left > 0 {
		s.after(left)
		return true, nil
	}
	uid := s.sbx.UID
	if err := r.Delete(ctx, s.sbx, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return true, fmt.Errorf("deleting the finished Sandbox: %w", err)
	}
	r.event(s.sbx, false, EventExpired, "Delete", "deleted %ds after the run finished (ttlSecondsAfterFinished)", *ttl)
	return true, nil
}

// stopTopology stops every primary and service container that still runs, leaving the holder up.
func (r *Reconciler) stopTopology(ctx context.Context, s *scope) error {
	for _, c := range removalOrder(s.containers, s.sbx.Spec.Services) {
		if _, role, _ := dd.OwnerFromLabels(c.Labels); (role == dsv1alpha1.RolePrimary || role == dsv1alpha1.RoleService) && topology.Alive(c) {
			if err := r.Driver.StopContainer(ctx, c.Name, r.Options.StopGrace); err != nil {
				return fmt.Errorf("stopping container %s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// markServicesStopped says of each service that was Ready or on its way when its topology settled that it is
// stopped now, so that no status claims a service Ready whose container the topology's end stopped (or a
// Docker restart did). The one that failed keeps saying so.
func markServicesStopped(s *scope) {
	for i := range s.sbx.Status.Services {
		st := &s.sbx.Status.Services[i]
		if st.State != dsv1alpha1.ServiceFailed && st.State != dsv1alpha1.ServiceStopped {
			st.State, st.Message = dsv1alpha1.ServiceStopped, "stopped with the topology, which is settled"
		}
	}
}

// keepHolder starts a settled topology's workspace holder again when it stopped without the agent stopping
// it (Docker restarted, say): a settled topology keeps its workspace held for a Checkpoint, and the Event says
// that the files no running container held are gone.
func (r *Reconciler) keepHolder(ctx context.Context, s *scope) error {
	holder := s.containers[s.holderName()]
	if !holder.Exists || topology.Alive(holder) {
		return nil
	}
	if err := r.Driver.StartContainer(ctx, holder.Name); err != nil {
		return fmt.Errorf("starting the holder %s: %w", holder.Name, err)
	}
	r.event(s.sbx, true, EventHolderRestarted, "Start", "the workspace holder had stopped and was started again; files not held by a running container were lost")
	return nil
}
