package sandbox

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// SetupWithManager wires the reconciler: its node's Sandboxes (the manager's cache), unbound Sandboxes, the
// SandboxServices they name, the Checkpoints they restore from, and r.Requeues (Docker events, the sweeper,
// wakeups).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts controller.Options) error {
	err := mgr.GetFieldIndexer().IndexField(ctx, &dsv1alpha1.Sandbox{}, dsv1alpha1.IndexSandboxServices, func(o client.Object) []string {
		return o.(*dsv1alpha1.Sandbox).Spec.Services
	})
	if err != nil {
		return fmt.Errorf("indexing Sandboxes by SandboxService: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("sandbox").
		For(&dsv1alpha1.Sandbox{}).
		WatchesRawSource(source.Kind(r.Unbound, &dsv1alpha1.Sandbox{}, &handler.TypedEnqueueRequestForObject[*dsv1alpha1.Sandbox]{})).
		Watches(&dsv1alpha1.SandboxService{}, handler.EnqueueRequestsFromMapFunc(r.sandboxesUsing)).
		Watches(&dsv1alpha1.Checkpoint{}, handler.EnqueueRequestsFromMapFunc(r.sandboxesRestoringFrom)).
		WatchesRawSource(source.Channel(r.Requeues, &handler.TypedEnqueueRequestForObject[*dsv1alpha1.Sandbox]{})).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the Sandbox controller: %w", err)
	}
	return nil
}

// sandboxesUsing maps a SandboxService to this node's Sandboxes that name it.
func (r *Reconciler) sandboxesUsing(ctx context.Context, svc client.Object) []reconcile.Request {
	var list dsv1alpha1.SandboxList
	if err := r.List(ctx, &list, client.InNamespace(svc.GetNamespace()),
		client.MatchingFields{dsv1alpha1.IndexSandboxServices: svc.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Sandboxes that use a SandboxService", "service", svc.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, sbx := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sbx)})
	}
	return out
}
