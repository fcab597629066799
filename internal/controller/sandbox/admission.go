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
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/tracing"
)

// Room: the node holds at most Options.Capacity Sandboxes, and the footprints of those it holds (their memory
// limits and workspaces, pids and CPU limits, see footprint.go) add up to at most Options.Allocatable; no
// container asks for more than Options.PerContainer (more pids than the host keeps spare, more CPUs than it
// has), which a Sandbox never fits, and so waits saying so. Every Sandbox the
// node holds counts, a finished run too until it is deleted (it keeps its workspace and holder), but a
// settled topology counts only what it keeps. Binding an unbound Sandbox needs room beside every Sandbox
// bound to the node, and the agent that binds one admits it in the same write (gives it the cleanup
// finalizer, after which the agent builds it); a Sandbox its author bound to the node directly is admitted
// only while it fits beside those admitted. Both are counted
// from the node's cache plus the binds and admissions this agent made a moment ago or is making (which the
// cache may not show yet), under one lock, so neither a lagging cache nor concurrent passes can overfill the
// node. The lock covers the count and the reservation only, not the API write that follows: 20 Sandboxes
// applied at once would otherwise be bound one write after another (docs/performance.md, "Cold starts at
// once"); a write that fails gives its room back. A spec
// change of an admitted Sandbox is not admitted again: what it then holds counts from the next admission on.

// reconcileUnbound binds an unbound Sandbox to this node when there is room. The bind is guarded by the
// resourceVersion, so of several agents racing for one Sandbox exactly one wins. Without room it says so in
// status, in words every agent would use, so that agents never fight over the message. A Sandbox that
// restores from a Checkpoint is bound only by the node that stores it (see restoreBinding).
func (r *Reconciler) reconcileUnbound(ctx context.Context, sbx *dsv1alpha1.Sandbox) (result ctrl.Result, reterr error) {
	if !sbx.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	need, services, err := r.footprintOf(ctx, sbx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if rt := r.missingRuntime(sbx, services); rt != "" {
		return r.waitForRuntime(ctx, sbx, rt)
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
		applyFinding(sbx, *wait)
	} else {
		// The Sandbox's own footprint, not this node's room: every agent without room writes the same words.
		// Ready says the same as Scheduled, so that kubectl get's Reason column tells why it waits.
		noRoom := noRoomWords(sbx, services, need)
		status.Set(sbx, dsv1alpha1.ConditionScheduled, false, noRoom.reason, noRoom.message)
		applyFinding(sbx, noRoom)
	}
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}, nil
}

// waitForRuntime is the pass of an unbound Sandbox naming rt, which this node's Docker does not offer: it is
// never bound here. While another agent offers rt, that agent binds it or says why not; while none does,
// every agent says so, in the same words.
func (r *Reconciler) waitForRuntime(ctx context.Context, sbx *dsv1alpha1.Sandbox, rt dsv1alpha1.Runtime) (result ctrl.Result, reterr error) {
	if r.OfferedElsewhere != nil {
		switch offered, err := r.OfferedElsewhere(ctx, rt); {
		case err != nil:
			return ctrl.Result{}, err
		case offered:
			// Looked at again, in case that agent goes.
			return ctrl.Result{RequeueAfter: r.Options.BindRetry}, nil
		}
	}
	pass := status.Begin(r.Client, sbx)
	defer pass.End(ctx, sbx, &result, &reterr)
	wait := nobodyOffers(rt)
	status.Set(sbx, dsv1alpha1.ConditionScheduled, false, wait.reason, wait.message)
	applyFinding(sbx, wait)
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}, nil
}

// bind sets spec.nodeName to this node when the node has room, and admits the Sandbox (the cleanup finalizer)
// in the same write: binding asks for room beside every Sandbox bound here, admission only beside those
// admitted, so a Sandbox that may be bound may be admitted too. handled is true when the Sandbox is bound, by
// this agent or (a lost race) another.
func (r *Reconciler) bind(ctx context.Context, sbx *dsv1alpha1.Sandbox) (handled bool, err error) {
	ctx, span := tracing.Start(ctx, "sandbox.bind")
	defer func() { tracing.End(span, err, "") }()
	if refused, err := r.reserve(ctx, sbx, false); err != nil || refused != nil {
		return false, err
	}
	patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
	sbx.Spec.NodeName = r.Options.Node
	controllerutil.AddFinalizer(sbx, dsv1alpha1.FinalizerCleanup)
	switch err := r.Patch(ctx, sbx, patch); {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		// Another agent bound it, or it changed or went; a still unbound one comes back with its watch event.
		r.forgetAdmission(sbx.UID)
		ctrl.LoggerFrom(ctx).V(1).Info("Bind lost to a newer version of the Sandbox")
		return true, nil
	case err != nil:
		r.forgetAdmission(sbx.UID)
		return false, fmt.Errorf("binding the Sandbox to node %s: %w", r.Options.Node, err)
	}
	ctrl.LoggerFrom(ctx).Info("Bound Sandbox to this node", "node", r.Options.Node)
	r.event(sbx, false, EventBound, "Bind", "bound to node %s", r.Options.Node)
	return true, nil
}

