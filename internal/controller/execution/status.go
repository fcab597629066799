package execution

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// Kubernetes Event reasons about Executions.
const (
	EventExecutionSucceeded = "ExecutionSucceeded" // the command exited 0 with all its output kept
	EventExecutionFailed    = "ExecutionFailed"    // anything else: status.reason says what
)

// maxMessage bounds status.message (mirrors its MaxLength marker).
const maxMessage = 1024

// queued keeps the Execution waiting, saying for what: reason is Queued, or SandboxFrozen or SandboxPaused
// when the Sandbox is frozen by a capture or by its spec.
func queued(ex *dsv1alpha1.Execution, reason, message string) {
	ex.Status.Phase = dsv1alpha1.ExecutionQueued
	setExecutionConditions(ex, reason, message)
}

// settle ends the Execution with a phase and a reason, and records when.
func settle(ex *dsv1alpha1.Execution, phase dsv1alpha1.ExecutionPhase, reason, message string) {
	now := metav1.NowMicro()
	ex.Status.Phase, ex.Status.FinishTime = phase, &now
	setExecutionConditions(ex, reason, message)
}

// endPass writes the status a pass arrived at (see status.Pass.End) and, when that write ended the
// Execution, records its Event. It reports whether the pass's status stands.
func (r *Reconciler) endPass(ctx context.Context, pass *status.Pass[*dsv1alpha1.Execution], ex *dsv1alpha1.Execution, result *ctrl.Result, reterr *error) bool {
	if !pass.End(ctx, ex, result, reterr) {
		return false
	}
	if finished(ex) && !finished(pass.Before()) {
		r.announce(ex)
	}
	return true
}

// announce records the Event of an Execution whose end was just written.
func (r *Reconciler) announce(ex *dsv1alpha1.Execution) {
	if ex.Status.Phase == dsv1alpha1.ExecutionSucceeded {
		r.Recorder.Eventf(ex, nil, corev1.EventTypeNormal, EventExecutionSucceeded, "Run", "%s", ex.Status.Message)
		return
	}
	r.Recorder.Eventf(ex, nil, corev1.EventTypeWarning, EventExecutionFailed, "Run", "%s: %s", ex.Status.Reason, ex.Status.Message)
}

// setExecutionConditions writes reason and message, and Ready, Reconciling and Stalled from the phase, so
// that kstatus reads a queued or running Execution as InProgress, a succeeded one as Current and a failed
// one as Failed (phases are Queued, Running, Succeeded and Failed).
func setExecutionConditions(ex *dsv1alpha1.Execution, reason, message string) {
	if len(message) > maxMessage {
		message = strings.ToValidUTF8(message[:maxMessage-3], "") + "..."
	}
	ex.Status.Reason, ex.Status.Message = reason, message
	status.Summarize(ex, status.Summary{
		Ready: ex.Status.Phase == dsv1alpha1.ExecutionSucceeded, Stalled: ex.Status.Phase == dsv1alpha1.ExecutionFailed,
		Reason: reason, Message: message,
	})
}
