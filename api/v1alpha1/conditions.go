package v1alpha1

// Condition types. They follow kstatus, which Flux, Argo CD and `kubectl wait` read: Ready=True is Current,
// Ready=False or Reconciling=True is InProgress, Stalled=True is Failed. So a converging object sets
// Reconciling, an object that will not converge without a change (poisoned topology, failed run or capture)
// sets Stalled with Ready=False, and a run that succeeded reads Ready=True with reason Completed.
const (
	// ConditionReady: the object is what its spec asks (Sandbox: primary running, or run succeeded;
	// Checkpoint: archive stored; SandboxService: accepted).
	ConditionReady = "Ready"
	// ConditionReconciling: the agent is working towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled: the agent will not make progress without a change to the spec or the world.
	ConditionStalled = "Stalled"
	// ConditionScheduled: the Sandbox is bound to a node (spec.nodeName) whose agent accepted it.
	ConditionScheduled = "Scheduled"
	// ConditionServicesReady: every service instance of the Sandbox passed readiness and still runs.
	ConditionServicesReady = "ServicesReady"
	// ConditionServicesUpToDate: every service instance was built from its SandboxService's current generation.
	ConditionServicesUpToDate = "ServicesUpToDate"
	// ConditionTopologyPoisoned: a service or a session's primary stopped or turned unhealthy. Not repaired
	// silently: Ready is False until the topology is rolled (by a spec change) or the Sandbox is recreated.
	ConditionTopologyPoisoned = "TopologyPoisoned"
	// ConditionPaused: the Sandbox's containers are frozen (spec.lifecycle: Paused).
	ConditionPaused = "Paused"
	// ConditionInUse: some Sandbox names this SandboxService, so it cannot be deleted yet.
	ConditionInUse = "InUse"
)

// Condition reasons: one CamelCase word each, saying which phase of the work failed or where it stands.
// Messages next to them are for people and never carry Docker's own error text, which can hold secrets.
const (
	// Progress.
	ReasonPending            = "Pending"            // accepted, nothing done yet
	ReasonUnscheduled        = "Unscheduled"        // no agent has bound the object yet
	ReasonNoCapacity         = "NoCapacity"         // the bound node has no room now
	ReasonCreating           = "Creating"           // building the topology
	ReasonRollingTopology    = "RollingTopology"    // replacing the topology after a spec change
	ReasonWaitingForServices = "WaitingForServices" // a service is starting or not yet ready
	ReasonRestoring          = "Restoring"          // copying a Checkpoint into the workspace
	ReasonRunning            = "Running"            // up and as asked
	ReasonPausing            = "Pausing"            // freezing
	ReasonPaused             = "Paused"             // frozen on request
	ReasonResuming           = "Resuming"           // thawing
	ReasonDeleting           = "Deleting"           // Docker cleanup in progress
	ReasonSucceeded          = "Succeeded"          // the object reached its goal

	// Which phase failed.
	ReasonInvalidSpec            = "InvalidSpec"            // the spec cannot be run (refused by node policy, ...)
	ReasonImageFailed            = "ImageFailed"            // image missing on the node, or refused
	ReasonNetworkFailed          = "NetworkFailed"          // the topology's network could not be made
	ReasonWorkspaceFailed        = "WorkspaceFailed"        // the workspace volume or its holder could not be made
	ReasonServiceNotFound        = "ServiceNotFound"        // spec.services names a missing SandboxService
	ReasonServiceStartFailed     = "ServiceStartFailed"     // a service container could not be created or started
	ReasonServiceReadinessFailed = "ServiceReadinessFailed" // a service never passed readiness
	ReasonStartFailed            = "StartFailed"            // the primary container could not be created or started
	ReasonRestoreFailed          = "RestoreFailed"          // the Checkpoint could not be copied in
	ReasonCheckpointNotFound     = "CheckpointNotFound"     // restoreFrom names a missing Checkpoint
	ReasonCheckpointNotReady     = "CheckpointNotReady"     // restoreFrom names a Checkpoint not (yet) Ready
	ReasonPauseFailed            = "PauseFailed"            // freeze or thaw failed
	ReasonCleanupFailed          = "CleanupFailed"          // removal failed or its outcome is uncertain; retried
	ReasonDockerUnavailable      = "DockerUnavailable"      // the daemon did not answer; retried

	// Why a topology was poisoned.
	ReasonServiceExited    = "ServiceExited"    // a service container stopped
	ReasonServiceUnhealthy = "ServiceUnhealthy" // a ready service failed readiness failureThreshold times
	ReasonPrimaryExited    = "PrimaryExited"    // a session's primary container stopped

	// How a run ended (also status.result.reason).
	ReasonCompleted        = "Completed"        // exit code 0
	ReasonError            = "Error"            // non-zero exit code
	ReasonDeadlineExceeded = "DeadlineExceeded" // stopped at activeDeadlineSeconds
	ReasonOOMKilled        = "OOMKilled"        // killed by the memory limit
	ReasonLost             = "Lost"             // the container vanished; its outcome is unknown

	// Checkpoints.
	ReasonCapturing         = "Capturing"         // Sandbox frozen, workspace being copied out
	ReasonSandboxNotFound   = "SandboxNotFound"   // spec.sandboxName names no Sandbox
	ReasonSandboxNotRunning = "SandboxNotRunning" // the Sandbox has no workspace to capture now
	ReasonCaptureFailed     = "CaptureFailed"     // the copy out or the store failed

	// SandboxServices.
	ReasonInUse    = "InUse"    // some Sandbox names it
	ReasonNotInUse = "NotInUse" // no Sandbox names it
)
