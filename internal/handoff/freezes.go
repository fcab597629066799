package handoff

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Freezes is the lock between captures, which freeze a Sandbox's primary, and Executions' commands, which
// need it running: a Sandbox is held by one capture or one command at a time, never both. A command takes
// the Sandbox before its Execution is recorded Running and keeps it until its outcome is written, so a
// capture can never freeze the primary under a command that is starting (Docker refuses an exec in a paused
// container) nor in the middle of one (its deadline would run on while it is frozen). A capture waits for
// the command, and a command for the capture; whoever lets go wakes those waiting (Notify).
//
// The Sandbox reconciler leaves the lifecycle of a Sandbox a capture holds alone: it would otherwise thaw a
// primary it finds paused against spec.lifecycle: Running, in the middle of the copy. Held of a nil *Freezes
// is false.
type Freezes struct {
	mu       sync.Mutex
	held     map[types.UID]holder
	notified []func(sandbox types.NamespacedName)
}

// holder is who holds one Sandbox: the Checkpoint capturing it or the Execution running in it.
type holder struct {
	sandbox    types.NamespacedName
	checkpoint string
	execution  string
}

// Hold takes the Sandbox for the capture of checkpoint. When a capture or a command holds it already, it
// takes nothing and says which: capturing names the Checkpoint, running the Execution.
func (f *Freezes) Hold(sbx *dsv1alpha1.Sandbox, checkpoint string) (capturing, running string, ok bool) {
	return f.take(sbx, holder{checkpoint: checkpoint})
}

// Release ends a capture's hold and wakes those waiting for the Sandbox.
func (f *Freezes) Release(uid types.UID) { f.let(uid) }

// StartRun takes the Sandbox for the command of execution, before it is recorded Running. When a capture or
// another command holds it, it takes nothing and says which.
func (f *Freezes) StartRun(sbx *dsv1alpha1.Sandbox, execution string) (capturing, running string, ok bool) {
	return f.take(sbx, holder{execution: execution})
}

// EndRun ends a command's hold (it ended, or never started) and wakes those waiting for the Sandbox.
func (f *Freezes) EndRun(uid types.UID) { f.let(uid) }

// Held tells whether a capture holds the Sandbox now.
func (f *Freezes) Held(uid types.UID) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held[uid].checkpoint != ""
}

// Notify calls fn with the Sandbox whenever a hold on it ends. fn must not block for long: it runs in the
// goroutine that let go (a capture's pass, a command's end).
func (f *Freezes) Notify(fn func(sandbox types.NamespacedName)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notified = append(f.notified, fn)
}

func (f *Freezes) take(sbx *dsv1alpha1.Sandbox, h holder) (capturing, running string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, held := f.held[sbx.UID]; held {
		return cur.checkpoint, cur.execution, false
	}
	if f.held == nil {
		f.held = map[types.UID]holder{}
	}
	h.sandbox = types.NamespacedName{Namespace: sbx.Namespace, Name: sbx.Name}
	f.held[sbx.UID] = h
	return "", "", true
}

func (f *Freezes) let(uid types.UID) {
	f.mu.Lock()
	h, held := f.held[uid]
	delete(f.held, uid)
	notified := f.notified
	f.mu.Unlock()
	if !held {
		return
	}
	for _, fn := range notified {
		fn(h.sandbox)
	}
}
