package execution

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/topology"
)

// poisonSandbox has the Sandbox reconciler mark the topology a command ran in TopologyPoisoned with reason:
// the agent killed its container (deadline, cancel, leftover processes) or cannot vouch for it (lost). The
// Sandbox reconciler, the one writer of Sandbox status, then stops the topology and reports the Sandbox
// Stalled with the same reason; until then it waits (it sees the run through Runs.Running) instead of calling
// the stopped primary PrimaryExited. A topology rolled since, or already poisoned, is left as it is.
func (r *Reconciler) poisonSandbox(ctx context.Context, ex *dsv1alpha1.Execution, t topology.Names, reason, message string) error {
	err := r.Verdicts.Poison(ctx, handoff.Verdict{
		Sandbox: t.Sandbox, UID: t.UID, Generation: t.Generation, Reason: reason, Message: message, Related: ex,
	})
	if err != nil {
		return fmt.Errorf("poisoning Sandbox %s: %w", t.Sandbox, err)
	}
	return nil
}

// endLost ends an Execution left Running by an agent that is gone: whether its command ran, and how, is
// unknown, and the command may still run in the container. So the container is stopped, the Sandbox
// poisoned, and the Execution fails as Lost, never run again.
func (r *Reconciler) endLost(ctx context.Context, ex *dsv1alpha1.Execution) error {
	live := &dsv1alpha1.Execution{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ex), live); err != nil {
		return client.IgnoreNotFound(err)
	}
	if live.UID != ex.UID || live.Status.Phase != dsv1alpha1.ExecutionRunning {
		return nil // the cache is behind a run of this agent that has just ended
	}
	t := topology.Names{
		Sandbox: types.NamespacedName{Namespace: ex.Namespace, Name: ex.Spec.SandboxName},
		UID:     sandboxOwner(ex), Generation: ex.Status.TopologyGeneration,
	}
	msg := fmt.Sprintf("Execution %s was running when its agent lost track of it; the outcome is unknown and the Sandbox's container is stopped", ex.Name)
	if err := r.Driver.StopContainer(ctx, t.Primary(), 0); err != nil {
		return fmt.Errorf("stopping the primary %s: %w", t.Primary(), err)
	}
	if err := r.poisonSandbox(ctx, ex, t, dsv1alpha1.ReasonLost, msg); err != nil {
		return err
	}
	settle(ex, dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonLost, msg)
	ex.Status.SandboxKilled = true
	return nil
}
