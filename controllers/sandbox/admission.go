package sandbox

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/controllers/status"
)

// Capacity: the node takes at most Options.Capacity Sandboxes. Binding an unbound Sandbox needs fewer than
// that bound to the node; a Sandbox its author bound to the node directly is admitted (given the cleanup
// finalizer, after which the agent builds it) only while fewer than that are admitted. Both are counted
// from the node's cache plus the binds and admissions this agent made a moment ago (which the cache may not
// show yet), under one lock, so neither a lagging cache nor concurrent passes can overfill the node.

// reconcileUnbound binds an unbound Sandbox to this node when there is room. The bind is guarded by the
// resourceVersion, so of several agents racing for one Sandbox exactly one wins. Without room it says so in
// status, in words every agent would use, so that agents never fight over the message. A Sandbox that
// restores from a Checkpoint is bound only by the node that stores it (see restoreBinding).
func (r *SandboxReconciler) reconcileUnbound(ctx context.Context, sbx *dsv1alpha1.Sandbox) (result ctrl.Result, reterr error) {
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
	pass := status.Begin(r.Client, sbx)
	defer pass.End(ctx, sbx, &result, &reterr)
	if wait != nil {
		status.Set(sbx, dsv1alpha1.ConditionScheduled, false, wait.reason, wait.message)
		applyOutcome(sbx, *wait)
	} else {
		status.Set(sbx, dsv1alpha1.ConditionScheduled, false, dsv1alpha1.ReasonNoCapacity, "waiting for an agent with room")
		applyOutcome(sbx, outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonUnscheduled, message: "no agent has bound the Sandbox yet"})
	}
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}, nil
}

// bind sets spec.nodeName to this node when the node has room. handled is true when the Sandbox is bound,
// by this agent or (a lost race) another.
func (r *SandboxReconciler) bind(ctx context.Context, sbx *dsv1alpha1.Sandbox) (handled bool, err error) {
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
	r.remember(sbx.UID)
	ctrl.LoggerFrom(ctx).Info("Bound Sandbox to this node", "node", r.Options.Node)
	r.event(sbx, false, EventBound, "Bind", "bound to node %s", r.Options.Node)
	return true, nil
}

// ensureAdmitted adds the cleanup finalizer, which admits the Sandbox, when the node has room for it.
func (r *SandboxReconciler) ensureAdmitted(ctx context.Context, sbx *dsv1alpha1.Sandbox) (bool, error) {
	if controllerutil.ContainsFinalizer(sbx, dsv1alpha1.FinalizerCleanup) {
		return true, nil
	}
	r.admission.Lock()
	defer r.admission.Unlock()
	room, err := r.hasRoom(ctx, sbx.UID, true)
	if err != nil || !room {
		return false, err
	}
	patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(sbx, dsv1alpha1.FinalizerCleanup)
	if err := r.Patch(ctx, sbx, patch); err != nil {
		return false, err
	}
	r.remember(sbx.UID)
	return true, nil
}

// reportNoCapacity is the status of a Sandbox bound here that has to wait for room.
func (r *SandboxReconciler) reportNoCapacity(sbx *dsv1alpha1.Sandbox) ctrl.Result {
	msg := fmt.Sprintf("node %s already runs its capacity of %d Sandboxes; waiting for room", r.Options.Node, r.Options.Capacity)
	sbx.Status.NodeName = r.Options.Node
	status.Set(sbx, dsv1alpha1.ConditionScheduled, false, dsv1alpha1.ReasonNoCapacity, msg)
	applyOutcome(sbx, outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonNoCapacity, message: msg})
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}
}

// hasRoom tells whether the node can take one more Sandbox (other than self). It reads the node's cache, not
// the API server: a list per admission made admitting n Sandboxes cost n lists of up to n objects. What the
// cache may not show yet, a bind or admission made a moment ago, is counted from r.recent. Callers hold
// r.admission.
func (r *SandboxReconciler) hasRoom(ctx context.Context, self types.UID, admittedOnly bool) (bool, error) {
	var list dsv1alpha1.SandboxList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // read only
		return false, err
	}
	taken := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		admitted := controllerutil.ContainsFinalizer(item, dsv1alpha1.FinalizerCleanup)
		if admitted {
			delete(r.recent, item.UID) // the cache shows it now
		}
		if admitted || !admittedOnly {
			taken[item.UID] = true
		}
	}
	for uid, at := range r.recent {
		if time.Since(at) > recentAdmission {
			delete(r.recent, uid)
			continue
		}
		taken[uid] = true
	}
	delete(taken, self)
	return len(taken) < r.Options.Capacity, nil
}

// recentAdmission is how long a bind or admission is counted on its own: far longer than the cache takes to
// show it, and short enough that a Sandbox deleted right after its bind holds no room for long.
const recentAdmission = 30 * time.Second

// forgetAdmission drops a Sandbox whose deletion finished: it holds no room any more.
func (r *SandboxReconciler) forgetAdmission(uid types.UID) {
	r.admission.Lock()
	defer r.admission.Unlock()
	delete(r.recent, uid)
}

// remember counts a bind or admission this agent just made until the cache shows it. Callers hold r.admission.
func (r *SandboxReconciler) remember(uid types.UID) {
	if r.recent == nil {
		r.recent = map[types.UID]time.Time{}
	}
	r.recent[uid] = time.Now()
}
