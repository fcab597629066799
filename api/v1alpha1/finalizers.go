package v1alpha1

const (
	// FinalizerCleanup keeps a Sandbox until its agent has removed every container, network and volume it made
	// for it, and a Checkpoint until its stored archive is deleted.
	FinalizerCleanup = "dockside.dev/cleanup"

	// FinalizerInUse keeps a SandboxService while a Sandbox still names it (like kubernetes.io/pvc-protection).
	FinalizerInUse = "dockside.dev/in-use-protection"
)
