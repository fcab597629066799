package sandbox

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Commands tells whether an Execution's command runs in a Sandbox now. The Sandbox reconciler asks before it
// reads a stopped primary as PrimaryExited: a run that killed it (deadline, cancel) says why itself, through
// Verdicts. The execution package's runs implement it.
type Commands interface {
	Running(sandbox types.UID) bool
}

// Verdict is a poisoning decided outside the Sandbox reconciler: an Execution's run killed the primary of a
// topology (deadline, cancel, leftover processes) or cannot vouch for it (lost). Like the DisruptionTarget
// condition a Pod gets from whoever evicts it, it poisons the topology with its reason; unlike it, the
// Sandbox reconciler writes it, as the one writer of Sandbox status.
type Verdict struct {
	Sandbox    types.NamespacedName
	UID        types.UID      // of the Sandbox: a Sandbox replaced since is left alone
	Generation int64          // the topology generation judged: a topology rolled since is left alone
	Reason     string         // TopologyPoisoned reason
	Message    string         // what happened, for the condition and the Event
	Related    runtime.Object // what decided it (the Execution), named in the Event
}

// Verdicts carry poisonings from other reconcilers to the Sandbox reconciler.
type Verdicts struct {
	wake func(types.NamespacedName)

	mu      sync.Mutex
	pending map[types.NamespacedName]*pendingVerdict
}

type pendingVerdict struct {
	Verdict
	done chan struct{} // closed once the verdict is written, or moot
}

// NewVerdicts hands verdicts over by waking the Sandbox they concern through wake.
func NewVerdicts(wake func(types.NamespacedName)) *Verdicts {
	return &Verdicts{wake: wake, pending: map[types.NamespacedName]*pendingVerdict{}}
}

// Poison hands the verdict to the Sandbox reconciler and waits until it has written it to the Sandbox's
// status (or found it moot: the Sandbox gone, replaced, rolled or already poisoned), so that the caller
// records its own outcome only after the Sandbox's. ctx bounds the wait.
func (v *Verdicts) Poison(ctx context.Context, verdict Verdict) error {
	v.mu.Lock()
	p, ok := v.pending[verdict.Sandbox]
	if !ok || p.UID != verdict.UID {
		p = &pendingVerdict{Verdict: verdict, done: make(chan struct{})}
		v.pending[verdict.Sandbox] = p
	}
	v.mu.Unlock()
	v.wake(verdict.Sandbox)
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("the Sandbox %s was not marked TopologyPoisoned in time: %w", verdict.Sandbox, ctx.Err())
	}
}

// take returns the verdict waiting for the Sandbox, if any; it stays pending until settled. A verdict about
// a Sandbox replaced since is moot and settled at once.
func (v *Verdicts) take(sbx *dsv1alpha1.Sandbox) (Verdict, bool) {
	if v == nil {
		return Verdict{}, false
	}
	key := types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name}
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pending[key]
	switch {
	case !ok:
		return Verdict{}, false
	case p.UID != sbx.UID:
		v.settleLocked(key)
		return Verdict{}, false
	}
	return p.Verdict, true
}

// settle ends the wait for the Sandbox's verdict: its status now says so, or never will.
func (v *Verdicts) settle(key types.NamespacedName) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.settleLocked(key)
}

func (v *Verdicts) settleLocked(key types.NamespacedName) {
	if p, ok := v.pending[key]; ok {
		close(p.done)
		delete(v.pending, key)
	}
}

// applyVerdict writes a verdict handed over by an Execution's run into the Sandbox's status, and returns it
// so that its wait ends once the pass's write stands. A verdict about a topology rolled since, or one
// already poisoned, is moot; one about a generation the cache does not show yet waits for it.
func (r *SandboxReconciler) applyVerdict(ctx context.Context, sbx *dsv1alpha1.Sandbox) *Verdict {
	v, ok := r.Verdicts.take(sbx)
	switch {
	case !ok, sbx.Status.TopologyGeneration < v.Generation:
		return nil
	case sbx.Status.TopologyGeneration > v.Generation, isPoisoned(sbx), !sbx.DeletionTimestamp.IsZero():
		r.Verdicts.settle(types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name})
		return nil
	}
	status.Set(sbx, dsv1alpha1.ConditionTopologyPoisoned, true, v.Reason, v.Message)
	ctrl.LoggerFrom(ctx).Info("Topology poisoned by an Execution", "reason", v.Reason, "detail", v.Message)
	return &v
}

// announceVerdict records the Event of a verdict whose write stands, naming what decided it.
func (r *SandboxReconciler) announceVerdict(sbx *dsv1alpha1.Sandbox, v *Verdict) {
	r.Recorder.Eventf(sbx, v.Related, corev1.EventTypeWarning, EventPoisoned, "Poison", "%s; the topology is stopped, the workspace kept", v.Message)
}

// reportVerdict ends a pass that wrote a verdict, with the Sandbox Stalled for its reason. Like every
// settling decision it only records itself: the topology is stopped by the pass that reads the verdict back,
// so that nothing is stopped on a verdict whose write was lost.
func (r *SandboxReconciler) reportVerdict(sbx *dsv1alpha1.Sandbox, v *Verdict) ctrl.Result {
	s := newScope(sbx)
	s.stalled(dsv1alpha1.SandboxFailed, v.Reason, "%s", v.Message)
	r.summarize(s)
	return ctrl.Result{}
}
