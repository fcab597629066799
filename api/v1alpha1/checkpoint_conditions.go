package v1alpha1

// Condition reasons of Checkpoints (their conditions are Ready, Reconciling and Stalled), besides those several
// kinds share (conditions.go).
const (
	ReasonCapturing          = "Capturing"          // Sandbox frozen, workspace being copied out
	ReasonSucceeded          = "Succeeded"          // the object reached its goal
	ReasonWaitingForSandbox  = "WaitingForSandbox"  // the Checkpoint's Sandbox is not bound or not up yet
	ReasonSandboxNotRunning  = "SandboxNotRunning"  // the Sandbox has no workspace to capture now
	ReasonSandboxOnOtherNode = "SandboxOnOtherNode" // the Sandbox now runs on a node other than the Checkpoint's
	ReasonSandboxPoisoned    = "SandboxPoisoned"    // the Sandbox's topology is poisoned; nothing to capture
	ReasonCaptureFailed      = "CaptureFailed"      // the copy out or the store failed
	ReasonCaptureTooLarge    = "CaptureTooLarge"    // the archive passed the workspace's size plus archive overhead
	ReasonStoreFull          = "StoreFull"          // the node's checkpoint store has no room for the capture
	ReasonWaitingForStore    = "WaitingForStore"    // captures under way hold the room this capture needs
	ReasonWaitingForRun      = "WaitingForRun"      // an Execution's command runs in the Sandbox; captured after it
	ReasonArchiveMissing     = "ArchiveMissing"     // the stored archive is gone from the node
	ReasonArchiveCorrupt     = "ArchiveCorrupt"     // the stored archive no longer matches its digest

	// ReasonNamespaceCheckpointQuotaExceeded: the capture would take the archives its namespace's Checkpoints
	// hold on the node past the agent's --checkpoint-bytes-per-namespace.
	ReasonNamespaceCheckpointQuotaExceeded = "NamespaceCheckpointQuotaExceeded"
)
