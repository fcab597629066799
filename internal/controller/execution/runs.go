package execution

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Runs are the commands this agent is running, by Execution. They live only in memory, on purpose:
// an Execution found Running with no run here was started by an agent that is gone, so its outcome is
// unknown and it ends as Lost. Unless the run ended here and failed to record its outcome: that outcome is
// kept (outcomes.go) until a pass writes it.
type Runs struct {
	mu       sync.Mutex
	active   map[types.NamespacedName]execRun
	outcomes map[types.UID]keptOutcome // by Execution UID
	wg       sync.WaitGroup
}

type execRun struct {
	uid     types.UID // of the Execution
	sandbox types.UID
	cancel  context.CancelFunc
}

// NewRuns returns an empty set of runs, shared by the Execution reconciler (which starts and cancels
// them) and the Sandbox reconciler (which asks whether one is under way).
func NewRuns() *Runs {
	return &Runs{active: map[types.NamespacedName]execRun{}, outcomes: map[types.UID]keptOutcome{}}
}

// Running tells whether a command runs in the Sandbox with this UID. The Sandbox reconciler asks before it
// reads a stopped primary as PrimaryExited: a run that killed it (deadline, cancel) says why itself.
func (r *Runs) Running(sandbox types.UID) bool {
	return r.runningIn(sandbox) != ""
}

// runningIn names the Execution whose command runs in the Sandbox, "" for none.
func (r *Runs) runningIn(sandbox types.UID) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, run := range r.active {
		if run.sandbox == sandbox {
			return key.Name
		}
	}
	return ""
}

// holds tells whether the Execution key with this UID has a run here.
func (r *Runs) holds(key types.NamespacedName, uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	run, ok := r.active[key]
	return ok && run.uid == uid
}

// cancel cancels the run of key, and drops the outcome kept for it, unless it belongs to the Execution keep
// ("" cancels any): the Execution was deleted, or replaced by a new one of the same name.
func (r *Runs) cancel(key types.NamespacedName, keep types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if run, ok := r.active[key]; ok && run.uid != keep {
		run.cancel()
	}
	r.forgetLocked(key, keep)
}

// start records a run about to begin; end must follow once its outcome is written.
func (r *Runs) start(key types.NamespacedName, run execRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.active[key] = run
	r.wg.Add(1)
}

func (r *Runs) end(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, key)
	r.wg.Done()
}

// Wait returns once every run has ended and written its outcome.
func (r *Runs) Wait() { r.wg.Wait() }
