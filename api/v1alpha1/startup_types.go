package v1alpha1

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultStartupDeadlineSeconds bounds the start of a topology when spec.startupDeadlineSeconds is left out
// (mirrors the default marker on that field).
const DefaultStartupDeadlineSeconds = 120

// StartupDeadline is how long each start of the Sandbox's topology may take (spec.startupDeadlineSeconds).
func StartupDeadline(sbx *Sandbox) time.Duration {
	secs := sbx.Spec.StartupDeadlineSeconds
	if secs <= 0 {
		secs = DefaultStartupDeadlineSeconds
	}
	return time.Duration(secs) * time.Second
}

// PullPolicy says when the agent pulls a container's image from its registry.
// +kubebuilder:validation:Enum=IfNotPresent;Always;Never
type PullPolicy string

// Pull policies.
const (
	// PullIfNotPresent pulls only an image the node does not hold yet.
	PullIfNotPresent PullPolicy = "IfNotPresent"
	// PullAlways pulls before each topology start, so that a tag that moved is followed; what the node
	// holds already is not downloaded again.
	PullAlways PullPolicy = "Always"
	// PullNever uses only what the node holds; a missing image fails at once with ImageNotPresent.
	PullNever PullPolicy = "Never"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="name must be a DNS subdomain: lowercase letters, digits, '-' and '.'"
	// +required
	Name string `json:"name"`
}

// ScratchMount is a memory-backed (tmpfs) directory of one container with a size limit. It starts empty
// with each container, so a topology roll empties it; files that must last belong in the workspace.
type ScratchMount struct {
	// mountPath is where the directory appears: a clean absolute path other than / (no '.' or '..'
	// segments, no '//', no trailing '/'), not under /proc, /sys or /dev. Only the clean form is admitted, so
	// that the path checked here is the path Docker mounts.
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(/[^/]+)+$') && !(self + '/').contains('/./') && !(self + '/').contains('/../')",message="scratch mountPath must be a clean absolute path other than / and must not contain '.' or '..' segments, '//' or a trailing '/'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^/(proc|sys|dev)(/|$)')",message="scratch mountPath must not be under /proc, /sys or /dev"
	// +required
	MountPath string `json:"mountPath"`

	// size limit of the directory, between 1Mi and 8Gi. It is memory, counted against the node's.
	// +kubebuilder:validation:XValidation:rule="[quantity(string(self))].all(q, q.compareTo(quantity('1Mi')) >= 0 && q.compareTo(quantity('8Gi')) <= 0)",message="scratch size must be between 1Mi and 8Gi"
	// +required
	Size resource.Quantity `json:"size"`
}

// StartupStatus records the start of the current topology generation, which spec.startupDeadlineSeconds
// bounds. It is kept once the primary has started, as a record of when the start began.
type StartupStatus struct {
	// topologyGeneration is the topology generation this start is of.
	// +kubebuilder:validation:Minimum=0
	// +required
	TopologyGeneration int64 `json:"topologyGeneration"`

	// startTime is when the agent began starting it; the startup deadline counts from here.
	// +required
	StartTime metav1.MicroTime `json:"startTime"`
}
