package sandbox

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// holderWait is how long at most a new session's holder waits after its primary's start while other
// Sandboxes of the node are on their way to their first start: a container start is what Docker serves
// slowest, and a holder is off its Sandbox's way to Ready, so Sandboxes applied at once get Docker's starts
// for their primaries first (docs/design/docker-mapping.md, "Why the holder exists"). Until the holder runs,
// the primary holds the workspace, as it does on a quiet node until the pass after its start.
const holderWait = 10 * time.Second

// waitingHolders are the Sandboxes whose holder waits (holderWaits), woken together once no start is under
// way on the node (releaseHolders).
type waitingHolders struct {
	mu   sync.Mutex
	keys map[types.NamespacedName]struct{}
}

func (w *waitingHolders) add(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = map[types.NamespacedName]struct{}{}
	}
	w.keys[key] = struct{}{}
}

// take empties the set and returns what it held.
func (w *waitingHolders) take() []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]types.NamespacedName, 0, len(w.keys))
	for k := range w.keys {
		out = append(out, k)
	}
	w.keys = nil
	return out
}

func (w *waitingHolders) empty() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.keys) == 0
}

// holderWaits tells whether the holder of a new session, whose primary runs, waits for the node's other
// starts (holderWait); if so it asks for the pass that makes it once they are over, and at the latest when
// the wait runs out. A run, a restore and a primary that does not run need their holder at once (holderFirst).
func (r *Reconciler) holderWaits(ctx context.Context, s *scope) bool {
	primary := s.containers[s.primaryName()]
	if s.isRun() || s.sbx.Spec.RestoreFrom != "" || primary.State != dd.StateRunning {
		return false
	}
	left := holderWait - time.Since(primary.StartedAt)
	if left <= 0 || !r.startsUnderWay(ctx, s.sbx.UID) {
		return false
	}
	r.holders.add(s.key())
	s.after(left)
	return true
}

// releaseHolders wakes the Sandboxes whose holder waits once no start is under way on the node. Every pass
// calls it: the status write of the last start under way brings a pass, and so does a deletion.
func (r *Reconciler) releaseHolders(ctx context.Context) {
	if r.holders.empty() || r.startsUnderWay(ctx, "") {
		return
	}
	for _, key := range r.holders.take() {
		go r.Wake.Now(key) // off the worker: the requeue channel may be full while the workers drain it
	}
}

// startsUnderWay tells whether a Sandbox of this node other than except is admitted, not deleted, and on its
// way to its first start: not Ready, its primary not started and its start not failed. It reads the node's
// cache, which may lag a moment behind; a wrong answer only moves a holder's start by a pass.
func (r *Reconciler) startsUnderWay(ctx context.Context, except types.UID) bool {
	var list dsv1alpha1.SandboxList
	if err := r.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Info("Could not list the node's Sandboxes; holders start without waiting", "error", err.Error())
		return false
	}
	for i := range list.Items {
		sbx := &list.Items[i]
		if sbx.UID == except || sbx.Spec.NodeName != r.Options.Node || !sbx.DeletionTimestamp.IsZero() ||
			!controllerutil.ContainsFinalizer(sbx, dsv1alpha1.FinalizerCleanup) {
			continue
		}
		// A lazy Sandbox is Pending and Ready with no start to come until a command asks for it.
		if sbx.Status.StartTime == nil && !meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionReady) &&
			(sbx.Status.Phase == "" || sbx.Status.Phase == dsv1alpha1.SandboxPending || sbx.Status.Phase == dsv1alpha1.SandboxStarting) {
			return true
		}
	}
	return false
}
