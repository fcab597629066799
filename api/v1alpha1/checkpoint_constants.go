package v1alpha1

// Conditions and reasons of Checkpoints, of Sandboxes restoring from one, and of SandboxServices, beyond those
// in conditions.go.
const (
	// ConditionRestored: the workspace of a Sandbox with spec.restoreFrom holds its Checkpoint's files (set
	// only on such Sandboxes; once True it stays, so that a later topology roll never copies them in again).
	ConditionRestored = "Restored"

	ReasonRestored              = "Restored"              // Restored=True: the Checkpoint's files were copied in
	ReasonCheckpointOnOtherNode = "CheckpointOnOtherNode" // restoreFrom names a Checkpoint stored on another node
	ReasonWaitingForSandbox     = "WaitingForSandbox"     // the Checkpoint's Sandbox is not bound or not up yet
	ReasonSandboxOnOtherNode    = "SandboxOnOtherNode"    // the Sandbox now runs on a node other than the Checkpoint's
	ReasonSandboxPoisoned       = "SandboxPoisoned"       // the Sandbox's topology is poisoned; nothing to capture
	ReasonArchiveMissing        = "ArchiveMissing"        // the stored archive is gone from the node
	ReasonArchiveCorrupt        = "ArchiveCorrupt"        // the stored archive no longer matches its digest
	ReasonAccepted              = "Accepted"              // SandboxService Ready=True: its spec can be run
)
