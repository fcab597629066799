package v1alpha1

// Condition types of Sandboxes, besides Ready, Reconciling and Stalled (conditions.go).
const (
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
	// Reason Idle: frozen by the agent after spec.idlePauseSeconds without a command (see IdlePaused).
	ConditionPaused = "Paused"
	// ConditionRestored: the workspace of a Sandbox with spec.restoreFrom holds its Checkpoint's files (set
	// only on such Sandboxes; once True it stays, so that a later topology roll never copies them in again).
	ConditionRestored = "Restored"
	// ConditionNodeLost: the agent of the Sandbox's node has not renewed its Lease for longer than
	// --node-lost-after, so nothing vouches for the Sandbox's containers. Set True (reason LeaseExpired) by
	// another node's agent, which changes nothing else but Ready (Unknown), Reconciling (True) and Stalled
	// (False); set False (reason LeaseRenewed) by the node's own agent on its first pass once it is back
	// (docs/deploy.md, "When a host is lost").
	ConditionNodeLost = "NodeLost"
)

// IdlePaused tells whether the Sandbox's status says its agent froze it for idleness
// (spec.idlePauseSeconds), not at spec.lifecycle's request: its next command thaws it, so callers treat it as
// running (docs/design/idle-pause.md).
func IdlePaused(sbx *Sandbox) bool {
	if sbx.Spec.Lifecycle == LifecyclePaused {
		return false
	}
	for _, c := range sbx.Status.Conditions {
		if c.Type == ConditionPaused {
			return c.Status == "True" && c.Reason == ReasonIdle
		}
	}
	return false
}

// LazyUnstarted tells whether the Sandbox's status says it waits for its first command to be built
// (spec.start: Lazy): Ready with reason Lazy, no container yet. Its first command asks for the start and
// waits for it (docs/design/lazy-start.md).
func LazyUnstarted(sbx *Sandbox) bool {
	for _, c := range sbx.Status.Conditions {
		if c.Type == ConditionReady {
			return c.Status == "True" && c.Reason == ReasonLazy
		}
	}
	return false
}

// Condition reasons of Sandboxes, besides those several kinds share (conditions.go).
const (
	// Progress.
	ReasonNoCapacity         = "NoCapacity"         // Scheduled=False: no agent has had room to bind it yet
	ReasonNodeFull           = "NodeFull"           // the bound node holds as many Sandboxes as its capacity
	ReasonInsufficientMemory = "InsufficientMemory" // the bound node's allocatable memory has no room for it
	ReasonInsufficientPids   = "InsufficientPids"   // the bound node's pids have no room for it, or it asks more than one container may have
	ReasonInsufficientCPU    = "InsufficientCPU"    // the bound node's CPU has no room for its limits, or a container asks more CPUs than the host has
	ReasonRuntimeUnavailable = "RuntimeUnavailable" // it names a runtime (gVisor) that no agent's Docker offers, or not the bound node's
	ReasonCreating           = "Creating"           // building the topology
	ReasonRollingTopology    = "RollingTopology"    // replacing the topology after a spec change
	ReasonWaitingForServices = "WaitingForServices" // a service is starting or not yet ready
	ReasonRestoring          = "Restoring"          // copying a Checkpoint into the workspace
	ReasonPausing            = "Pausing"            // freezing
	ReasonPaused             = "Paused"             // frozen on request
	ReasonIdle               = "Idle"               // frozen by its agent after spec.idlePauseSeconds without a command
	ReasonLazy               = "Lazy"               // Ready with no container yet: spec.start Lazy, built at the first command
	ReasonResuming           = "Resuming"           // thawing
	ReasonDeleting           = "Deleting"           // Docker cleanup in progress

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

	// Why a topology was poisoned.
	ReasonServiceExited    = "ServiceExited"    // a service container stopped
	ReasonServiceUnhealthy = "ServiceUnhealthy" // a ready service failed readiness failureThreshold times
	ReasonPrimaryExited    = "PrimaryExited"    // a session's primary container stopped

	// How a run ended (status.result.reason), besides the reasons it shares with Executions.
	ReasonOOMKilled = "OOMKilled" // killed by the memory limit
)

// Condition reasons the Sandbox agent needs beyond those above: the True (or healthy) side of conditions
// named above only by their problems, and waits that are not failures.
const (
	ReasonBound               = "Bound"               // Scheduled=True: bound to a node whose agent accepted it
	ReasonAllReady            = "AllReady"            // ServicesReady=True: every service instance is ready
	ReasonUpToDate            = "UpToDate"            // ServicesUpToDate=True
	ReasonOutOfDate           = "OutOfDate"           // ServicesUpToDate=False: built from an older SandboxService
	ReasonHealthy             = "Healthy"             // TopologyPoisoned=False
	ReasonRestoreNotSupported = "RestoreNotSupported" // restoreFrom is set but this agent cannot restore yet
	ReasonNoFreeSubnet        = "NoFreeSubnet"        // every subnet of the node's topology pool is held; waits for one
	ReasonTopologyStopped     = "TopologyStopped"     // ServicesReady=False: a finished run's topology stopped its services
)