// ensureAdmitted adds the cleanup finalizer, which admits the Sandbox, when the node has room for it; when it
// has none, refused says why.
func (r *Reconciler) ensureAdmitted(ctx context.Context, sbx *dsv1alpha1.Sandbox) (refused *refusal, err error) {
	if controllerutil.ContainsFinalizer(sbx, dsv1alpha1.FinalizerCleanup) {
		return nil, nil
	}
	ctx, span := tracing.Start(ctx, "sandbox.admission")
	defer func() { tracing.End(span, err, "") }()
	if refused, err := r.reserve(ctx, sbx, true); err != nil || refused != nil {
		return refused, err
	}
	patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(sbx, dsv1alpha1.FinalizerCleanup)
	if err := r.Patch(ctx, sbx, patch); err != nil {
		r.forgetAdmission(sbx.UID)
		return nil, fmt.Errorf("adding the cleanup finalizer: %w", err)
	}
	return nil, nil
}

// reserve counts sbx as held by the node, before the write that binds or admits it, when the node has room
// for it; refused says why it has none. The caller's write runs outside the lock, and gives the room back
// (forgetAdmission) when it fails.
func (r *Reconciler) reserve(ctx context.Context, sbx *dsv1alpha1.Sandbox, admittedOnly bool) (refused *refusal, err error) {
	r.admission.Lock()
	defer r.admission.Unlock()
	need, refused, err := r.room(ctx, sbx, admittedOnly)
	if err != nil || refused != nil {
		return refused, err
	}
	r.remember(sbx.UID, need)
	return nil, nil
}

// reportNoRoom is the status of a Sandbox bound here that has to wait for room, saying which room it lacks.
func (r *Reconciler) reportNoRoom(sbx *dsv1alpha1.Sandbox, refused *refusal) ctrl.Result {
	sbx.Status.NodeName = r.Options.Node
	status.Set(sbx, dsv1alpha1.ConditionScheduled, false, refused.reason, refused.message)
	applyFinding(sbx, finding{fact: factAwaiting, reason: refused.reason, message: refused.message})
	return ctrl.Result{RequeueAfter: r.Options.BindRetry}
}

// room tells whether the node can take sbx beside what it holds: nil refused if it can, with need, the
// Sandbox's footprint. It reads the node's cache, not the API server: a list per admission made admitting n
// Sandboxes cost n lists of up to n objects. What the cache may not show yet, a bind or admission made a
// moment ago, is counted from r.recent. Callers hold r.admission.
func (r *Reconciler) room(ctx context.Context, sbx *dsv1alpha1.Sandbox, admittedOnly bool) (need Holding, refused *refusal, err error) {
	need, services, err := r.footprintOf(ctx, sbx)
	if err != nil {
		return Holding{}, nil, err
	}
	if rt := r.missingRuntime(sbx, services); rt != "" {
		return need, r.runtimeRefusal(rt), nil
	}
	if refused := tooLargeForNode(r.Options.Node, r.Options.PerContainer, sbx, services); refused != nil {
		return need, refused, nil
	}
	load, err := r.nodeLoad(ctx, sbx.UID, admittedOnly)
	if err != nil {
		return Holding{}, nil, err
	}
	return need, roomFor(r.Options.Node, r.Options.Capacity, r.Options.Allocatable, load, need), nil
}

// nodeLoad adds up the Sandboxes the node holds, other than self: those admitted, or with admittedOnly
// false every one bound to it, and those this agent bound or admitted a moment ago.
func (r *Reconciler) nodeLoad(ctx context.Context, self types.UID, admittedOnly bool) (nodeLoad, error) {
	var list dsv1alpha1.SandboxList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // read only
		return nodeLoad{}, fmt.Errorf("listing Sandboxes for the node's load: %w", err)
	}
	holds := make(map[types.UID]Holding, len(list.Items))
	for i := range list.Items {
		item := &list.Items[i]
		admitted := controllerutil.ContainsFinalizer(item, dsv1alpha1.FinalizerCleanup)
		if admitted {
			delete(r.recent, item.UID) // the cache shows it now
		}
		if item.UID == self || !admitted && admittedOnly {
			continue
		}
		h, _, err := r.footprintOf(ctx, item)
		if err != nil {
			return nodeLoad{}, err
		}
		holds[item.UID] = h
	}
	for uid, a := range r.recent {
		if time.Since(a.at) > recentAdmissionTTL {
			delete(r.recent, uid)
			continue
		}
		if _, listed := holds[uid]; !listed && uid != self {
			holds[uid] = a.held
		}
	}
	var load nodeLoad
	for _, h := range holds {
		load.count++
		load.Holding = load.plus(h)
	}
	return load, nil
}

// recentAdmissionTTL is how long a bind or admission is counted on its own: far longer than the cache takes to
// show it, and short enough that a Sandbox deleted right after its bind holds no room for long.
const recentAdmissionTTL = 30 * time.Second

// forgetAdmission drops a Sandbox whose deletion finished, or whose bind or admission failed: it holds no
// room any more.
func (r *Reconciler) forgetAdmission(uid types.UID) {
	r.admission.Lock()
	defer r.admission.Unlock()
	delete(r.recent, uid)
}

// recentAdmission is a bind or admission this agent made or is making, counted until the cache shows it.
type recentAdmission struct {
	at   time.Time
	held Holding // the Sandbox's footprint
}

// remember counts a bind or admission this agent is making until the cache shows it. Callers hold r.admission.
func (r *Reconciler) remember(uid types.UID, h Holding) {
	if r.recent == nil {
		r.recent = map[types.UID]recentAdmission{}
	}
	r.recent[uid] = recentAdmission{at: time.Now(), held: h}
}
