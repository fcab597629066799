package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// EnvVar is one environment variable of a container: a literal value or a key of a Secret. Secret values are
// resolved by the agent at container creation and never copied into any Dockside object or log.
// +kubebuilder:validation:XValidation:rule="!(has(self.value) && has(self.valueFrom))",message="set either value or valueFrom, not both"
type EnvVar struct {
	// name of the variable: a C identifier (letters, digits and '_', not starting with a digit).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_]*$')",message="env name must be a C identifier: letters, digits and '_', not starting with a digit"
	// +required
	Name string `json:"name"`

	// value of the variable. Leave unset, with valueFrom unset too, for an empty variable.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Value string `json:"value,omitempty"`

	// valueFrom reads the value from a Secret in the object's namespace instead.
	// +optional
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource says where an environment variable's value comes from.
type EnvVarSource struct {
	// secretKeyRef names one key of a Secret in the object's namespace.
	// +required
	SecretKeyRef SecretKeySelector `json:"secretKeyRef"`
}

// SecretKeySelector names one key of a Secret in the same namespace.
type SecretKeySelector struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="secret name must be a DNS subdomain: lowercase letters, digits, '-' and '.'"
	// +required
	Name string `json:"name"`

	// key inside the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$')",message="secret key may hold only letters, digits, '-', '_' and '.'"
	// +required
	Key string `json:"key"`
}

// Resources are the limits of one container. They are always set on the container: a field left out takes
// its default, so no container ever runs unbounded. The quantities are omitzero, so a Go client that leaves
// one unset sends nothing and gets the default instead of sending 0.
type Resources struct {
	// cpu is the CPU limit in cores (for example 500m or 2), between 10m and 64.
	// +kubebuilder:default="1"
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('10m')) >= 0 && quantity(string(self)).compareTo(quantity('64')) <= 0",message="cpu must be between 10m and 64 cores"
	// +optional
	CPU resource.Quantity `json:"cpu,omitzero"`

	// memory is the memory limit (for example 256Mi or 2Gi), between 8Mi and 64Gi. Swap is not added on top.
	// +kubebuilder:default="512Mi"
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('8Mi')) >= 0 && quantity(string(self)).compareTo(quantity('64Gi')) <= 0",message="memory must be between 8Mi and 64Gi"
	// +optional
	Memory resource.Quantity `json:"memory,omitzero"`

	// pids is the most processes and threads the container may hold at once, between 16 and 65536.
	// +kubebuilder:default=256
	// +kubebuilder:validation:Minimum=16
	// +kubebuilder:validation:Maximum=65536
	// +optional
	Pids int64 `json:"pids,omitempty"`
}
