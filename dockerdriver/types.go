package dockerdriver

import (
	"time"
)

// ImageInfo is what InspectImage observes.
type ImageInfo struct {
	Exists      bool
	ID          string   // content-addressed image ID (sha256:...)
	RepoDigests []string // name@sha256:... pins, empty for a locally built image
	Volumes     []string // paths the image declares as VOLUME; EnsureContainer refuses uncovered ones
	User        string   // default user, "" meaning root
	Size        int64    // bytes it takes on the node's disk, unpacked (docker image inspect's Size)
	Labels      map[string]string
}

// ImageSummary is one image of the daemon as ListImages reports it.
type ImageSummary struct {
	ID    string
	Refs  []string // its names (name:tag); none for an image that lost them
	Size  int64    // bytes on disk, unpacked, its layers shared with other images included
	InUse bool     // a container of the daemon, of any node and in any state, was made from it
}

// NetworkSpec is a bridge network the driver ensures. Networks are always user-defined bridges labelled
// with Labels(node, Owner, RoleNetwork, "") plus the subnet label when Subnet is set.
type NetworkSpec struct {
	Name  string // see Name(owner, RoleNetwork, "") and NodeNetworkName
	Owner Owner  // zero for the node's shared bridge
	// Internal: no route out of the bridge; containers reach only each other.
	Internal bool
	// ICC: inter-container traffic on the bridge. Off, names still resolve but traffic is blocked.
	ICC bool
	// Subnet and Gateway (CIDR and address) as the caller allocated them; empty lets Docker choose.
	Subnet  string
	Gateway string
	// Bridge is the host interface name of the bridge (see BridgeName): the host firewall tells Dockside's
	// bridges, and which of them may reach the egress proxy, by its prefix. Empty lets Docker choose.
	Bridge string
}

// NetworkInfo is what ObserveNetwork and ListNetworks report.
type NetworkInfo struct {
	Exists   bool
	ID       string
	Name     string
	Internal bool
	ICC      bool
	Subnet   string
	Gateway  string
	Bridge   string // host interface name when Dockside chose it, else ""
	Labels   map[string]string
}

// VolumeSpec is a workspace volume: a Docker local volume of type tmpfs with a size limit. Its content lives
// only while a running container mounts it (hence the holder container: docs/design/docker-mapping.md,
// "Why the holder exists").
type VolumeSpec struct {
	Name      string // see Name(owner, RoleWorkspace, "")
	Owner     Owner
	Role      string // v1alpha1.RoleWorkspace
	SizeBytes int64  // required, > 0, but for a supervisor volume
	// Supervisor makes a supervisor volume instead of a tmpfs one: a volume on the daemon's disk, which
	// EnsureVolume fills with the supervisor of this image (supervision.Version's) each time it is called, and
	// which a primary mounts read-only at SupervisorMountPath (see installSupervisor). SizeBytes is then 0.
	Supervisor string
}

// VolumeInfo is what ObserveVolume and ListVolumes report.
type VolumeInfo struct {
	Exists    bool
	Name      string
	SizeBytes int64 // the tmpfs size limit recorded at creation
	Labels    map[string]string
	// Mountpoint is where the daemon's host mounts the volume while a container uses it
	// (/var/lib/docker/volumes/NAME/_data); "" when the driver does not say.
	Mountpoint string
}

// ContainerSpec is everything a controller may ask of a container. It has no way to express host or
// container network modes, privileged mode, capabilities, bind mounts, devices or published ports: the
// driver adds the hardening itself (see hardening.go) and these types cannot undo it.
type ContainerSpec struct {
	Name    string // see Name(owner, role, service)
	Owner   Owner
	Role    string // v1alpha1.Role*
	Service string // SandboxService name, for RoleService

	Image      string   // image reference present locally (see InspectImage)
	Entrypoint []string // empty keeps the image's
	Cmd        []string // empty keeps the image's
	Env        []EnvVar
	WorkingDir string
	Hostname   string

	// RunAsRoot runs the container as root (uid 0). Without it the container never runs as uid 0, whatever
	// its image's USER says: see RunAs.
	RunAsRoot bool

	// WritableRootBytes above zero makes the root file system writable, with its writable layer capped at
	// that many bytes of the node's disk; only some storage drivers can cap it (StorageInfo), and elsewhere
	// the container is refused. Zero, the default, mounts the root file system read-only, so that a
	// container writes only to its mounts, each bounded.
	WritableRootBytes int64

	// KeepStdinOpen holds the container's standard input open with nothing written to it (docker run -it), so
	// that a session whose image's command is a shell or a REPL waits for input instead of exiting at once.
	// Its input is a terminal, never a pipe: a pipe reached through /proc/1/fd/0 can be opened for writing
	// by any process of the container's user, which would feed PID 1 commands that outlive the Execution
	// that wrote them; what is written to a terminal goes to its output instead, and pushing input into it
	// (TIOCSTI) needs it as controlling terminal or CAP_SYS_ADMIN, neither of which an exec has. Output is
	// then one stream (stderr joins stdout).
	KeepStdinOpen bool

	// Init runs the container's command under the daemon's init (docker run --init; docker-init, which is
	// tini), as PID 1 that reaps every orphan. Without it the image's own PID 1 inherits the orphans of
	// killed processes, and one that never waits for children it did not start (a session's shell) keeps
	// them as zombies, each holding one of the container's pids until it stops. Ask it only of a daemon
	// whose InitInfo says it has one: the start fails otherwise. False leaves the daemon's default.
	Init bool

	// Runtime is the name of the daemon's OCI runtime the container runs under (docker run --runtime; runsc
	// for gVisor), one of those Runtimes reports; "" leaves the daemon's default (runc). A name the daemon
	// does not offer is refused at creation.
	Runtime string

	Resources Resources         // all three limits are required
	Network   NetworkAttachment // zero value: network mode none
	Mounts    []VolumeMount     // named Dockside volumes only
	Tmpfs     []TmpfsMount      // scratch space in memory
}

