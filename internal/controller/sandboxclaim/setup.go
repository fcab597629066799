package sandboxclaim

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

// SetupWithManager wires the reconciler: every claim; the claim a Sandbox of this node, or an unbound one,
// is labelled for (its readiness, its deletion); and the unbound claims of a pool whose Sandbox of this node
// turns warm and Ready, so that a claim left waiting for one takes it.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, opts controller.Options) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("sandboxclaim").
		For(&dsv1alpha1.SandboxClaim{}).
		Watches(&dsv1alpha1.Sandbox{}, handler.EnqueueRequestsFromMapFunc(r.claimsOf)).
		WatchesRawSource(source.Kind(r.Unbound, &dsv1alpha1.Sandbox{},
			handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, s *dsv1alpha1.Sandbox) []reconcile.Request {
				return r.claimsOf(ctx, s)
			}))).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the SandboxClaim controller: %w", err)
	}
	return nil
}

// claimsOf is the claim a Sandbox is labelled for or, for a warm one of a pool, the pool's claims that wait.
func (r *Reconciler) claimsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	labels := obj.GetLabels()
	if name := labels[dsv1alpha1.LabelClaim]; name != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
	}
	pool := labels[dsv1alpha1.LabelPool]
	if pool == "" {
		return nil
	}
	var list dsv1alpha1.SandboxClaimList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxClaims of a pool")
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if c := &list.Items[i]; c.Spec.PoolRef.Name == pool && c.Status.SandboxName == "" {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)})
		}
	}
	return out
}
