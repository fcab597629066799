package controllers

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

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// holdSettled keeps a settled topology as it ended: a finished run, a session stopped at its deadline or a
// poisoned topology is never restarted, only kept stopped (the workspace holder stays up) until a spec
// change rolls it or the Sandbox goes. A finished run is deleted ttlSecondsAfterFinished after it ended.
func (r *SandboxReconciler) holdSettled(ctx context.Context, s *scope) (bool, error) {
	st := &s.sbx.Status
	switch {
	case isPoisoned(s.sbx):
		c := meta.FindStatusCondition(st.Conditions, v1.ConditionTopologyPoisoned)
		s.stalled(v1.SandboxFailed, c.Reason, "%s", c.Message)
	case st.Result != nil:
		runOutcome(s)
	case st.FinishTime != nil:
		s.stalled(v1.SandboxFailed, v1.ReasonDeadlineExceeded, "the session reached activeDeadlineSeconds and was stopped")
	default:
		return false, nil
	}
	if err := r.stopTopology(ctx, s); err != nil {
		return true, err
	}
	if st.Result != nil {
		return r.expire(ctx, s)
	}
	return true, nil
}

// poison marks the topology failed for good and stops it; the workspace holder stays up. Nothing repairs it
// but a spec change (which rolls it) or a new Sandbox.
func (r *SandboxReconciler) poison(ctx context.Context, s *scope, reason, format string, args ...any) (bool, error) {
	msg := fmt.Sprintf(format, args...)
	setCondition(s.sbx, v1.ConditionTopologyPoisoned, true, reason, msg)
	s.stalled(v1.SandboxFailed, reason, "%s", msg)
	ctrl.LoggerFrom(ctx).Info("Topology poisoned", "reason", reason, "detail", msg)
	r.event(s.sbx, true, EventPoisoned, "Poison", "%s; the topology is stopped, the workspace kept", msg)
	return true, r.stopTopology(ctx, s)
}

// finishRun records how a run's primary ended, with the tail of its output, then settles it.
func (r *SandboxReconciler) finishRun(ctx context.Context, s *scope, c dd.ContainerInfo) (bool, error) {
	code := int32(c.ExitCode)
	res := &v1.RunResult{ExitCode: &code, Reason: runReason(s, c)}
	tail, err := r.Driver.LogTail(ctx, c.Name, v1.MaxOutputTailBytes)
	if err != nil {
		return s.fail(v1.ReasonRunning, "reading the run's output", err)
	}
	res.OutputTail, res.TruncatedBytes = outputTail(tail)
	r.settleRun(s, res, c.FinishedAt)
	return r.holdSettled(ctx, s)
}

// loseRun settles a run whose primary container vanished before the agent saw it end.
func (r *SandboxReconciler) loseRun(ctx context.Context, s *scope) (bool, error) {
	r.settleRun(s, &v1.RunResult{Reason: v1.ReasonLost}, time.Now())
	return r.holdSettled(ctx, s)
}

func (r *SandboxReconciler) settleRun(s *scope, res *v1.RunResult, finished time.Time) {
	s.sbx.Status.Result = res
	s.sbx.Status.FinishTime = &metav1.Time{Time: finished}
	for i := range s.sbx.Status.Services {
		s.sbx.Status.Services[i].Message = "stopped: the run finished"
	}
	r.event(s.sbx, res.Reason != v1.ReasonCompleted, runEvent(res), "Finish", "%s", describeRun(res))
}

// runReason says how a run ended, from what Docker recorded (so a restarted agent says the same).
func runReason(s *scope, c dd.ContainerInfo) string {
	switch at, ok := deadline(s, c); {
	case c.OOMKilled:
		return v1.ReasonOOMKilled
	case ok && !c.FinishedAt.Before(at):
		return v1.ReasonDeadlineExceeded
	case c.ExitCode == 0:
		return v1.ReasonCompleted
	}
	return v1.ReasonError
}

func runOutcome(s *scope) {
	res := s.sbx.Status.Result
	if res.Reason == v1.ReasonCompleted {
		s.ready(v1.SandboxSucceeded, v1.ReasonCompleted, "%s", describeRun(res))
		return
	}
	s.stalled(v1.SandboxFailed, res.Reason, "%s", describeRun(res))
}

func runEvent(res *v1.RunResult) string {
	if res.Reason == v1.ReasonCompleted {
		return EventRunSucceeded
	}
	return EventRunFailed
}

func describeRun(res *v1.RunResult) string {
	switch res.Reason {
	case v1.ReasonDeadlineExceeded:
		return "the command ran past activeDeadlineSeconds and was killed"
	case v1.ReasonOOMKilled:
		return "the command was killed by its memory limit"
	case v1.ReasonLost:
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
func (r *SandboxReconciler) expire(ctx context.Context, s *scope) (bool, error) {
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
		return true, err
	}
	r.event(s.sbx, false, EventExpired, "Delete", "deleted %ds after the run finished (ttlSecondsAfterFinished)", *ttl)
	return true, nil
}

// stopTopology stops every primary and service container that still runs, leaving the holder up.
func (r *SandboxReconciler) stopTopology(ctx context.Context, s *scope) error {
	for _, c := range removalOrder(s.containers, s.sbx.Spec.Services) {
		if _, role, _ := dd.OwnerFromLabels(c.Labels); (role == v1.RolePrimary || role == v1.RoleService) && alive(c) {
			if err := r.Driver.StopContainer(ctx, c.Name, r.Options.StopGrace); err != nil {
				return err
			}
		}
	}
	return nil
}

// alive: the container's processes exist (running or frozen). ended: it ran and no longer does.
func alive(c dd.ContainerInfo) bool {
	return c.State == dd.StateRunning || c.State == dd.StatePaused || c.State == dd.StateRestarting
}

func ended(c dd.ContainerInfo) bool { return c.Exists && !c.StartedAt.IsZero() && !alive(c) }