// EnvVar is one environment variable. Values may be secrets: they are never logged and never appear in an
// error, and printing an EnvVar (fmt, logr) shows only its name.
type EnvVar struct {
	Name  string
	Value string
}

const redacted = "<redacted>"

func (e EnvVar) String() string   { return e.Name + "=" + redacted }
func (e EnvVar) GoString() string { return e.String() }

// MarshalLog keeps the value out of structured logs (logr.Marshaler).
func (e EnvVar) MarshalLog() any { return e.String() }

// Resources are the limits every container gets; zero is refused, not read as "unlimited".
type Resources struct {
	MemoryBytes int64 // memory limit; swap is not granted on top
	NanoCPUs    int64 // CPU quota in units of 1e-9 CPUs
	PIDs        int64 // maximum number of processes
}

// NetworkAttachment attaches the container to one Dockside network (created by EnsureNetwork on this node)
// with DNS aliases. An empty Name means network mode none. Any other network is refused.
type NetworkAttachment struct {
	Name    string
	Aliases []string
}

// VolumeMount mounts a Dockside volume (created by EnsureVolume on this node) at Target.
type VolumeMount struct {
	Volume   string
	Target   string
	ReadOnly bool
}

// TmpfsMount is an in-memory scratch mount with a size limit.
type TmpfsMount struct {
	Target    string
	SizeBytes int64
}

// ContainerState is the Docker state of a container.
type ContainerState string

const (
	StateCreated    ContainerState = "created"
	StateRunning    ContainerState = "running"
	StatePaused     ContainerState = "paused"
	StateRestarting ContainerState = "restarting"
	StateRemoving   ContainerState = "removing"
	StateExited     ContainerState = "exited"
	StateDead       ContainerState = "dead"
)

// ContainerInfo is what ObserveContainer and ListContainers report.
type ContainerInfo struct {
	Exists     bool
	ID         string
	Name       string
	Image      string // as requested
	ImageID    string // what it runs
	State      ContainerState
	ExitCode   int
	OOMKilled  bool
	StartedAt  time.Time // zero if never started
	FinishedAt time.Time // zero if never finished
	Health     string    // always "" here: image health checks are disabled
	Network    string    // the Dockside network it is attached to, "" for none
	IP         string    // its address on that network while running
	User       string    // the uid[:gid] it runs as (see RunAs)
	Init       bool      // its command runs under the daemon's init (see ContainerSpec.Init)
	Runtime    string    // the OCI runtime it was created with (see ContainerSpec.Runtime), "" for the daemon's default
	RunVolume  string    // the volume mounted at RunMountPath, "" for none: supervised execs can run in it
	// SupervisorVolume is the volume mounted read-only at SupervisorMountPath, "" for none (a primary made
	// before there were any): the supervisor is then put into the run volume.
	SupervisorVolume string
	Labels           map[string]string
}

// ExecRequest is one command in a running container, run as the container's own user: no exec can become
// root in a container that does not run as root.
type ExecRequest struct {
	Command    []string
	Env        []EnvVar
	WorkingDir string
	// Timeout is the deadline, enforced from the host: when it passes (or ctx ends) the driver kills the
	// container, which is the only bound a process in it cannot escape (see docker_exec.go), unless
	// KeepOnTimeout says otherwise. Required, > 0.
	Timeout time.Duration
	// KeepOnTimeout makes Timeout (and ctx ending) only stop the wait: the exec ends as DeadlineExceeded
	// (or Canceled) and the container is left running. Readiness probes need it: a probe that is slow once,
	// on a loaded node, is one failed check, and must not kill the service it checks
	// (docs/design/status.md, "Poisoning and settling"). Docker has no call that kills an exec's process, so
	// the probe's process may go on running in the container, bounded only by the container's own limits
	// (pids, memory) and ended with it. Executions must never set it: their deadline is the bound untrusted
	// code cannot escape, and only killing the container enforces it. It cannot be combined with
	// KillSurvivors.
	KeepOnTimeout bool
	// OutputLimit caps the bytes kept of each of stdout and stderr; the rest is read, counted and dropped.
	// Required, > 0.
	OutputLimit int
	// Stdin is written to the command's standard input, which is then closed; nil attaches none. A supervised
	// exec carries it in its environment (supervision.StdinEnv), so it takes at most MaxSupervisedStdin.
	Stdin []byte
	// KillSurvivors: no process the command started may outlive it. The driver notes the container's
	// processes before the exec and, if new ones remain once the command exited (detached or double-forked
	// children), kills the container, the one bound they cannot escape (see ExecResult.Survivors).
	KillSurvivors bool
	// Supervised runs the command under dockside-supervise, detached from the caller, in a container with a
	// run volume (ContainerInfo.RunVolume); in one without, the exec runs attached as before and
	// Supervision.Created gets an ExecRef with no ID. See Supervision.
	Supervised *Supervision
}

