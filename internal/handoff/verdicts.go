package handoff

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

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

// Take returns the verdict waiting for the Sandbox, if any; it stays pending until settled. A verdict about
// a Sandbox replaced since is moot and settled at once.
func (v *Verdicts) Take(sbx *dsv1alpha1.Sandbox) (Verdict, bool) {
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

// Settle ends the wait for the Sandbox's verdict: its status now says so, or never will.
func (v *Verdicts) Settle(key types.NamespacedName) {
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
