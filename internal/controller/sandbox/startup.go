package sandbox

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// EventStartupFailed: the startup deadline passed; what the start built is removed.
const EventStartupFailed = "StartupFailed"

// startupTimeouts names, for what a start was doing when its deadline passed (the reason of the pass's
// finding), the phase that was slow. Anything else (a missing Secret, Docker unavailable, no free subnet, ...)
// keeps its own reason: it says already what the start was stuck on.
var startupTimeouts = map[string]string{
	dsv1alpha1.ReasonImagePulling:           dsv1alpha1.ReasonImagePullTimeout,
	dsv1alpha1.ReasonImagePullFailed:        dsv1alpha1.ReasonImagePullTimeout,
	dsv1alpha1.ReasonWorkspaceFailed:        dsv1alpha1.ReasonWorkspaceTimeout,
	dsv1alpha1.ReasonRestoring:              dsv1alpha1.ReasonRestoreTimeout,
	dsv1alpha1.ReasonRestoreFailed:          dsv1alpha1.ReasonRestoreTimeout,
	dsv1alpha1.ReasonNetworkFailed:          dsv1alpha1.ReasonNetworkTimeout,
	dsv1alpha1.ReasonWaitingForServices:     dsv1alpha1.ReasonServiceNotReady,
	dsv1alpha1.ReasonServiceStartFailed:     dsv1alpha1.ReasonServiceNotReady,
	dsv1alpha1.ReasonServiceReadinessFailed: dsv1alpha1.ReasonServiceNotReady,
	dsv1alpha1.ReasonImageFailed:            dsv1alpha1.ReasonImagePullTimeout,
	dsv1alpha1.ReasonStartFailed:            dsv1alpha1.ReasonStartTimeout,
	dsv1alpha1.ReasonCreating:               dsv1alpha1.ReasonStartTimeout,
	dsv1alpha1.ReasonRollingTopology:        dsv1alpha1.ReasonStartTimeout,
}

// started tells whether the start is over: the primary has started. Docker's word counts too, for a pass
// that follows one whose status write was lost.
func (s *scope) started() bool {
	c := s.containers[s.primaryName()]
	return s.sbx.Status.StartTime != nil || (c.Exists && !c.StartedAt.IsZero())
}

// bound gives a step of a start that is going on only the time left before the startup deadline, so that
// no Docker call of the start outlasts it.
func (s *scope) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.startupDeadline.IsZero() || s.started() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, s.startupDeadline)
}

// enforceStartupDeadline ends, at the end of a pass, a start that is past its deadline: the topology is
// poisoned with a reason naming the phase that was slow, and the next pass removes what the start built
// (removeFailedStart). A refusal the start was already Stalled on keeps its own reason. The pass's error,
// if any, is superseded: nothing is retried once the start has failed.
func (r *Reconciler) enforceStartupDeadline(ctx context.Context, s *scope, err error) error {
	if s.startupDeadline.IsZero() || s.started() || topology.Settled(s.sbx) || time.Now().Before(s.startupDeadline) {
		return err
	}
	reason, ok := startupTimeouts[s.finding.reason]
	if _, sum := s.phase(); sum.Stalled || !ok {
		reason = s.finding.reason
	}
	msg := fmt.Sprintf("the start did not finish within startupDeadlineSeconds (%s): %s", dsv1alpha1.StartupDeadline(s.sbx), s.finding.message)
	status.Set(s.sbx, dsv1alpha1.ConditionTopologyPoisoned, true, reason, msg)
	s.note(factFailed, reason, "%s", msg)
	ctrl.LoggerFrom(ctx).Info("Startup deadline passed", "reason", reason, "detail", s.finding.message)
	r.event(s.sbx, true, EventStartupFailed, "Fail", "%s; what the start built is removed, the workspace kept", msg)
	return nil
}