// MaxSupervisedStdin is the most stdin a supervised exec takes: an Execution's (64 KiB), whose base64 fits in
// one environment variable, which Linux bounds at 128 KiB.
const MaxSupervisedStdin = 64 << 10

// RunMountPath is where a session's primary mounts its run volume: the supervisor and the output it keeps
// of the command it runs (docs/design/decisions/0028-commands-run-under-a-supervisor.md).
const RunMountPath = "/run/dockside"

// SupervisorMountPath is where a session's primary mounts its supervisor volume (VolumeSpec.Supervisor),
// read-only: a command, even one that runs as root, can neither write there nor mount anything over it. It
// is a folder of the root, the one parent nobody can rename: a mount point itself cannot be renamed or
// removed, but a folder that holds one can, and a root command in a writable root (rootFilesystem Writable)
// could move /run away, mount points and all, and make a /run/dockside-supervisor of its own.
const SupervisorMountPath = "/dockside-supervisor"

// Supervision is how a command outlives the agent that started it. The driver puts the supervisor (from
// Image) into the container's run volume, makes the exec and hands its ExecRef to Created before it starts
// it, detached: the command then runs whether or not anyone waits for it, its output goes to files in the
// run volume (the first OutputLimit bytes of each stream, and a count of the rest), the supervisor kills its
// process group at Timeout, and Docker keeps its exit code. The driver waits for it as for an attached exec,
// with one difference: when ctx ends (not the deadline), the wait ends as ExecCanceled and the command is
// left running, for the caller to kill (StopContainer) or for ResumeExec to wait for again.
type Supervision struct {
	Image string // the image whose /dockside-supervise is the supervisor (the holder's)
	Key   string // names the run's folder in the run volume: letters, digits and '-', unique per run
	// Created is called once Docker has made the exec, before it starts: the caller records the ExecRef so
	// that it can find the command again. An error from it starts nothing.
	Created func(ExecRef) error
}

// ExecRef finds a supervised exec again: its Docker ID ("" for an exec that ran attached, which cannot be
// resumed) and the container's processes before it, by host PID, for KillSurvivors.
type ExecRef struct {
	ID     string
	Before []string
}

// ExecReason says how an exec ended.
type ExecReason string

const (
	ExecCompleted        ExecReason = "Completed"        // the command exited; see ExitCode
	ExecDeadlineExceeded ExecReason = "DeadlineExceeded" // Timeout or ctx deadline passed; container killed unless KeepOnTimeout
	ExecCanceled         ExecReason = "Canceled"         // ctx was cancelled; container killed unless KeepOnTimeout or Supervised
	ExecNotStarted       ExecReason = "NotStarted"       // ResumeExec: the exec was made but never started
)

// ExecResult is how an exec ended and the first OutputLimit bytes of each stream.
type ExecResult struct {
	Reason          ExecReason
	ExitCode        int // valid when Reason is ExecCompleted
	Stdout          []byte
	Stderr          []byte
	StdoutCut       int64 // bytes of stdout dropped beyond OutputLimit
	StderrCut       int64
	Duration        time.Duration
	ContainerKilled bool // the container was killed to enforce the deadline or cancel, or to end survivors
	Survivors       int  // processes the command left running (KillSurvivors); the container was killed
	// CutUnread says the output was not all read back (a file of the command's far past the cap, or a read
	// that ran out of time): the counts of bytes cut are then at least those given.
	CutUnread bool
}

// LogTail is the end of a container's output.
type LogTail struct {
	Data []byte // the last bytes of stdout and stderr, interleaved in the order Docker logged them
	Cut  int64  // bytes before Data that were dropped
}

// EventType is a container lifecycle event.
type EventType string

const (
	EventStart   EventType = "start"
	EventDie     EventType = "die" // ExitCode set
	EventOOM     EventType = "oom"
	EventHealth  EventType = "health_status" // Health set
	EventPause   EventType = "pause"
	EventUnpause EventType = "unpause"
	EventDestroy EventType = "destroy"
	// EventResync: the stream broke and was resumed; events may be lost, relist what you own.
	EventResync EventType = "resync"
)

// Event is one lifecycle event of a labelled container of this node.
type Event struct {
	Type      EventType
	Container string // container name
	ID        string
	Owner     Owner
	Role      string
	Service   string
	ExitCode  int
	Health    string
	Time      time.Time
}