// Reasons of node loss (ConditionNodeLost).
const (
	ReasonLeaseExpired = "LeaseExpired" // NodeLost=True: the node's agent stopped renewing its Lease
	ReasonNodeLost     = "NodeLost"     // Ready=Unknown and Reconciling=True while the node is lost
	ReasonLeaseRenewed = "LeaseRenewed" // NodeLost=False: the node's agent is back and has looked again
)

// Reasons of a Sandbox restoring from a Checkpoint (spec.restoreFrom), beyond the Restoring, RestoreFailed,
// CheckpointNotFound and CheckpointNotReady above.
const (
	ReasonRestored              = "Restored"              // Restored=True: the Checkpoint's files were copied in
	ReasonCheckpointOnOtherNode = "CheckpointOnOtherNode" // restoreFrom names a Checkpoint stored on another node
)

// Why an Execution poisoned its Sandbox's topology (TopologyPoisoned reasons), besides DeadlineExceeded,
// Canceled and Lost (conditions.go): each of them means the agent killed the Sandbox's container from the host.
const (
	// ReasonLeftoverProcesses: the command exited but processes it started kept running; the container was
	// killed so that none of them outlives the Execution.
	ReasonLeftoverProcesses = "LeftoverProcesses"
)

// Reasons of a Sandbox's start: its images, and the startup deadline (spec.startupDeadlineSeconds). A start
// that fails for good (the deadline passed, or an image the spec must change) sets TopologyPoisoned=True with
// one of these reasons, like a service that stopped would, and what the start had built is removed; the
// workspace is kept.
const (
	// Images. Each message names the image and whose it is (the primary's or a service's).
	ReasonImagePulling           = "ImagePulling"           // a pull is under way (shared with other Sandboxes needing it)
	ReasonImagePullFailed        = "ImagePullFailed"        // the last pull failed; tried again until the startup deadline
	ReasonImageNotPresent        = "ImageNotPresent"        // imagePullPolicy Never, and the node does not hold the image
	ReasonImageNotPinned         = "ImageNotPinned"         // the node runs only digest-pinned images (--require-digest)
	ReasonImageDigestMismatch    = "ImageDigestMismatch"    // a pull of a pinned image brought content of another digest
	ReasonImageDeclaresVolumes   = "ImageDeclaresVolumes"   // the image declares a VOLUME no workspace or scratch mount covers
	ReasonImageTooLarge          = "ImageTooLarge"          // the image is larger than the node allows for one image (--max-image-bytes)
	ReasonImagePullSecretInvalid = "ImagePullSecretInvalid" // imagePullSecret is not a readable kubernetes.io/dockerconfigjson Secret
	// ReasonImagePullCredentialsRequired: the node holds the image from a pull with another namespace's
	// credentials, and this namespace's were not verified for it: its registry refused them (or the lack of
	// any), or imagePullPolicy Never forbids asking. Nothing of the start is built; a changed imagePullSecret
	// is tried until the startup deadline.
	ReasonImagePullCredentialsRequired = "ImagePullCredentialsRequired"

	// Containment the node refuses. Each message names the node and the agent flag or storage driver.
	ReasonRootNotAllowed          = "RootNotAllowed"          // runAsRoot on the Sandbox or a service, and the agent runs without --allow-root
	ReasonWritableRootUnsupported = "WritableRootUnsupported" // rootFilesystem Writable, and the node's storage driver cannot cap it
	ReasonUnrestrictedNotAllowed  = "UnrestrictedNotAllowed"  // network mode Unrestricted, and the agent runs with --refuse-unrestricted

	// ReasonNameCollision: two containers of the topology would claim one DNS name (the Sandbox's own name,
	// held by its primary, or a service's name or alias), so that it would resolve to either. The message
	// names the name and both claimants. Checked before anything of a start is built: a new topology (the
	// first, or a roll) fails with it, Stalled. A topology that already runs is never disrupted by a
	// SandboxService edited later to collide: it keeps the names it was built with, and ServicesUpToDate is
	// False with this reason until the names are unique again; its next roll fails with it.
	ReasonNameCollision = "NameCollision"

	// The startup deadline passed; the reason names the phase the start was in.
	ReasonImagePullTimeout = "ImagePullTimeout" // pulling an image (the message has the last attempt's outcome)
	ReasonWorkspaceTimeout = "WorkspaceTimeout" // making the workspace or its holder
	ReasonRestoreTimeout   = "RestoreTimeout"   // copying a Checkpoint in
	ReasonNetworkTimeout   = "NetworkTimeout"   // making the topology's network
	ReasonServiceNotReady  = "ServiceNotReady"  // starting a service or waiting for its readiness (the message names it)
	ReasonStartTimeout     = "StartTimeout"     // creating or starting the primary container
)
