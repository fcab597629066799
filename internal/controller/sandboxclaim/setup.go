package sandboxclaim

import (
	"context"
	"fmt"

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

// SetupWithManager wires the reconciler: every claim; the claim a Sandbox of this node, or an unbound one,
// is labelled for (its readiness, its deletion); and the unbound claims of a pool whose Sandbox of this node
// turns warm and Ready, so that a claim left waiting for one takes it.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, opts controller.Options) error {
	r.flight = newInFlight()
	err := ctrl.NewControllerManagedBy(mgr).
		Named("sandboxclaim").
		For(&dsv1alpha1.SandboxClaim{}).
		WatchesRawSource(source.Kind(mgr.GetCache(), &dsv1alpha1.Sandbox{}, r.sandboxEvents())).
		WatchesRawSource(source.Kind(r.Unbound, &dsv1alpha1.Sandbox{}, r.sandboxEvents())).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the SandboxClaim controller: %w", err)
	}
	return nil
}

// sandboxEvents enqueues, for a Sandbox's event, the claims it is and was labelled for and, when it turns
// warm, its pool's claims that wait. Another Sandbox's binding is no news to a waiting claim: enqueueing them
// all on each (20 claims at once made some 20 × 20 passes) ran passes behind a stale cache.
func (r *Reconciler) sandboxEvents() handler.TypedEventHandler[*dsv1alpha1.Sandbox, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	add := func(ctx context.Context, q queue, old, sbx *dsv1alpha1.Sandbox) {
		for _, req := range r.claimsOf(ctx, old, sbx) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[*dsv1alpha1.Sandbox, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, nil, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, e.Object, nil)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, nil, e.Object)
		},
	}
}

// claimsOf is the claims old (before the event; nil for a create) and sbx (after it; nil for a delete) are
// labelled for, and the pool's claims that wait when sbx turned warm.
func (r *Reconciler) claimsOf(ctx context.Context, old, sbx *dsv1alpha1.Sandbox) []reconcile.Request {
	var out []reconcile.Request
	for _, s := range []*dsv1alpha1.Sandbox{old, sbx} {
		if s != nil && s.Labels[dsv1alpha1.LabelClaim] != "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: s.Namespace, Name: s.Labels[dsv1alpha1.LabelClaim]}})
		}
	}
	if sbx == nil || !warm(sbx) || (old != nil && warm(old)) {
		return out
	}
	var list dsv1alpha1.SandboxClaimList
	if err := r.List(ctx, &list, client.InNamespace(sbx.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxClaims of a pool")
		return out
	}
	for i := range list.Items {
		if c := &list.Items[i]; c.Spec.PoolRef.Name == sbx.Labels[dsv1alpha1.LabelPool] && c.Status.SandboxName == "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}
