package sandbox

import (
	corev1 "k8s.io/api/core/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Kubernetes Event reasons. An Event is recorded only when the agent did something or saw something happen,
// never for a pass that found everything as it was.
const (
	EventBound            = "Bound"            // bound to this node
	EventWorkspaceCreated = "WorkspaceCreated" // workspace volume and its holder made
	EventHolderRestarted  = "HolderRestarted"  // the workspace holder had stopped and was started again
	EventNetworkCreated   = "NetworkCreated"   // the topology's own network made
	EventServiceStarted   = "ServiceStarted"   // a service container started
	EventServiceReady     = "ServiceReady"     // a service passed readiness
	EventStarted          = "Started"          // the primary container started
	EventPaused           = "Paused"           // containers frozen
	EventIdlePaused       = "IdlePaused"       // containers frozen after spec.idlePauseSeconds without a command
	EventResumed          = "Resumed"          // containers thawed
	EventPoisoned         = "TopologyPoisoned" // a service or a session's primary failed; the topology stopped
	EventRolled           = "TopologyRolled"   // the spec changed; the old topology was removed, a new one follows
	EventDeadlineExceeded = "DeadlineExceeded" // stopped at activeDeadlineSeconds
	EventRunSucceeded     = "RunSucceeded"     // the command exited 0
	EventRunFailed        = "RunFailed"        // the command exited otherwise, or was lost
	EventExpired          = "TTLExpired"       // deleted ttlSecondsAfterFinished after the run
	EventCleanedUp        = "CleanedUp"        // Docker confirmed everything of the Sandbox is gone
	EventRestored         = "Restored"         // a Checkpoint's files were copied into the workspace
)

// event records a Kubernetes Event about sbx. action is what the agent did, in one word.
func (r *Reconciler) event(sbx *dsv1alpha1.Sandbox, warning bool, reason, action, note string, args ...any) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(sbx, nil, typ, reason, action, note, args...)
}
