package checkpoint

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// Kubernetes Event reasons of Checkpoints and of Sandboxes restored from one.
const (
	EventCaptured        = "Captured"        // the workspace was captured and stored
	EventCaptureFailed   = "CaptureFailed"   // the capture failed for good
	EventArchiveReleased = "ArchiveReleased" // a deleted Checkpoint let go of its archive
)

// wait records a phase on the way (Pending or Capturing): Reconciling, not Ready, not Stalled.
func (r *Reconciler) wait(ckpt *dsv1alpha1.Checkpoint, phase dsv1alpha1.CheckpointPhase, reason, format string, args ...any) {
	setPhase(ckpt, phase, reason, fmt.Sprintf(format, args...))
}

// fail records that the Checkpoint failed for good (Stalled), with an Event the first time.
func (r *Reconciler) fail(ckpt *dsv1alpha1.Checkpoint, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ckpt.Status.Phase != dsv1alpha1.CheckpointFailed {
		r.event(ckpt, true, EventCaptureFailed, "Capture", "%s", msg)
	}
	setPhase(ckpt, dsv1alpha1.CheckpointFailed, reason, msg)
}

// setPhase writes phase, and Ready, Reconciling and Stalled from one reason (phases are Pending,
// Capturing, Ready and Failed).
func setPhase(ckpt *dsv1alpha1.Checkpoint, phase dsv1alpha1.CheckpointPhase, reason, msg string) {
	ckpt.Status.Phase = phase
	status.Summarize(ckpt, status.Summary{
		Ready: phase == dsv1alpha1.CheckpointReady, Stalled: phase == dsv1alpha1.CheckpointFailed, Reason: reason, Message: msg,
	})
}

func (r *Reconciler) event(ckpt *dsv1alpha1.Checkpoint, warning bool, reason, action, note string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(ckpt, nil, typ, reason, action, note, args...)
}
