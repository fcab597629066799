package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaxExecutionOutputBytes is the most output of one stream an Execution may keep (spec.maxOutputBytes), and
// the node-wide ceiling an agent applies unless told a lower one.
const MaxExecutionOutputBytes = 262144

// ExecutionSpec is one command to run in a session Sandbox. It cannot change: an Execution is one run,
// never retried; create a new Execution to run again.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an Execution's spec cannot change after creation; create a new Execution instead"
type ExecutionSpec struct {
	// sandboxName is the session Sandbox (one without a command) in the same namespace to run in. Executions
	// of one Sandbox run one at a time, in the order they were created.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="sandboxName must be the name of a Sandbox: a DNS label of lowercase letters, digits and '-'"
	// +required
	SandboxName string `json:"sandboxName"`

	// command is the program and its arguments (argv), run directly, not through a shell: use
	// ["sh", "-c", "..."] for shell syntax.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=16384
	// +listType=atomic
	// +required
	Command []string `json:"command"`

	// stdin is written to the command's standard input, which is then closed (for example code for
	// `python3 -`). At most 64 KiB of UTF-8 text. Without it the command reads end-of-file at once.
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:XValidation:rule="bytes(self).size() <= 65536",message="stdin must be at most 64 KiB (65536 bytes of UTF-8)"
	// +optional
	Stdin string `json:"stdin,omitempty"`

	// env adds environment variables to those the Sandbox's primary container already has. Values are
	// literal and readable by anyone who can read the Execution: put secrets in the Sandbox's env instead,
	// which every Execution inherits.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []ExecutionEnvVar `json:"env,omitempty"`

	// workingDir is the absolute directory the command starts in; the Sandbox's own when unset.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="workingDir must be an absolute path"
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`

	// timeoutSeconds is how long the command may run, counted from its start. When it passes, the agent kills
	// the Sandbox's container from the host (nothing inside the container can stop that), the Execution fails
	// with reason DeadlineExceeded and the Sandbox is marked TopologyPoisoned. Between 1 and 86400.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// maxOutputBytes is how many bytes of each of stdout and stderr are kept in status; the rest is read,
	// counted and dropped, and the Execution fails with reason OutputLimitExceeded. The node's agent may
	// lower it (its --max-exec-output-bytes). Between 1 and 262144.
	// +kubebuilder:default=65536
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=262144
	// +optional
	MaxOutputBytes int32 `json:"maxOutputBytes,omitempty"`

	// ttlSecondsAfterFinished deletes the Execution this many seconds after it finished. At most 7 days.
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=604800
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ExecutionEnvVar is one environment variable of an Execution, with a literal value.
type ExecutionEnvVar struct {
	// name of the variable: a C identifier (letters, digits and '_', not starting with a digit).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_]*$')",message="env name must be a C identifier: letters, digits and '_', not starting with a digit"
	// +required
	Name string `json:"name"`

	// value of the variable.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Value string `json:"value,omitempty"`
}

// ExecutionPhase summarises an Execution's conditions for people.
// +kubebuilder:validation:Enum=Queued;Running;Succeeded;Failed
type ExecutionPhase string

// Execution phases.
const (
	ExecutionQueued    ExecutionPhase = "Queued"    // waiting for the Sandbox, or for the Executions before it
	ExecutionRunning   ExecutionPhase = "Running"   // the command runs
	ExecutionSucceeded ExecutionPhase = "Succeeded" // the command exited 0 with all its output kept
	ExecutionFailed    ExecutionPhase = "Failed"    // anything else; status.reason says what
)

// ExecutionStatus is how the command ran. It defaults to {observedGeneration: 0} so that kstatus reads a new
// Execution as InProgress until an agent has seen it.
type ExecutionStatus struct {
	// observedGeneration is the metadata.generation last acted on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// exec is the Docker exec the command runs in, recorded before it starts, so that an agent that starts
	// after the one that ran it finds the command again and reports its outcome.
	// +optional
	Exec *ExecutionExec `json:"exec,omitempty"`

	// phase is a one-word summary for people: Queued, Running, Succeeded or Failed.
	// +optional
	Phase ExecutionPhase `json:"phase,omitempty"`

	// conditions: Ready (succeeded), Reconciling (queued or running), Stalled (failed).
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// reason is how the Execution ended or why it waits, in one word: Completed, Error, DeadlineExceeded,
	// OutputLimitExceeded, Canceled, SandboxNotReady, SandboxNotFound, Lost (see the Reason* constants).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// message says the same for people.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`

	// exitCode of the command, when it exited on its own.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// stdout is the first maxOutputBytes of the command's standard output (bytes that are not UTF-8 are
	// replaced).
	// +kubebuilder:validation:MaxLength=262144
	// +optional
	Stdout string `json:"stdout,omitempty"`

	// stdoutTruncatedBytes is how many bytes of standard output came after stdout and were cut.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StdoutTruncatedBytes int64 `json:"stdoutTruncatedBytes,omitempty"`

	// stderr is the first maxOutputBytes of the command's standard error.
	// +kubebuilder:validation:MaxLength=262144
	// +optional
	Stderr string `json:"stderr,omitempty"`

	// stderrTruncatedBytes is how many bytes of standard error came after stderr and were cut.
	// +kubebuilder:validation:Minimum=0
	// +optional
	StderrTruncatedBytes int64 `json:"stderrTruncatedBytes,omitempty"`

	// sandboxKilled says that the agent killed the Sandbox's container for this Execution: at its deadline,
	// on its cancel, for processes its command left running, or because its outcome was lost. The Sandbox is
	// then TopologyPoisoned with the same reason; its workspace is kept.
	// +optional
	SandboxKilled bool `json:"sandboxKilled,omitempty"`

	// nodeName is the node whose agent took the Execution.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// topologyGeneration is the Sandbox topology generation the command ran in.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TopologyGeneration int64 `json:"topologyGeneration,omitempty"`

	// queueTime is when the agent first saw the Execution; it orders Executions created within the same
	// second.
	// +optional
	QueueTime *metav1.MicroTime `json:"queueTime,omitempty"`

	// startTime is when the command started.
	// +optional
	StartTime *metav1.MicroTime `json:"startTime,omitempty"`

	// finishTime is when the Execution ended.
	// +optional
	FinishTime *metav1.MicroTime `json:"finishTime,omitempty"`
}

