package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaxUsedBy bounds status.usedBy; status.usedByCount always holds the full count (mirrors the MaxItems marker).
const MaxUsedBy = 32

// SandboxServiceSpec declares a helper container (database, queue, browser). Every Sandbox that names the
// SandboxService gets its own instance on its own topology, reachable there by the SandboxService's name and
// its aliases. Nothing is ever published on the host. A change reaches a Sandbox when its topology is next
// rolled; until then the Sandbox reports ServicesUpToDate=False.
// +kubebuilder:validation:XValidation:rule="(has(self.command) ? self.command.map(c, size(c)).sum() : 0) + (has(self.args) ? self.args.map(a, size(a)).sum() : 0) <= 131072",message="command and args may hold at most 131072 bytes (128 KiB) together: put a longer script in a file of the image and run that"
// +kubebuilder:validation:XValidation:rule="!has(self.env) || self.env.map(e, size(e.name) + (has(e.value) ? size(e.value) : 0)).sum() <= 131072",message="env may hold at most 131072 bytes (128 KiB) of names and values: put larger values in a file of the image"
type SandboxServiceSpec struct {
	// image of the service container, as a reference like registry.example/name:tag or name@sha256:<digest>.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-zA-Z0-9][a-zA-Z0-9.-]*(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$')",message="image must be a reference like registry.example/name:tag or name@sha256:<64 hex digits>, with a lowercase name"
	// +required
	Image string `json:"image"`

	// imagePullPolicy says when the agent pulls image: IfNotPresent (the default), Always or Never, as on a
	// Sandbox.
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`

	// imagePullSecret names a Secret of type kubernetes.io/dockerconfigjson in the same namespace whose
	// credentials for the image's registry are used to pull it.
	// +optional
	ImagePullSecret *LocalObjectReference `json:"imagePullSecret,omitempty"`

	// scratch are memory-backed directories of the service container, each with a size limit, empty at each
	// start. They cover the VOLUMEs an image declares (a database's data directory, say), which are refused
	// otherwise. At most 8.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=mountPath
	// +optional
	Scratch []ScratchMount `json:"scratch,omitempty"`

	// command replaces the image's entrypoint.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=16384
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// args are passed to command, or to the image's entrypoint when command is unset.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=16384
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// env sets environment variables in the service container, each a value or a Secret key.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// ports the service listens on, for documentation only: they are reachable from the Sandbox's own
	// containers anyway and are never published on the host.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=port
	// +listMapKey=protocol
	// +optional
	Ports []ServicePort `json:"ports,omitempty"`

	// aliases are extra DNS names of the service inside each topology. The SandboxService's own name always
	// resolves too, so it must not be listed. Every name of a topology must be unique (the Sandbox's own,
	// each service's name and aliases): a Sandbox whose services claim one name twice fails with reason
	// NameCollision.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(a, a.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="each alias must be a DNS label: lowercase letters, digits and '-'"
	// +listType=set
	// +optional
	Aliases []string `json:"aliases,omitempty"`

	// readiness tells when the service is ready, so that the next service or the primary may start. Without
	// it the service is ready as soon as its container runs.
	// +optional
	Readiness *Readiness `json:"readiness,omitempty"`

	// runAsRoot runs the service container as root (uid 0), whatever its image's USER, as a Sandbox's
	// runAsRoot does for its primary: only on nodes whose agent runs with --allow-root (a Sandbox naming the
	// service fails with reason RootNotAllowed elsewhere), and still without capabilities.
	// +optional
	RunAsRoot bool `json:"runAsRoot,omitempty"`

	// runtime is the OCI runtime of the service container: runc or gVisor. Unset: the node's default, runc
	// unless its agent runs with --default-runtime=gVisor. A Sandbox naming a service with a runtime is bound
	// only to a node whose Docker offers it.
	// +optional
	Runtime Runtime `json:"runtime,omitempty"`

	// resources limit the service container. Every limit has a default, so a read-back always shows them.
	// +kubebuilder:default={}
	// +optional
	Resources Resources `json:"resources,omitzero"`
}

// ServicePort documents one port a service listens on.
type ServicePort struct {
	// name of the port, for people (for example redis or http).
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="port name must be lowercase letters, digits and '-'"
	// +optional
	Name string `json:"name,omitempty"`

	// port number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port"`

	// protocol is TCP or UDP.
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP
	// +optional
	Protocol string `json:"protocol,omitempty"`
}

// Readiness is an exec check run inside the service container.
// +kubebuilder:validation:XValidation:rule="self.timeoutSeconds <= self.periodSeconds",message="readiness timeoutSeconds must not exceed periodSeconds"
type Readiness struct {
	// command run inside the container; exit code 0 means ready.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=4096
	// +listType=atomic
	// +required
	Command []string `json:"command"`

	// initialDelaySeconds to wait after the container starts before the first check.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	// +optional
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`

	// periodSeconds between checks.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`

	// timeoutSeconds after which one check counts as failed.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +optional
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// failureThreshold is how many checks in a row may fail before the service counts as failed: while
	// starting, it is given periodSeconds × failureThreshold to become ready; once ready, it poisons the topology.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// SandboxServiceStatus says which Sandboxes use the SandboxService. It defaults to {observedGeneration: 0} so
// that kstatus reads a new object as InProgress until the agent has seen it.
type SandboxServiceStatus struct {
	// observedGeneration is the metadata.generation last acted on.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, InUse (see the Condition* constants).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// usedBy names Sandboxes in the namespace that use this SandboxService, at most 32, sorted.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	UsedBy []string `json:"usedBy,omitempty"`

	// usedByCount is how many Sandboxes use this SandboxService, including those past the usedBy bound. While
	// it is above zero the SandboxService cannot be deleted (deletion waits).
	// +kubebuilder:validation:Minimum=0
	// +optional
	UsedByCount int32 `json:"usedByCount,omitempty"`
}

// SandboxService is a reusable declaration of a helper container that each Sandbox naming it gets its own
// instance of. It cannot be deleted while a Sandbox still uses it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sbxsvc,categories=dockside
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=".spec.image"
// +kubebuilder:printcolumn:name="Used By",type=integer,JSONPath=".status.usedByCount"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="SandboxService name must be a DNS label: at most 63 lowercase letters, digits and '-'"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.aliases) || !(self.metadata.name in self.spec.aliases)",message="aliases must not repeat the SandboxService's own name, which always resolves"
type SandboxService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the declared service.
	// +required
	Spec SandboxServiceSpec `json:"spec"`

	// status is what the agent observed.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status SandboxServiceStatus `json:"status,omitempty"`
}

// SandboxServiceList is a list of SandboxServices.
// +kubebuilder:object:root=true
type SandboxServiceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxService `json:"items"`
}

func init() {
	register(&SandboxService{}, &SandboxServiceList{})
}
