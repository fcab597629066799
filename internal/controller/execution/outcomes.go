package execution

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
)

// outcome is how a run ended, as its Execution records it: the verdict, the output kept (within
// outputBudget) and when the command ended.
type outcome struct {
	verdict
	stdout, stderr       string
	stdoutCut, stderrCut int64
	ended                metav1.MicroTime
}

func newOutcome(v verdict, res dd.ExecResult) outcome {
	o := outcome{verdict: v, ended: metav1.NowMicro()}
	o.stdout, o.stdoutCut, o.stderr, o.stderrCut = keptOutput(res)
	return o
}

// apply ends the Execution with the outcome.
func (o outcome) apply(ex *dsv1alpha1.Execution) {
	st := &ex.Status
	st.ExitCode, st.SandboxKilled = o.exitCode, o.poison != ""
	st.Stdout, st.StdoutTruncatedBytes, st.Stderr, st.StderrTruncatedBytes = o.stdout, o.stdoutCut, o.stderr, o.stderrCut
	settle(ex, o.phase, o.reason, o.message)
	ended := o.ended
	st.FinishTime = &ended
}

// record writes a run's outcome and output onto the Execution, unless it is gone (deleted, cancelled),
// replaced by another of the same name, or already ended (a write whose answer was lost). launched is the
// Execution as this run last wrote it (patchWritten). A transient API error is retried briefly
// (status.RetryTransient); when the write still fails, the caller keeps the outcome for the next pass.
func (r *Reconciler) record(ctx context.Context, launched *dsv1alpha1.Execution, o outcome) error {
	return status.RetryTransient(ctx, func() error {
		written, err := r.patchWritten(ctx, launched, func(ex *dsv1alpha1.Execution) (bool, error) {
			return ex.UID == launched.UID && !finished(ex), nil
		}, o.apply)
		if written {
			r.announce(launched)
		}
		return client.IgnoreNotFound(err)
	})
}

// keptOutcome is an outcome whose write failed, and the Execution it belongs to.
type keptOutcome struct {
	key types.NamespacedName
	outcome
}

// keep holds the outcome of the run of Execution key (UID uid) whose write failed, until a pass writes it
// and the next one finds the Execution finished, or the Execution is deleted or replaced (cancel). Each one
// holds at most the output an Execution keeps (outputBudget).
func (r *Runs) keep(key types.NamespacedName, uid types.UID, o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes[uid] = keptOutcome{key: key, outcome: o}
}

// kept returns the outcome kept for the Execution with this UID, if any.
func (r *Runs) kept(uid types.UID) (outcome, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.outcomes[uid]
	return k.outcome, ok
}

// forget drops the outcome kept for the Execution with this UID: its end is written.
func (r *Runs) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.outcomes, uid)
}

// forgetLocked drops the outcomes kept for Execution key except that of UID keep ("" drops any); r.mu held.
func (r *Runs) forgetLocked(key types.NamespacedName, keep types.UID) {
	for uid, k := range r.outcomes {
		if k.key == key && uid != keep {
			delete(r.outcomes, uid)
		}
	}
}
