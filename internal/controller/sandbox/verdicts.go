package sandbox

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// applyVerdict writes a verdict handed over by an Execution's run into the Sandbox's status, and returns it
// so that its wait ends once the pass's write stands. A verdict about a topology rolled since, or one
// already poisoned, is moot; one about a generation the cache does not show yet waits for it.
func (r *Reconciler) applyVerdict(ctx context.Context, sbx *dsv1alpha1.Sandbox) *handoff.Verdict {
	v, ok := r.Verdicts.Take(sbx)
	switch {
	case !ok, sbx.Status.TopologyGeneration < v.Generation:
		return nil
	case sbx.Status.TopologyGeneration > v.Generation, topology.Poisoned(sbx), !sbx.DeletionTimestamp.IsZero():
		r.Verdicts.Settle(types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name})
		return nil
	}
	status.Set(sbx, dsv1alpha1.ConditionTopologyPoisoned, true, v.Reason, v.Message)
	ctrl.LoggerFrom(ctx).Info("Topology poisoned by an Execution", "reason", v.Reason, "detail", v.Message)
	return &v
}

// announceVerdict records the Event of a verdict whose write stands, naming what decided it.
func (r *Reconciler) announceVerdict(sbx *dsv1alpha1.Sandbox, v *handoff.Verdict) {
	r.Recorder.Eventf(sbx, v.Related, corev1.EventTypeWarning, EventPoisoned, "Poison", "%s; the topology is stopped, the workspace kept", v.Message)
}

// reportVerdict ends a pass that wrote a verdict, with the Sandbox Stalled for its reason. Like every
// settling decision it only records itself: the topology is stopped by the pass that reads the verdict back,
// so that nothing is stopped on a verdict whose write was lost.
func (r *Reconciler) reportVerdict(sbx *dsv1alpha1.Sandbox, v *handoff.Verdict) ctrl.Result {
	s := newScope(sbx)
	s.note(factFailed, v.Reason, "%s", v.Message)
	r.summarize(s)
	return ctrl.Result{}
}