// Execution runs one command in a session Sandbox through the API server: RBAC decides who may run code
// where, the audit log records it, and the agent needs no inbound port. The deadline and the output cap are
// enforced by the agent from the host. It is owned by its Sandbox and deleted ttlSecondsAfterFinished after it
// ends.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=exec,categories=dockside
// +kubebuilder:selectablefield:JSONPath=".spec.sandboxName"
// +kubebuilder:printcolumn:name="Sandbox",type=string,JSONPath=".spec.sandboxName"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Exit",type=integer,JSONPath=".status.exitCode"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=".status.reason"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Command",type=string,JSONPath=".spec.command",priority=1
type Execution struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the command to run.
	// +required
	Spec ExecutionSpec `json:"spec"`

	// status is how it ran.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status ExecutionStatus `json:"status,omitempty"`
}

// ExecutionList is a list of Executions.
// +kubebuilder:object:root=true
type ExecutionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Execution `json:"items"`
}

func init() {
	register(&Execution{}, &ExecutionList{})
}

// ExecutionExec finds a running command again (docs/design/decisions/0028-commands-run-under-a-supervisor.md).
type ExecutionExec struct {
	// id is Docker's ID of the exec; empty for a command that ran attached to its agent (a primary made before
	// agents supervised commands), whose outcome dies with that agent.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ID string `json:"id,omitempty"`

	// processesBefore are the host PIDs of the container's processes before the command started: any other
	// left once it ended outlived it, and the container is killed.
	// +kubebuilder:validation:MaxItems=4096
	// +kubebuilder:validation:items:MaxLength=16
	// +listType=atomic
	// +optional
	ProcessesBefore []string `json:"processesBefore,omitempty"`
}
