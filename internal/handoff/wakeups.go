package handoff

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Wakeups asks for passes over Sandboxes through the reconciler's requeue channel: at once (a pull they wait
// for moved on) or at a given time (a startup deadline). Unlike a pass's RequeueAfter, a wakeup set for a
// time is not dropped when a later pass ends in an error and backs off, so a deadline is acted on when it
// comes. Nothing is sent once ctx has ended.
type Wakeups struct {
	ctx context.Context
	out chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox]

	mu     sync.Mutex
	alarms map[types.NamespacedName]alarm
}

type alarm struct {
	at    time.Time
	timer *time.Timer
}

// NewWakeups sends to out until ctx ends.
func NewWakeups(ctx context.Context, out chan<- event.TypedGenericEvent[*dsv1alpha1.Sandbox]) *Wakeups {
	return &Wakeups{ctx: ctx, out: out, alarms: map[types.NamespacedName]alarm{}}
}

// Now asks for a pass over the Sandbox key soon. It blocks until the request is queued.
func (w *Wakeups) Now(key types.NamespacedName) {
	Requeue(w.ctx, w.out, key.Namespace, key.Name)
}

// At asks for a pass over the Sandbox key at t, replacing the time asked for before.
func (w *Wakeups) At(key types.NamespacedName, t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.alarms[key]; ok {
		if a.at.Equal(t) {
			return
		}
		a.timer.Stop()
	}
	w.alarms[key] = alarm{at: t, timer: time.AfterFunc(time.Until(t), func() { w.ring(key, t) })}
}

// Due is the time a pass over the Sandbox key is asked for at (At); zero when none is.
func (w *Wakeups) Due(key types.NamespacedName) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.alarms[key].at
}

// Cancel drops the pass asked for at a later time, if any.
func (w *Wakeups) Cancel(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a, ok := w.alarms[key]; ok {
		a.timer.Stop()
		delete(w.alarms, key)
	}
}

func (w *Wakeups) ring(key types.NamespacedName, t time.Time) {
	w.mu.Lock()
	if a, ok := w.alarms[key]; ok && a.at.Equal(t) {
		delete(w.alarms, key)
	}
	w.mu.Unlock()
	w.Now(key)
}

// Context is the context the wakeups were made with, the agent's: work in the background that ends in a
// wakeup (a readiness check, a restore) is bound to it, so that it ends when the agent stops.
func (w *Wakeups) Context() context.Context { return w.ctx }
