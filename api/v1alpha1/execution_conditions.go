package v1alpha1

// Execution reasons (status.reason, and the reason of its Ready, Reconciling and Stalled conditions) beyond
// those it shares with runs in conditions.go (Running, Completed, Error, DeadlineExceeded, Lost, Canceled).
const (
	ReasonQueued              = "Queued"              // waiting for the Sandbox to be Ready or for earlier Executions
	ReasonSandboxFrozen       = "SandboxFrozen"       // queued while a Checkpoint's capture holds the Sandbox frozen
	ReasonSandboxPaused       = "SandboxPaused"       // queued while the Sandbox is paused (spec.lifecycle)
	ReasonOutputLimitExceeded = "OutputLimitExceeded" // output past maxOutputBytes was cut; the exit code is kept
	ReasonSandboxNotReady     = "SandboxNotReady"     // the Sandbox cannot run it (gone, a run, poisoned, ...); it never ran
)
