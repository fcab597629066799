package v1alpha1

// Runtime is the OCI runtime Docker runs a container with: runc, sharing the host's kernel behind seccomp,
// capabilities and cgroups, or gVisor (runsc), a kernel of its own in user space between the container and
// the host's (docs/security.md, "Who must run under gVisor").
// +kubebuilder:validation:Enum=runc;gVisor
type Runtime string

// Runtimes.
const (
	RuntimeRunc   Runtime = "runc"
	RuntimeGVisor Runtime = "gVisor"
)

// Runtimes are every runtime a spec may name, in the order people read them.
var Runtimes = []Runtime{RuntimeRunc, RuntimeGVisor}
