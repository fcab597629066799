package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ClaimOverride names one thing a SandboxClaim may set on the Sandbox it gets from a template.
// +kubebuilder:validation:Enum=Env;SecretFiles;Labels;ActiveDeadlineSeconds;Lifecycle
type ClaimOverride string

// What a claim may override. Anything else of a claimed Sandbox is the template's.
const (
	OverrideEnv                   ClaimOverride = "Env"                   // claim env reaches every command (spec.commandEnv)
	OverrideSecretFiles           ClaimOverride = "SecretFiles"           // extra secretFiles: always a cold start
	OverrideLabels                ClaimOverride = "Labels"                // labels put on the Sandbox
	OverrideActiveDeadlineSeconds ClaimOverride = "ActiveDeadlineSeconds" // counted from the claim
	OverrideLifecycle             ClaimOverride = "Lifecycle"             // Running or Paused
)

// SandboxTemplateSpec is a reusable Sandbox spec for warm pools and claims.
type SandboxTemplateSpec struct {
	// sandbox is the spec of every Sandbox made from the template. It must be a session (no command); the pool
	// or the claim decides where it runs (no nodeName). activeDeadlineSeconds counts from the claim, not from
	// the warm start.
	// +kubebuilder:validation:XValidation:rule="!has(self.command)",message="a template makes sessions, which warm pools keep started: remove command (a run would end before anyone claims it)"
	// +kubebuilder:validation:XValidation:rule="!has(self.nodeName)",message="a template names no node: the Sandboxes made from it are bound by the agents with room"
	// +kubebuilder:validation:XValidation:rule="!has(self.restoreFrom)",message="a template cannot restore from a Checkpoint: restoreFrom is a Sandbox's own, set at its creation"
	// +kubebuilder:validation:XValidation:rule="!has(self.commandEnv)",message="commandEnv is set by each claim (its env), not by the template: put shared variables in env"
	// +required
	Sandbox SandboxSpec `json:"sandbox"`

	// claimOverrides lists what a SandboxClaim of this template may set: Env (variables given to every
	// command run in the Sandbox), SecretFiles (added to the template's; such a claim always gets a cold
	// start), Labels, ActiveDeadlineSeconds and Lifecycle. A claim that sets anything else is refused by the
	// agent with reason OverrideNotAllowed. By default all but SecretFiles.
	// +kubebuilder:default={Env,Labels,ActiveDeadlineSeconds,Lifecycle}
	// +kubebuilder:validation:MaxItems=5
	// +listType=set
	// +optional
	ClaimOverrides []ClaimOverride `json:"claimOverrides,omitempty"`
}

// SandboxTemplate is a Sandbox spec that SandboxWarmPools keep started copies of and SandboxClaims take
// Sandboxes from. It has no status: its users report on it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=sbxtpl,categories=dockside
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=".spec.sandbox.image"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="SandboxTemplate name must be a DNS label: at most 63 lowercase letters, digits and '-'"
type SandboxTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the template.
	// +required
	Spec SandboxTemplateSpec `json:"spec"`
}

// SandboxTemplateList is a list of SandboxTemplates.
// +kubebuilder:object:root=true
type SandboxTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxTemplate `json:"items"`
}

func init() {
	register(&SandboxTemplate{}, &SandboxTemplateList{})
}
