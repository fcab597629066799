package warmpool

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// memberEvents enqueues the pool of a Sandbox of this node that is made, changes while unclaimed, or goes.
// A claim's binding does not: the claim's status naming its Sandbox does (claimEvents), so that the pool's
// list, refill and status write come after the one write that makes the claim Ready rather than beside it
// (docs/pools.md, "How fast"). Later changes of a claimed Sandbox are none of the pool's business: it no
// longer counts it.
func memberEvents() handler.TypedEventHandler[*dsv1alpha1.Sandbox, reconcile.Request] {
	add := func(ctx context.Context, q queue, sbx *dsv1alpha1.Sandbox) {
		for _, req := range poolOf(ctx, sbx) {
			q.Add(req)
		}
	}
	return handler.TypedFuncs[*dsv1alpha1.Sandbox, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*dsv1alpha1.Sandbox], q queue) {
			if e.ObjectNew.Labels[dsv1alpha1.LabelClaim] == "" {
				add(ctx, q, e.ObjectNew)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[*dsv1alpha1.Sandbox], q queue) {
			add(ctx, q, e.Object)
		},
	}
}

// claimEvents enqueues a claim's pool when the claim comes to name a warm Sandbox: the pool has one member
// fewer. A binding whose claim status never stands needs none: the claim's next pass writes it, or the
// claim went and its Sandbox's deletion enqueues the pool; an agent that restarts passes every pool anyway.
func claimEvents() handler.TypedEventHandler[*dsv1alpha1.SandboxClaim, reconcile.Request] {
	return handler.TypedFuncs[*dsv1alpha1.SandboxClaim, reconcile.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*dsv1alpha1.SandboxClaim], q queue) {
			if claim := e.ObjectNew; e.ObjectOld.Status.SandboxName == "" && claim.Status.SandboxName != "" &&
				claim.Status.Start == dsv1alpha1.ClaimWarm {
				q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: claim.Namespace, Name: claim.Spec.PoolRef.Name}})
			}
		},
	}
}
