package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// RootFilesystem says whether the primary container may write to its root file system.
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'Writable' || has(self.size)",message="rootFilesystem.size is required with mode Writable: the writable layer is capped on the node's disk"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || (has(self.mode) && self.mode == 'Writable')",message="rootFilesystem.size applies only to mode Writable"
type RootFilesystem struct {
	// mode is ReadOnly (the default) or Writable. ReadOnly: nothing can be written outside the workspace,
	// the scratch mounts and /tmp, each capped and counted against memory. Writable: the root file system
	// can be written up to size, on the node's disk; only a node whose Docker storage driver can cap a
	// container's writable layer (overlay2 over xfs with pquota, btrfs, zfs, devicemapper) runs it, and
	// elsewhere the Sandbox fails with reason WritableRootUnsupported.
	// +kubebuilder:default=ReadOnly
	// +optional
	Mode RootFilesystemMode `json:"mode,omitempty"`

	// size caps what the primary container may write to its root file system with mode Writable, between
	// 1Mi and 64Gi.
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('64Gi')) <= 0",message="rootFilesystem size must be between 1Mi and 64Gi"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
}

// RootFilesystemMode says whether a root file system can be written.
// +kubebuilder:validation:Enum=ReadOnly;Writable
type RootFilesystemMode string

// Root file system modes.
const (
	RootFilesystemReadOnly RootFilesystemMode = "ReadOnly"
	RootFilesystemWritable RootFilesystemMode = "Writable"
)
