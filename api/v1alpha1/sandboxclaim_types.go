package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// SandboxClaimSpec names a pool and what the claim sets on the Sandbox it gets. It is fixed at creation:
// change the claimed Sandbox itself afterwards (pause it, delete it).
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a SandboxClaim cannot change after creation: change the claimed Sandbox (status.sandboxName) instead, or make a new claim"
type SandboxClaimSpec struct {
	// poolRef names the SandboxWarmPool, in the same namespace, to take a warm Sandbox from. When it has none
	// ready, the claim gets a Sandbox of the pool's template started for it (a cold start), named after the
	// claim.
	// +required
	PoolRef LocalObjectReference `json:"poolRef"`

	// env is given to every command run in the claimed Sandbox (Executions, exec): it becomes the Sandbox's
	// spec.commandEnv, so a warm Sandbox takes it without a restart. Literal values only, readable by anyone
	// who can read the claim; secrets belong in secretFiles. The template must allow Env.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []ExecutionEnvVar `json:"env,omitempty"`

	// secretFiles are added to the template's secretFiles (same rules). Files are written before the primary
	// starts, so a claim with secretFiles always gets a cold start. The template must allow SecretFiles.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g.path == f.path))",message="secretFiles paths must be unique"
	// +listType=atomic
	// +optional
	SecretFiles []SecretFile `json:"secretFiles,omitempty"`

	// labels are put on the claimed Sandbox, beside those Dockside sets. Keys under dockside.dev/ are
	// Dockside's own and refused; keys and values follow Kubernetes' label rules, which the claim reports
	// (Stalled, InvalidLabels) when the Sandbox refuses them. The template must allow Labels.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('dockside.dev/'))",message="labels under dockside.dev/ are Dockside's own: a claim cannot set them"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// activeDeadlineSeconds is how long the claimed Sandbox may run, counted from the claim (not from the warm
	// start). At most 7 days. Unset: the template's, counted from the claim. The template must allow
	// ActiveDeadlineSeconds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// lifecycle is the claimed Sandbox's desired state, Running or Paused; unset: the template's. The template
	// must allow Lifecycle.
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
}

// ClaimStart says how a claim got its Sandbox.
// +kubebuilder:validation:Enum=Warm;Cold
type ClaimStart string

// How a claim got its Sandbox.
const (
	ClaimWarm ClaimStart = "Warm" // a warm Sandbox of the pool, already running
	ClaimCold ClaimStart = "Cold" // started for the claim: the pool had none ready, or the claim sets secretFiles
)

// SandboxClaimStatus says which Sandbox the claim got. It defaults to {observedGeneration: 0} so that kstatus
// reads a new claim as InProgress until an agent has seen it.
type SandboxClaimStatus struct {
	// observedGeneration is the metadata.generation last acted on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (the Sandbox is claimed and Ready), Reconciling, Stalled.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// sandboxName is the claimed Sandbox, in the claim's namespace: run commands there. It is deleted with the
	// claim.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	SandboxName string `json:"sandboxName,omitempty"`

	// start is how the Sandbox was got: Warm (from the pool) or Cold (started for the claim).
	// +optional
	Start ClaimStart `json:"start,omitempty"`
}

// SandboxClaim takes a warm Sandbox from a SandboxWarmPool, or has one started when the pool has none, and
// owns it: deleting the claim deletes the Sandbox.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sbxclaim,categories=dockside
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=".spec.poolRef.name"
// +kubebuilder:printcolumn:name="Sandbox",type=string,JSONPath=".status.sandboxName"
// +kubebuilder:printcolumn:name="Start",type=string,JSONPath=".status.start"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="SandboxClaim name must be a DNS label: at most 63 lowercase letters, digits and '-' (a cold start names its Sandbox after the claim)"
type SandboxClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the claim.
	// +required
	Spec SandboxClaimSpec `json:"spec"`

	// status is what the agents observed.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status SandboxClaimStatus `json:"status,omitempty"`
}

// SandboxClaimList is a list of SandboxClaims.
// +kubebuilder:object:root=true
type SandboxClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxClaim `json:"items"`
}

func init() {
	register(&SandboxClaim{}, &SandboxClaimList{})
}
