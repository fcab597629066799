package checkpoint

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// reconcileDelete removes the Checkpoint's hold on its archive (the archive goes with the last Checkpoint
// holding it), and its artifact in the checkpoint registry if the agent has one, then lets the Checkpoint go.
func (r *Reconciler) reconcileDelete(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(ckpt, dsv1alpha1.FinalizerCleanup) {
		return ctrl.Result{}, nil
	}
	// Only a Checkpoint this node claimed can hold an archive here; one no node claimed holds none anywhere.
	if ckpt.Status.NodeName == r.Options.Node {
		if err := r.Store.Release(string(ckpt.UID)); err != nil {
			return ctrl.Result{}, fmt.Errorf("releasing the archive of Checkpoint %s: %w", ckpt.Name, err)
		}
		if err := r.unpush(ctx, ckpt); err != nil {
			return ctrl.Result{}, err
		}
	}
	patch := client.MergeFromWithOptions(ckpt.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(ckpt, dsv1alpha1.FinalizerCleanup)
	if err := r.Patch(ctx, ckpt, patch); err != nil {
		return status.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	if ckpt.Status.Digest != "" {
		r.event(ckpt, false, EventArchiveReleased, "Delete", "archive %s released on node %s", ckpt.Status.Digest, r.Options.Node)
	}
	return ctrl.Result{}, nil
}
