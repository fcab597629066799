package controllers

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Kubernetes Event reasons of Checkpoints and of Sandboxes restored from one.
const (
	EventCaptured        = "Captured"        // the workspace was captured and stored
	EventCaptureFailed   = "CaptureFailed"   // the capture failed for good
	EventArchiveReleased = "ArchiveReleased" // a deleted Checkpoint let go of its archive
	EventRestored        = "Restored"        // a Checkpoint's files were copied into a Sandbox's workspace
)

// wait records a phase on the way (Pending or Capturing): Reconciling, not Ready, not Stalled.
func (r *CheckpointReconciler) wait(ckpt *dsv1alpha1.Checkpoint, phase dsv1alpha1.CheckpointPhase, reason, format string, args ...any) {
	setCheckpointPhase(ckpt, phase, reason, fmt.Sprintf(format, args...))
}

// fail records that the Checkpoint failed for good (Stalled), with an Event the first time.
func (r *CheckpointReconciler) fail(ckpt *dsv1alpha1.Checkpoint, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if ckpt.Status.Phase != dsv1alpha1.CheckpointFailed {
		r.event(ckpt, true, EventCaptureFailed, "Capture", "%s", msg)
	}
	setCheckpointPhase(ckpt, dsv1alpha1.CheckpointFailed, reason, msg)
}

// setCheckpointPhase writes phase, Ready, Reconciling and Stalled from one reason, so that they never
// disagree (kstatus reads all three).
func setCheckpointPhase(ckpt *dsv1alpha1.Checkpoint, phase dsv1alpha1.CheckpointPhase, reason, msg string) {
	ckpt.Status.Phase = phase
	set := func(typ string, on bool) {
		s := metav1.ConditionFalse
		if on {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&ckpt.Status.Conditions, metav1.Condition{
			Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: ckpt.Generation,
		})
	}
	set(dsv1alpha1.ConditionReady, phase == dsv1alpha1.CheckpointReady)
	set(dsv1alpha1.ConditionReconciling, phase == dsv1alpha1.CheckpointPending || phase == dsv1alpha1.CheckpointCapturing)
	set(dsv1alpha1.ConditionStalled, phase == dsv1alpha1.CheckpointFailed)
}

func (r *CheckpointReconciler) event(ckpt *dsv1alpha1.Checkpoint, warning bool, reason, action, note string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(ckpt, nil, typ, reason, action, note, args...)
}
