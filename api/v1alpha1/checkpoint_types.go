package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CheckpointSpec names what to capture. It cannot change: a Checkpoint is one capture, taken once.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a Checkpoint's spec cannot change after creation; create a new Checkpoint instead"
type CheckpointSpec struct {
	// sandboxName is the Sandbox in the same namespace whose workspace is captured. The Sandbox is frozen for
	// the copy and thawed right after.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="sandboxName must be the name of a Sandbox: a DNS label of lowercase letters, digits and '-'"
	// +required
	SandboxName string `json:"sandboxName"`

	// paths inside the workspace to capture, relative to its mount path; the whole workspace when unset.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(p, p.size() > 0 && !p.startsWith('/') && !('/' + p + '/').contains('/../'))",message="paths must be relative to the workspace and must not contain '..'"
	// +listType=set
	// +optional
	Paths []string `json:"paths,omitempty"`
}

// CheckpointPhase summarises a Checkpoint's conditions for people.
// +kubebuilder:validation:Enum=Pending;Capturing;Ready;Failed
type CheckpointPhase string

// Checkpoint phases.
const (
	CheckpointPending   CheckpointPhase = "Pending"   // waiting for the Sandbox or its agent
	CheckpointCapturing CheckpointPhase = "Capturing" // Sandbox frozen, workspace being copied out
	CheckpointReady     CheckpointPhase = "Ready"     // stored; usable by restoreFrom
	CheckpointFailed    CheckpointPhase = "Failed"    // will not be retried; delete and create a new one
)

// CheckpointStatus describes the stored capture. It defaults to {observedGeneration: 0} so that kstatus reads a
// new Checkpoint as InProgress until the agent has seen it.
type CheckpointStatus struct {
	// observedGeneration is the metadata.generation last acted on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is a one-word summary of the conditions for people.
	// +optional
	Phase CheckpointPhase `json:"phase,omitempty"`

	// conditions: Ready, Reconciling, Stalled (see the Condition* constants).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// nodeName is the node that took and stores the archive. A Sandbox restoring from it runs there, unless the
	// agents push archives to a checkpoint registry (docs/design/checkpoints.md, "Checkpoints in a registry").
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// sizeBytes is the size of the stored archive.
	// +kubebuilder:validation:Minimum=0
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// size is sizeBytes for people, in binary units and rounded (for example 812, 1.5Ki, 256Mi): what
	// kubectl get shows, since a printer column can only show a field as it is. sizeBytes is exact.
	// +kubebuilder:validation:MaxLength=16
	// +optional
	Size string `json:"size,omitempty"`

	// digest is the archive's content address, sha256:<64 hex digits>.
	// +kubebuilder:validation:MaxLength=71
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`

	// capturedAt is when the capture finished.
	// +optional
	CapturedAt *metav1.Time `json:"capturedAt,omitempty"`

	// captureDuration is how long the capture took, the Sandbox frozen included (for example 1.2s).
	// +optional
	CaptureDuration *metav1.Duration `json:"captureDuration,omitempty"`

	// frozenDuration is how long the Sandbox was frozen for the copy (for example 80ms): part of
	// captureDuration, and zero for a Sandbox that was paused already (it stays paused).
	// +optional
	FrozenDuration *metav1.Duration `json:"frozenDuration,omitempty"`
}

// Checkpoint is a one-shot capture of a Sandbox's workspace, stored content-addressed on the Sandbox's node.
// Deleting it deletes the stored archive. A Sandbox restores from it with spec.restoreFrom.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=ckpt,categories=dockside
// +kubebuilder:selectablefield:JSONPath=".spec.sandboxName"
// +kubebuilder:selectablefield:JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Sandbox",type=string,JSONPath=".spec.sandboxName"
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=".status.size"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Bytes",type=integer,JSONPath=".status.sizeBytes",priority=1
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="Checkpoint name must be a DNS label: at most 63 lowercase letters, digits and '-'"
type Checkpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names what to capture.
	// +required
	Spec CheckpointSpec `json:"spec"`

	// status describes the stored capture.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status CheckpointStatus `json:"status,omitempty"`
}

// CheckpointList is a list of Checkpoints.
// +kubebuilder:object:root=true
type CheckpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Checkpoint `json:"items"`
}

func init() {
	register(&Checkpoint{}, &CheckpointList{})
}
