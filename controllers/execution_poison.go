package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// poisonSandbox marks the topology a command ran in TopologyPoisoned with reason: the agent killed its
// container (deadline, cancel, leftover processes) or cannot vouch for it (lost). Like the DisruptionTarget
// condition a Pod gets from whoever evicts it, this one condition is written from outside the Sandbox
// reconciler, which then stops the topology and reports the Sandbox Stalled with the same reason. It waits
// for this write (see ExecutionRuns.Running) instead of calling the stopped primary PrimaryExited. A topology
// rolled since, or already poisoned, is left as it is.
func (r *ExecutionReconciler) poisonSandbox(ctx context.Context, ex *dsv1alpha1.Execution, t runTarget, reason, message string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		sbx := &dsv1alpha1.Sandbox{}
		if err := r.APIReader.Get(ctx, t.sandbox, sbx); err != nil {
			return client.IgnoreNotFound(err)
		}
		if sbx.UID != t.sandboxUID || sbx.Status.TopologyGeneration != t.generation || isPoisoned(sbx) {
			return nil
		}
		before := sbx.DeepCopy()
		setCondition(sbx, dsv1alpha1.ConditionTopologyPoisoned, true, reason, message)
		if err := r.Status().Patch(ctx, sbx, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return client.IgnoreNotFound(err)
		}
		poisonings.WithLabelValues(reason).Inc()
		ctrl.LoggerFrom(ctx).Info("Topology poisoned by an Execution", "sandbox", t.sandbox, "execution", ex.Name, "reason", reason)
		r.Recorder.Eventf(sbx, ex, corev1.EventTypeWarning, EventPoisoned, "Poison", "%s; the topology is stopped, the workspace kept", message)
		return nil
	})
}

// endLost ends an Execution left Running by an agent that is gone: whether its command ran, and how, is
// unknown, and the command may still run in the container. So the container is stopped, the Sandbox
// poisoned, and the Execution fails as Lost, never run again.
func (r *ExecutionReconciler) endLost(ctx context.Context, ex *dsv1alpha1.Execution) error {
	live := &dsv1alpha1.Execution{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ex), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if live.UID != ex.UID || live.Status.Phase != dsv1alpha1.ExecutionRunning {
		return nil // the cache is behind a run of this agent that has just ended
	}
	t := runTarget{
		sandbox:    types.NamespacedName{Namespace: ex.Namespace, Name: ex.Spec.SandboxName},
		sandboxUID: sandboxOwner(ex), generation: ex.Status.TopologyGeneration,
	}
	msg := fmt.Sprintf("Execution %s was running when its agent lost track of it; the outcome is unknown and the Sandbox's container is stopped", ex.Name)
	if err := r.Driver.StopContainer(ctx, t.container(), 0); err != nil {
		return err
	}
	if err := r.poisonSandbox(ctx, ex, t, dsv1alpha1.ReasonLost, msg); err != nil {
		return err
	}
	settle(ex, dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonLost, msg)
	ex.Status.SandboxKilled = true
	return nil
}
