package warmpool

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

// SetupWithManager wires the reconciler: every pool; the pools of a template that changes; the pool of a
// Sandbox of this node (the manager's cache, memberEvents) or an unbound one that changes (started, ready,
// deleted); the pool of a claim that turns bound to a warm Sandbox (claimEvents); and every pool when a
// Sandbox of no pool waits unbound for room, or stops waiting.
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, opts controller.Options) error {
	err := ctrl.NewControllerManagedBy(mgr).
		Named("sandboxwarmpool").
		For(&dsv1alpha1.SandboxWarmPool{}).
		Watches(&dsv1alpha1.SandboxTemplate{}, handler.EnqueueRequestsFromMapFunc(r.poolsOfTemplate)).
		WatchesRawSource(source.Kind(mgr.GetCache(), &dsv1alpha1.Sandbox{}, memberEvents())).
		WatchesRawSource(source.Kind(mgr.GetCache(), &dsv1alpha1.SandboxClaim{}, claimEvents())).
		WatchesRawSource(source.Kind(r.Unbound, &dsv1alpha1.Sandbox{},
			handler.TypedEnqueueRequestsFromMapFunc(r.poolsOfUnbound))).
		WithOptions(opts).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the SandboxWarmPool controller: %w", err)
	}
	return nil
}

// poolOf is the pool whose label a Sandbox carries.
func poolOf(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[dsv1alpha1.LabelPool]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// poolsOfUnbound is an unbound Sandbox's pool, or every pool when it belongs to none: it may be waiting for
// the room that pools give up.
func (r *Reconciler) poolsOfUnbound(ctx context.Context, sbx *dsv1alpha1.Sandbox) []reconcile.Request {
	if reqs := poolOf(ctx, sbx); reqs != nil {
		return reqs
	}
	var pools dsv1alpha1.SandboxWarmPoolList
	if err := r.List(ctx, &pools); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxWarmPools to give up room")
		return nil
	}
	return requests(pools.Items, func(*dsv1alpha1.SandboxWarmPool) bool { return true })
}

// poolsOfTemplate is the pools of the template's namespace that name it.
func (r *Reconciler) poolsOfTemplate(ctx context.Context, tpl client.Object) []reconcile.Request {
	var pools dsv1alpha1.SandboxWarmPoolList
	if err := r.List(ctx, &pools, client.InNamespace(tpl.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the SandboxWarmPools of a SandboxTemplate")
		return nil
	}
	return requests(pools.Items, func(p *dsv1alpha1.SandboxWarmPool) bool { return p.Spec.TemplateRef.Name == tpl.GetName() })
}

func requests(pools []dsv1alpha1.SandboxWarmPool, keep func(*dsv1alpha1.SandboxWarmPool) bool) []reconcile.Request {
	var out []reconcile.Request
	for i := range pools {
		if keep(&pools[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pools[i])})
		}
	}
	return out
}
