package v1alpha1

// Execution reasons (status.reason, and the reason of its Ready, Reconciling and Stalled conditions) beyond
// those it shares with runs in conditions.go (Completed, Error, DeadlineExceeded, Lost).
const (
	ReasonQueued              = "Queued"              // waiting for the Sandbox to be Ready or for earlier Executions
	ReasonOutputLimitExceeded = "OutputLimitExceeded" // output past maxOutputBytes was cut; the exit code is kept
	ReasonCanceled            = "Canceled"            // deleted while running (or the agent stopped): the container was killed
	ReasonSandboxNotReady     = "SandboxNotReady"     // the Sandbox cannot run it (gone, a run, poisoned, ...); it never ran
)

// Why an Execution poisoned its Sandbox's topology (TopologyPoisoned reasons), besides DeadlineExceeded,
// Canceled and Lost: each of them means the agent killed the Sandbox's container from the host.
const (
	// ReasonLeftoverProcesses: the command exited but processes it started kept running; the container was
	// killed so that none of them outlives the Execution.
	ReasonLeftoverProcesses = "LeftoverProcesses"
)

// FieldExecutionSandboxName selects Executions by spec.sandboxName (a CRD selectable field, and the name of
// the agent's cache index of Executions by Sandbox).
const FieldExecutionSandboxName = "spec.sandboxName"
