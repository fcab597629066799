package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Capacity: the node takes at most Options.Capacity Sandboxes. Binding an unbound Sandbox needs fewer than
// that bound to the node; a Sandbox its author bound to the node directly is admitted (given the cleanup
// finalizer, after which the agent builds it) only while fewer than that are admitted. Both are counted
// from the API server under one lock, so neither a lagging cache nor concurrent passes can overfill the node.

// reconcileUnbound binds an unbound Sandbox to this node when there is room. The bind is guarded by the
// resourceVersion, so of several agents racing for one Sandbox exactly one wins. Without room it says so in
// status, in words every agent would use, so that agents never fight over the message. A Sandbox that
// restores from a Checkpoint is bound only by the node that stores it (see restoreBinding).
func (r *SandboxReconciler) reconcileUnbound(ctx context.Context, sbx *v1.Sandbox) (ctrl.Result, error) {
	if !sbx.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	mayBind, wait, err := r.restoreBinding(ctx, sbx)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case !mayBind && wait == nil:
		return ctrl.Result{}, nil // another node stores its Checkpoint; that node's agent binds it
	case mayBind:
		handled, err := r.bind(ctx, sbx)
		if handled || err != nil {
			return ctrl.Result{}, err
		}
	}
	snapshot := sbx.DeepCopy()
	if wait != nil {
		setCondition(sbx, v1.ConditionScheduled, false, wait.reason, wait.message)
		applyOutcome(sbx, *wait)
	} else {
		setCondition(sbx, v1.ConditionScheduled, false, v1.ReasonNoCapacity, "waiting for an agent with room")
		applyOutcome(sbx, outcome{phase: v1.SandboxPending, reason: v1.ReasonUnscheduled, message: "no agent has bound the Sandbox yet"})
	}
	if _, err := r.patchStatus(ctx, snapshot, sbx); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}, nil
}

// bind sets spec.nodeName to this node when the node has room. handled is true when the Sandbox is bound,
// by this agent or (a lost race) another.
func (r *SandboxReconciler) bind(ctx context.Context, sbx *v1.Sandbox) (handled bool, err error) {
	r.admission.Lock()
	defer r.admission.Unlock()
	room, err := r.hasRoom(ctx, sbx.UID, false)
	if err != nil || !room {
		return false, err
	}
	patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
	sbx.Spec.NodeName = r.Options.Node
	switch err := r.Patch(ctx, sbx, patch); {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// Another agent bound it, or it changed or went; a still unbound one comes back with its watch event.
		ctrl.LoggerFrom(ctx).V(1).Info("Bind lost to a newer version of the Sandbox")
		return true, nil
	case err != nil:
		return false, err
	}
	ctrl.LoggerFrom(ctx).Info("Bound Sandbox to this node", "node", r.Options.Node)
	r.event(sbx, false, EventBound, "Bind", "bound to node %s", r.Options.Node)
	return true, nil
}

// ensureAdmitted adds the cleanup finalizer, which admits the Sandbox, when the node has room for it.
func (r *SandboxReconciler) ensureAdmitted(ctx context.Context, sbx *v1.Sandbox) (bool, error) {
	if controllerutil.ContainsFinalizer(sbx, v1.FinalizerCleanup) {
		return true, nil
	}
	r.admission.Lock()
	defer r.admission.Unlock()
	room, err := r.hasRoom(ctx, sbx.UID, true)
	if err != nil || !room {
		return false, err
	}
	patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(sbx, v1.FinalizerCleanup)
	if err := r.Patch(ctx, sbx, patch); err != nil {
		return false, err
	}
	return true, nil
}

// reportNoCapacity is the status of a Sandbox bound here that has to wait for room.
func (r *SandboxReconciler) reportNoCapacity(sbx *v1.Sandbox) ctrl.Result {
	msg := fmt.Sprintf("node %s already runs its capacity of %d Sandboxes; waiting for room", r.Options.Node, r.Options.Capacity)
	sbx.Status.NodeName = r.Options.Node
	setCondition(sbx, v1.ConditionScheduled, false, v1.ReasonNoCapacity, msg)
	applyOutcome(sbx, outcome{phase: v1.SandboxPending, reason: v1.ReasonNoCapacity, message: msg})
	sbx.Status.ObservedGeneration = sbx.Generation
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}
}

// hasRoom tells whether the node can take one more Sandbox (other than self). The cache answers a no cheaply;
// a yes is confirmed with the API server, since a bind made a moment ago may not be in the cache yet.
func (r *SandboxReconciler) hasRoom(ctx context.Context, self types.UID, admittedOnly bool) (bool, error) {
	for _, read := range []func(*v1.SandboxList) error{
		func(l *v1.SandboxList) error { return r.List(ctx, l) }, // the node cache holds only this node's
		func(l *v1.SandboxList) error {
			return r.APIReader.List(ctx, l, client.MatchingFields{v1.FieldSandboxNodeName: r.Options.Node})
		},
	} {
		var list v1.SandboxList
		if err := read(&list); err != nil {
			return false, err
		}
		if countOthers(list.Items, self, admittedOnly) >= r.Options.Capacity {
			return false, nil
		}
	}
	return true, nil
}

func countOthers(items []v1.Sandbox, self types.UID, admittedOnly bool) int {
	n := 0
	for i := range items {
		if items[i].UID != self && (!admittedOnly || controllerutil.ContainsFinalizer(&items[i], v1.FinalizerCleanup)) {
			n++
		}
	}
	return n
}
