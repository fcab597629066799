package checkpoint

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// SetupWithManager wires the reconciler: every Checkpoint (a Checkpoint not yet taken on belongs to no node),
// and this node's Sandboxes, whose changes move their Checkpoints on, as does a command in one ending
// (Freezes). opts.MaxConcurrentReconciles captures run at once.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &dsv1alpha1.Checkpoint{}, dsv1alpha1.FieldCheckpointSandboxName, func(o client.Object) []string {
		return []string{o.(*dsv1alpha1.Checkpoint).Spec.SandboxName}
	})
	if err != nil {
		return fmt.Errorf("indexing Checkpoints by Sandbox: %w", err)
	}
	freed := make(chan event.GenericEvent, 64)
	r.Freezes.Notify(func(key types.NamespacedName) {
		select {
		case freed <- event.GenericEvent{Object: &dsv1alpha1.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}:
		case <-ctx.Done():
		}
	})
	err = ctrl.NewControllerManagedBy(mgr).
		Named("checkpoint").
		For(&dsv1alpha1.Checkpoint{}).
		Watches(&dsv1alpha1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(r.checkpointsOf)).
		WatchesRawSource(source.Channel(freed, handler.EnqueueRequestsFromMapFunc(r.checkpointsOf))).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the Checkpoint controller: %w", err)
	}
	return nil
}

// checkpointsOf maps a Sandbox to the Checkpoints it matters to: those of it still to be captured, and the
// one it restores from (whose restore may have found its archive damaged).
func (r *Reconciler) checkpointsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	sbx := obj.(*dsv1alpha1.Sandbox)
	var out []reconcile.Request
	if sbx.Spec.RestoreFrom != "" {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: sbx.Namespace, Name: sbx.Spec.RestoreFrom}})
	}
	var list dsv1alpha1.CheckpointList
	if err := r.List(ctx, &list, client.InNamespace(sbx.Namespace),
		client.MatchingFields{dsv1alpha1.FieldCheckpointSandboxName: sbx.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Checkpoints of a Sandbox", "sandbox", sbx.Name)
		return out
	}
	for _, ckpt := range list.Items {
		if ckpt.Status.Phase != dsv1alpha1.CheckpointReady && ckpt.Status.Phase != dsv1alpha1.CheckpointFailed {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ckpt)})
		}
	}
	return out
}
