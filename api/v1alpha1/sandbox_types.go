package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxServices is the most SandboxServices one Sandbox may name (mirrors the MaxItems marker on services).
const MaxServices = 8

// MaxOutputTailBytes bounds status.result.outputTail; the agent keeps the last bytes and counts the rest in
// status.result.truncatedBytes (mirrors the MaxLength marker on outputTail).
const MaxOutputTailBytes = 8192

// SandboxSpec is what the user wants: one primary container, its services and the limits around them.
// Changing image, command, args, env, secretFiles, workingDir, resources, scratch, rootFilesystem, runAsRoot,
// network or services rolls the topology to a new generation that keeps the workspace; changing lifecycle pauses or resumes; workspace and restoreFrom
// are fixed at creation and nodeName once set. imagePullPolicy and imagePullSecret apply from the next start
// on, startupDeadlineSeconds at once to a start going on; a start that failed is made again only by a change
// that rolls the topology.
// +kubebuilder:validation:XValidation:rule="!has(self.args) || has(self.command)",message="args needs a command: a Sandbox with a command is a run, one without is a session that keeps the image's own entrypoint"
// +kubebuilder:validation:XValidation:rule="!has(self.ttlSecondsAfterFinished) || has(self.command)",message="ttlSecondsAfterFinished applies only to runs, that is Sandboxes with a command"
// +kubebuilder:validation:XValidation:rule="!has(self.idlePauseSeconds) || !has(self.command)",message="idlePauseSeconds applies only to sessions, that is Sandboxes without a command: a run ends by itself"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || self.start != 'Lazy' || !has(self.command)",message="start: Lazy applies only to sessions, that is Sandboxes without a command: a run starts to run its command"
// +kubebuilder:validation:XValidation:rule="has(self.restoreFrom) == has(oldSelf.restoreFrom) && (!has(self.restoreFrom) || self.restoreFrom == oldSelf.restoreFrom)",message="restoreFrom is set when the Sandbox is created and cannot be added, changed or removed later"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.nodeName) || (has(self.nodeName) && self.nodeName == oldSelf.nodeName)",message="nodeName cannot be changed or removed once set; delete the Sandbox and create it again to move it"
// +kubebuilder:validation:XValidation:rule="!has(self.scratch) || !has(self.workspace) || !has(self.workspace.mountPath) || self.scratch.all(m, m.mountPath != self.workspace.mountPath)",message="a scratch mountPath must differ from the workspace mountPath"
// +kubebuilder:validation:XValidation:rule="!has(self.secretFiles) || size(self.secretFiles) == 0 || ((!has(self.workspace) || !has(self.workspace.mountPath) || !(self.workspace.mountPath + '/').startsWith('/run/secrets/dockside/')) && (!has(self.scratch) || self.scratch.all(m, !(m.mountPath + '/').startsWith('/run/secrets/dockside/'))))",message="secretFiles are mounted at /run/secrets/dockside: the workspace and scratch mountPaths must not be that directory or under it"
// +kubebuilder:validation:XValidation:rule="(has(self.command) ? self.command.map(c, size(c)).sum() : 0) + (has(self.args) ? self.args.map(a, size(a)).sum() : 0) <= 131072",message="command and args may hold at most 131072 bytes (128 KiB) together: put a longer script in a file of the image or the workspace and run that"
// +kubebuilder:validation:XValidation:rule="(has(self.env) ? self.env.map(e, size(e.name) + (has(e.value) ? size(e.value) : 0)).sum() : 0) + (has(self.commandEnv) ? self.commandEnv.map(e, size(e.name) + (has(e.value) ? size(e.value) : 0)).sum() : 0) <= 131072",message="env and commandEnv may hold at most 131072 bytes (128 KiB) of names and values together: put larger values in a Secret and mount it with secretFiles"
type SandboxSpec struct {
	// image of the primary container, as a reference like registry.example/team/tool:1.2 or
	// name@sha256:<digest>. Pinning a digest is recommended (a pinned image is checked against its digest
	// after a pull); the agent may be told to require it (reason ImageNotPinned). An image that declares a
	// VOLUME runs only when the workspace or a scratch mount covers each one (reason ImageDeclaresVolumes).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-zA-Z0-9][a-zA-Z0-9.-]*(:[0-9]+)?/)?[a-z0-9]+([._-]+[a-z0-9]+)*(/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$')",message="image must be a reference like registry.example/name:tag or name@sha256:<64 hex digits>, with a lowercase name"
	// +required
	Image string `json:"image"`

	// imagePullPolicy says when the agent pulls image: IfNotPresent (the default) only when the node does
	// not hold it, Always before each topology start (following a tag that moved), Never not at all (a
	// missing image fails at once with ImageNotPresent). Pulls run in the background, one per image however
	// many Sandboxes wait for it, and count against startupDeadlineSeconds.
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`

	// imagePullSecret names a Secret of type kubernetes.io/dockerconfigjson in the same namespace; its
	// credentials for the image's registry are used to pull it. Without it, or without an entry for that
	// registry, pulls are anonymous.
	// +optional
	ImagePullSecret *LocalObjectReference `json:"imagePullSecret,omitempty"`

	// command replaces the image's entrypoint. A Sandbox with a command is a run: it ends Succeeded or Failed
	// with an exit code and an output tail in status. Without a command it is a session that stays up until
	// it is deleted.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=16384
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// args are passed to command.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=16384
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// env sets environment variables in the primary container, each a value or a Secret key.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// commandEnv adds environment variables to every command run in the session (Executions and exec through
	// the data plane), on top of the container's env; an Execution's own env wins over it. The primary's own
	// process does not see them, since a running container's env cannot change: that is why changing
	// commandEnv does not roll the topology. A SandboxClaim sets it to the claim's env (docs/pools.md). Values
	// are literal and readable by anyone who can read the Sandbox.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	CommandEnv []ExecutionEnvVar `json:"commandEnv,omitempty"`

	// workingDir is the absolute directory the command starts in; the image's own when unset.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="workingDir must be an absolute path"
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`

	// resources limit the primary container. Every limit has a default, so a read-back always shows them.
	// +kubebuilder:default={}
	// +optional
	Resources Resources `json:"resources,omitzero"`

	// workspace is the writable scratch volume mounted into the primary container. It is held in memory
	// (tmpfs, counted against the node's memory), survives topology rolls and pauses, and is what a
	// Checkpoint captures.
	// +kubebuilder:default={}
	// +optional
	Workspace Workspace `json:"workspace,omitzero"`

	// scratch are memory-backed directories of the primary container, each with a size limit, empty at each
	// start (files that must last belong in the workspace). They cover the VOLUMEs an image declares, which
	// are refused otherwise. At most 8.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=mountPath
	// +optional
	Scratch []ScratchMount `json:"scratch,omitempty"`

	// secretFiles puts Secret keys into files under /run/secrets/dockside in the primary container: a
	// memory-backed mount, read-only there, whose files (mode 0400, owned by the container's user) are
	// written before the primary starts. Unlike env, their values are not in the container's configuration
	// (docker inspect), not in the environment Executions inherit, and gone from the node's memory once the
	// primary stops. The Secrets are read at each start of the topology: a changed value reaches the files at
	// the next roll. Services get none. At most 16, whose values take at most 1 MiB together.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g.path == f.path))",message="secretFiles paths must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.all(g, !g.path.startsWith(f.path + '/')))",message="a secretFiles path cannot be both a file and the directory of another path (like token and token/x)"
	// +listType=atomic
	// +optional
	SecretFiles []SecretFile `json:"secretFiles,omitempty"`

	// rootFilesystem says whether the primary container may write to its root file system: ReadOnly (the
	// default), or Writable up to a size on nodes that can cap it (reason WritableRootUnsupported elsewhere).
	// +kubebuilder:default={}
	// +optional
	RootFilesystem RootFilesystem `json:"rootFilesystem,omitzero"`

	// runAsRoot runs the primary container as root (uid 0), whatever its image's USER; root there still has
	// no capabilities. Without it the container never runs as uid 0: an image whose USER is root, unset or a
	// name runs as 65532:65532, one with a numeric non-root USER keeps it. Only nodes whose agent runs with
	// --allow-root run it; elsewhere the Sandbox fails with reason RootNotAllowed.
	// +optional
	RunAsRoot bool `json:"runAsRoot,omitempty"`

	// runtime is the OCI runtime of the primary container: runc or gVisor. Unset: the node's default, runc
	// unless its agent runs with --default-runtime=gVisor. A Sandbox naming a runtime is bound only to a node
	// whose Docker offers it, and waits (reason RuntimeUnavailable) while none does; a namespace may require
	// gVisor (label dockside.dev/require-runtime, docs/security.md).
	// +optional
	Runtime Runtime `json:"runtime,omitempty"`

	// network says what the Sandbox may reach. The default, None, reaches nothing outside its own topology.
	// +kubebuilder:default={}
	// +optional
	Network Network `json:"network,omitzero"`

	// services names, in start order, the SandboxServices in the same namespace that this Sandbox gets its
	// own instance of. Each is started and ready before the next one starts; the primary starts last.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(s, s.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="each service must be the name of a SandboxService: a DNS label of lowercase letters, digits and '-'"
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(t, t == s))",message="services must not name the same SandboxService twice"
	// +listType=atomic
	// +optional
	Services []string `json:"services,omitempty"`

	// lifecycle is the desired state: Running, or Paused to freeze every container of the Sandbox in place
	// (memory, processes and files are kept) until it is set back to Running.
	// +kubebuilder:default=Running
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`

	// start says when the topology is built: Immediate (the default, also when unset) as soon as the
	// Sandbox is bound, or Lazy at its first command (an Execution, or an exec, files, processes or
	// port-forward call through the data plane). A lazy Sandbox is Ready before that, with reason Lazy and
	// no container: it counts in its node's room, can be claimed and called, and the first call waits for
	// the start (within startupDeadlineSeconds) and is then served (docs/design/lazy-start.md). Once built,
	// the topology is a session's like any other; changing start then changes nothing, while Immediate
	// given to a lazy Sandbox not yet started starts it. Sessions only; a SandboxWarmPool refuses a
	// template that sets it.
	// +optional
	Start StartPolicy `json:"start,omitempty"`

	// idlePauseSeconds freezes a session that ran no command (no Execution, and no exec, files, processes or
	// port-forward call through the data plane) for this many seconds: its status says Paused with reason
	// Idle, and the next such call thaws it by itself before it is served (docs/design/idle-pause.md). A
	// command or call still going on keeps the Sandbox awake. Sessions only; between 5 s and 7 days. Changing
	// it takes effect at once and does not roll the topology.
	// +kubebuilder:validation:XValidation:rule="self >= 5 && self <= 604800",message="idlePauseSeconds must be between 5 and 604800 (7 days): it is how long a session may run no command before its agent freezes it"
	// +optional
	IdlePauseSeconds *int32 `json:"idlePauseSeconds,omitempty"`

	// activeDeadlineSeconds is how long the Sandbox may run, counted from its start, before the agent stops
	// it (a run then fails with reason DeadlineExceeded). At most 7 days.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=604800
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// startupDeadlineSeconds bounds each start of the topology: pulling images, making the workspace and
	// network, restoring, starting the services and passing their readiness, and starting the primary. When
	// it passes first, the Sandbox fails with a reason naming the phase that was slow (ImagePullTimeout,
	// NetworkTimeout, ServiceNotReady, StartTimeout, ...) and what the start built is removed; the workspace
	// is kept. Between 1 and 3600.
	// +kubebuilder:default=120
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	StartupDeadlineSeconds int32 `json:"startupDeadlineSeconds,omitempty"`

	// ttlSecondsAfterFinished deletes a finished run this many seconds after it ended. Runs only.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2592000
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// restoreFrom names a Checkpoint in the same namespace whose files are copied into the workspace before
	// the primary container starts. Set at creation only.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="restoreFrom must be the name of a Checkpoint: a DNS label of lowercase letters, digits and '-'"
	// +optional
	RestoreFrom string `json:"restoreFrom,omitempty"`

	// nodeName is the agent (Docker host) that runs this Sandbox. Leave it unset and an agent with room binds
	// the Sandbox to itself; once set it cannot change.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="nodeName must be a DNS subdomain: lowercase letters, digits, '-' and '.'"
	// +optional
	NodeName string `json:"nodeName,omitempty"`
}

// Workspace is the size and place of a Sandbox's workspace volume. It is fixed at creation: the same volume
// is kept across topology rolls.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workspace cannot change after creation: the same workspace, with its size and mount path, is kept across topology rolls"
type Workspace struct {
	// size of the workspace, between 1Mi and 8Gi. It is memory-backed, so it counts against the node's memory.
	// +kubebuilder:default="512Mi"
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self)) && quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('8Gi')) <= 0",message="workspace size must be between 1Mi and 8Gi"
	// +optional
	Size resource.Quantity `json:"size,omitzero"`

	// mountPath is where the workspace appears in the primary container: a clean absolute path other than /
	// (no '.' or '..' segments, no '//', no trailing '/'), not under /proc, /sys or /dev. Only the clean form
	// is admitted, so that the path checked here is the path Docker mounts.
	// +kubebuilder:default="/workspace"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(/[^/]+)+$') && !(self + '/').contains('/./') && !(self + '/').contains('/../')",message="workspace mountPath must be a clean absolute path other than / and must not contain '.' or '..' segments, '//' or a trailing '/'"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^/(proc|sys|dev)(/|$)')",message="workspace mountPath must not be under /proc, /sys or /dev"
	// +optional
	MountPath string `json:"mountPath,omitempty"`
}

// Network is what a Sandbox's containers may reach (docs/egress.md). Host networking and sharing another
// container's network cannot be expressed.
// +kubebuilder:validation:XValidation:rule="!has(self.allow) || size(self.allow) == 0 || (has(self.mode) && self.mode == 'Isolated')",message="network.allow applies to mode Isolated only: None reaches nothing outside the Sandbox and Unrestricted reaches everything, so a list would mean nothing"
type Network struct {
	// mode is None (nothing beyond the Sandbox's own containers), Isolated (only public internet addresses, and
	// only through the agent's egress proxy: never the Docker host, another Sandbox, a private or link-local
	// address such as the cloud metadata service) or Unrestricted (any address the host can route to, except
	// the Docker host's own).
	// +kubebuilder:default=None
	// +optional
	Mode NetworkMode `json:"mode,omitempty"`

	// allow narrows an Isolated Sandbox's egress to these destinations: "host", "host:port", "*.suffix" or
	// "*.suffix:port" (host is a DNS name or an IPv4 address; "*.example.com" matches every name under
	// example.com but not example.com itself; no port means any port). Programs reach them through the
	// HTTP(S) proxy named in their HTTP_PROXY and HTTPS_PROXY variables; anything else is refused with an HTTP
	// 403. A name that resolves to a private, loopback or link-local address is refused even when listed,
	// unless the agent permits that range. Empty: every public address. It may change at any time and takes
	// effect at the next connection.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.all(e, e.matches('^([*][.])?[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[0-9]{1,5})?$'))",message="network.allow entries are host, host:port, *.suffix or *.suffix:port, in lowercase (for example pypi.org, github.com:443, *.githubusercontent.com)"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !e.split(':')[0].matches('(^|[.])[0-9]+$') || isIP(e.split(':')[0]))",message="network.allow: a host whose last label is all digits must be an IPv4 address (for example 203.0.113.7)"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !e.matches('^[^:]*:[0-9]{1,5}$') || (int(e.split(':')[1]) >= 1 && int(e.split(':')[1]) <= 65535))",message="network.allow: a port must be between 1 and 65535"
	// +listType=atomic
	// +optional
	Allow []string `json:"allow,omitempty"`
}

// NetworkMode is the network policy of a Sandbox.
// +kubebuilder:validation:Enum=None;Isolated;Unrestricted
type NetworkMode string

// Network modes.
const (
	NetworkNone         NetworkMode = "None"
	NetworkIsolated     NetworkMode = "Isolated"
	NetworkUnrestricted NetworkMode = "Unrestricted"
)

// Lifecycle is the desired state of a Sandbox.
// +kubebuilder:validation:Enum=Running;Paused
type Lifecycle string

// Lifecycle values.
const (
	LifecycleRunning Lifecycle = "Running"
	LifecyclePaused  Lifecycle = "Paused"
)

// StartPolicy says when a Sandbox's topology is built.
// +kubebuilder:validation:Enum=Immediate;Lazy
type StartPolicy string

// Start policies.
const (
	StartImmediate StartPolicy = "Immediate"
	StartLazy      StartPolicy = "Lazy"
)

// SandboxPhase summarises a Sandbox's conditions for people; programs should read the conditions.
// +kubebuilder:validation:Enum=Pending;Starting;Running;Paused;Succeeded;Failed;Terminating
type SandboxPhase string

// Sandbox phases.
const (
	SandboxPending     SandboxPhase = "Pending"     // accepted, not yet bound or not yet started
	SandboxStarting    SandboxPhase = "Starting"    // topology being built: network, services, primary
	SandboxRunning     SandboxPhase = "Running"     // primary running
	SandboxPaused      SandboxPhase = "Paused"      // frozen on request
	SandboxSucceeded   SandboxPhase = "Succeeded"   // a run that exited 0
	SandboxFailed      SandboxPhase = "Failed"      // a run that did not exit 0, or a topology that cannot run
	SandboxTerminating SandboxPhase = "Terminating" // being deleted; Docker cleanup in progress
)

// SandboxStatus is what the agent observed. It defaults to {observedGeneration: 0} so that kstatus (Flux,
// Argo CD, kubectl wait) reads a new Sandbox as InProgress until the agent has recorded its generation.
type SandboxStatus struct {
	// observedGeneration is the metadata.generation the agent last acted on completely.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// phase is a one-word summary of the conditions for people.
	// +optional
	Phase SandboxPhase `json:"phase,omitempty"`

	// conditions: Ready, Reconciling, Stalled, Scheduled, ServicesReady, ServicesUpToDate, TopologyPoisoned,
	// Paused, Restored, NodeLost (see the Condition* constants).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// nodeName is the node the topology runs on.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	NodeName string `json:"nodeName,omitempty"`

	// topologyGeneration counts topology rolls: it is the generation of the running containers and network.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TopologyGeneration int64 `json:"topologyGeneration,omitempty"`

	// topologyHash is a digest of what the running topology was built from (the spec fields that roll it and
	// the generations of its SandboxServices); when the spec no longer hashes to it, the topology is rolled.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TopologyHash string `json:"topologyHash,omitempty"`

	// containerID is the Docker id of the primary container.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ContainerID string `json:"containerID,omitempty"`

	// networkID is the Docker id of the topology's network, when it has one of its own.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	NetworkID string `json:"networkID,omitempty"`

	// services is the state of each service instance, in spec order.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Services []ServiceInstanceStatus `json:"services,omitempty"`

	// startup is when the start of the current topology generation began, which startupDeadlineSeconds
	// bounds.
	// +optional
	Startup *StartupStatus `json:"startup,omitempty"`

	// startTime is when the primary container started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// finishTime is when a run ended.
	// +optional
	FinishTime *metav1.Time `json:"finishTime,omitempty"`

	// result is how a run ended; unset for sessions and for runs still going.
	// +optional
	Result *RunResult `json:"result,omitempty"`
}

// ServiceInstanceStatus is the state of one Sandbox's own instance of a SandboxService.
type ServiceInstanceStatus struct {
	// name of the SandboxService.
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// state of the instance.
	// +optional
	State ServiceState `json:"state,omitempty"`

	// containerID is the Docker id of the instance's container.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ContainerID string `json:"containerID,omitempty"`

	// serviceGeneration is the SandboxService's metadata.generation the instance was built from; when it lags
	// the SandboxService, ServicesUpToDate turns False.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ServiceGeneration int64 `json:"serviceGeneration,omitempty"`

	// message says, for people, why the instance is not ready.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Message string `json:"message,omitempty"`
}

// ServiceState is the state of one service instance.
// +kubebuilder:validation:Enum=Pending;Starting;Ready;Failed;Stopped
type ServiceState string

// Service instance states.
const (
	ServicePending  ServiceState = "Pending"  // waiting for the services before it
	ServiceStarting ServiceState = "Starting" // container started, readiness not yet passed
	ServiceReady    ServiceState = "Ready"    // readiness passed (or none declared) and still running
	ServiceFailed   ServiceState = "Failed"   // exited, or failed readiness; poisons the topology
	ServiceStopped  ServiceState = "Stopped"  // stopped with its settled topology (poisoned, finished), not failed itself
)

// RunResult is how a run ended.
type RunResult struct {
	// exitCode of the primary container's command.
	// +optional
	ExitCode *int32 `json:"exitCode,omitempty"`

	// reason is one word: Completed, Error, DeadlineExceeded, OOMKilled, ... (see the Reason* constants).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Reason string `json:"reason,omitempty"`

	// outputTail is the last bytes of the command's combined stdout and stderr (at most 8192 bytes).
	// +kubebuilder:validation:MaxLength=8192
	// +optional
	OutputTail string `json:"outputTail,omitempty"`

	// truncatedBytes is how many bytes of output came before outputTail and were cut.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TruncatedBytes int64 `json:"truncatedBytes,omitempty"`
}

// Sandbox is one locked-down primary container plus its own instances of the SandboxServices it names, on a
// private topology, with a memory-backed workspace. With a command it is a run; without one it is a session.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=sbx,categories=dockside
// +kubebuilder:selectablefield:JSONPath=".spec.nodeName"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=".status.phase"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=".spec.nodeName"
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=".spec.image"
// +kubebuilder:printcolumn:name="Exit",type=integer,JSONPath=".status.result.exitCode",priority=1
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="Sandbox name must be a DNS label: at most 63 lowercase letters, digits and '-'"
type Sandbox struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired Sandbox.
	// +required
	Spec SandboxSpec `json:"spec"`

	// status is what the agent observed.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status SandboxStatus `json:"status,omitempty"`
}

// SandboxList is a list of Sandboxes.
// +kubebuilder:object:root=true
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sandbox `json:"items"`
}

func init() {
	register(&Sandbox{}, &SandboxList{})
}
