package v1alpha1

// Condition types. They follow kstatus, which Flux, Argo CD and `kubectl wait` read: Ready=True is Current,
// Ready=False or Reconciling=True is InProgress, Stalled=True is Failed. So a converging object sets
// Reconciling, an object that will not converge without a change (poisoned topology, failed run or capture)
// sets Stalled with Ready=False, and a run that succeeded reads Ready=True with reason Completed.
//
// These three are every kind's; each kind's own condition types and reasons are in <kind>_conditions.go.
const (
	// ConditionReady: the object is what its spec asks (Sandbox: primary running, or run succeeded;
	// Checkpoint: archive stored; SandboxService: accepted).
	ConditionReady = "Ready"
	// ConditionReconciling: the agent is working towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled: the agent will not make progress without a change to the spec or the world.
	ConditionStalled = "Stalled"
)

// Condition reasons: one CamelCase word each, saying which phase of the work failed or where it stands.
// Messages next to them are for people and never carry Docker's own error text, which can hold secrets.
// The reasons here are those several kinds use.
const (
	// Progress.
	ReasonPending = "Pending" // accepted, nothing done yet
	ReasonRunning = "Running" // up and as asked (Sandbox), the command runs (Execution)

	// Which phase failed.
	ReasonSecretNotFound    = "SecretNotFound"    // an env valueFrom or a secret file names a missing Secret or key (Sandbox, SandboxService)
	ReasonDockerUnavailable = "DockerUnavailable" // the daemon did not answer; retried (Sandbox, Checkpoint)

	// How a run ended: a Sandbox's run (status.result.reason) or an Execution (status.reason). An Execution
	// that ended DeadlineExceeded, Canceled or Lost also poisons its Sandbox's topology (TopologyPoisoned) with
	// the same reason: the agent killed the Sandbox's container from the host, or cannot vouch for it.
	ReasonCompleted        = "Completed"        // exit code 0
	ReasonError            = "Error"            // non-zero exit code
	ReasonDeadlineExceeded = "DeadlineExceeded" // stopped at activeDeadlineSeconds
	ReasonLost             = "Lost"             // the container vanished; its outcome is unknown
	ReasonSandboxNotFound  = "SandboxNotFound"  // spec.sandboxName names no Sandbox (Checkpoints, Executions)
	ReasonCanceled         = "Canceled"         // deleted while running (or the agent stopped): the container was killed
)
