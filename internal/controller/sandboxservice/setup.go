package sandboxservice

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// SetupWithManager wires the reconciler: every SandboxService, and the Sandboxes of this node (the manager's
// cache) and unbound ones (r.Unbound) as they start or stop naming one. Sandboxes of other nodes are their
// agents' to report.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, opts controller.Options) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("sandboxservice").
		For(&dsv1alpha1.SandboxService{}).
		Watches(&dsv1alpha1.Sandbox{}, servicesNamed[client.Object]()).
		WatchesRawSource(source.Kind(r.Unbound, &dsv1alpha1.Sandbox{}, servicesNamed[*dsv1alpha1.Sandbox]())).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the SandboxService controller: %w", err)
	}
	return nil
}

// servicesNamed enqueues the SandboxServices a Sandbox names when it appears, goes, or changes that list
// (the old names and the new); status writes, the bulk of a Sandbox's updates, enqueue nothing.
func servicesNamed[T client.Object]() handler.TypedEventHandler[T, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[T], q queue) { enqueueServices(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[T], q queue) {
			if !slices.Equal(namedServices(e.ObjectOld), namedServices(e.ObjectNew)) {
				enqueueServices(q, e.ObjectOld)
				enqueueServices(q, e.ObjectNew)
			}
		},
		DeleteFunc:  func(_ context.Context, e event.TypedDeleteEvent[T], q queue) { enqueueServices(q, e.Object) },
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[T], q queue) { enqueueServices(q, e.Object) },
	}
}

func enqueueServices(q workqueue.TypedRateLimitingInterface[reconcile.Request], obj client.Object) {
	for _, name := range namedServices(obj) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}})
	}
}

func namedServices(obj client.Object) []string {
	if sbx, ok := obj.(*dsv1alpha1.Sandbox); ok {
		return sbx.Spec.Services
	}
	return nil
}
