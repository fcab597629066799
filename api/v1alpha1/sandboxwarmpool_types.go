package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaxPoolNameLength leaves room in a Sandbox name (a DNS label of 63) for "-" and the member's index.
const MaxPoolNameLength = 52

// PoolUpdateStrategy says what a SandboxWarmPool does with its warm Sandboxes when their template changes.
// +kubebuilder:validation:Enum=Rolling;OnReplenish
type PoolUpdateStrategy string

// Update strategies.
const (
	// PoolRolling starts Sandboxes of the new template and deletes the old warm ones as the new ones become
	// ready; claims take the old ones meanwhile.
	PoolRolling PoolUpdateStrategy = "Rolling"
	// PoolOnReplenish keeps the old warm Sandboxes until they are claimed; only refills use the new template.
	PoolOnReplenish PoolUpdateStrategy = "OnReplenish"
)

// PoolScope says over what replicas counts: the whole cluster, or each node.
// +kubebuilder:validation:Enum=Cluster;Node
type PoolScope string

// Scopes.
const (
	// PoolCluster keeps replicas warm Sandboxes across the cluster, bound wherever there is room.
	PoolCluster PoolScope = "Cluster"
	// PoolNode keeps replicas warm Sandboxes on each node whose agent runs, bound to it when made, so that a
	// claim handled by any node's agent finds one there.
	PoolNode PoolScope = "Node"
)

// SandboxWarmPoolSpec is how many Sandboxes of a template to keep started, ready to be claimed.
type SandboxWarmPoolSpec struct {
	// templateRef names the SandboxTemplate, in the same namespace, whose Sandboxes the pool keeps.
	// +required
	TemplateRef LocalObjectReference `json:"templateRef"`

	// replicas is how many warm (started, ready, unclaimed) Sandboxes the pool keeps: across the cluster, or
	// on each node with scope Node. Each counts in its node's room like any Sandbox; while a Sandbox waits for room, the pool starts no more and
	// gives up its warm Sandboxes, one per waiting Sandbox. Between 0 and 1000.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +required
	Replicas int32 `json:"replicas"`

	// scope is what replicas counts over: Cluster (the default), or Node (replicas on each node, made bound
	// to it by its own agent).
	// +kubebuilder:default=Cluster
	// +optional
	Scope PoolScope `json:"scope,omitempty"`

	// maxStarting is the refill rate: the most of the pool's Sandboxes being started at once. Between 1 and
	// 100.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxStarting int32 `json:"maxStarting,omitempty"`

	// updateStrategy is what happens to warm Sandboxes when the template changes: Rolling (the default)
	// replaces them, new ones first; OnReplenish leaves them to be claimed and uses the new template for
	// refills only.
	// +kubebuilder:default=Rolling
	// +optional
	UpdateStrategy PoolUpdateStrategy `json:"updateStrategy,omitempty"`
}

// SandboxWarmPoolStatus counts the pool's warm Sandboxes. It defaults to {observedGeneration: 0} so that
// kstatus reads a new pool as InProgress until an agent has seen it.
type SandboxWarmPoolStatus struct {
	// observedGeneration is the metadata.generation last acted on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready (as many available as asked), Reconciling, Stalled.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// replicas is how many unclaimed Sandboxes the pool has, started or starting, not being deleted, on
	// every node.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// readyReplicas is how many of them are Ready, of any template version.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// availableReplicas is how many are Ready and made from the template as it is now: what claims take first.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// templateHash is a digest of the template's Sandbox spec that the pool's new Sandboxes are made from.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TemplateHash string `json:"templateHash,omitempty"`
}

// SandboxWarmPool keeps Sandboxes of a SandboxTemplate started and ready, for SandboxClaims to take at once.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sbxpool,categories=dockside
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=".spec.templateRef.name"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=".spec.replicas"
// +kubebuilder:printcolumn:name="Scope",type=string,JSONPath=".spec.scope"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=".status.readyReplicas"
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=".status.availableReplicas"
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="SandboxWarmPool name must be a DNS label of at most 52 characters (lowercase letters, digits and '-'): its Sandboxes are named <pool>-<n>"
type SandboxWarmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the pool asked for.
	// +required
	Spec SandboxWarmPoolSpec `json:"spec"`

	// status is what the agents observed.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status SandboxWarmPoolStatus `json:"status,omitempty"`
}

// SandboxWarmPoolList is a list of SandboxWarmPools.
// +kubebuilder:object:root=true
type SandboxWarmPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxWarmPool `json:"items"`
}

func init() {
	register(&SandboxWarmPool{}, &SandboxWarmPoolList{})
}
