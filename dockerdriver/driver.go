// Package dockerdriver is the only package in Dockside that talks to Docker. Controllers speak to it in the
// plain types of this package; the Docker SDK never leaks past it.
//
// The contract is Crossplane-shaped:
//   - Observe* and List* never change anything; an absent object is an observation with Exists false, not an
//     error.
//   - Ensure* of something that already exists with the same identity adopts it and is not an error; a name
//     held by an object whose identity labels differ is a Conflict, never adopted.
//   - Remove* of something missing is not an error.
//   - Nothing blocks past its context's deadline; Stop blocks at most for its grace period.
//
// Errors are classified once, here (see errors.go), and never carry Docker's own message text.
package dockerdriver

import (
	"context"
	"io"
	"time"
)

// Driver converges one Docker daemon for one node (agent). Everything it creates carries the Dockside labels
// with its node name, and everything it lists, observes by label, or streams events for is limited to that
// node, so several agents sharing one daemon never touch each other's objects.
//
// Containers, networks and volumes are addressed by their Docker name (see Name and NodeNetworkName) or ID.
type Driver interface {
	// Ping checks that the daemon answers and reports its version.
	Ping(ctx context.Context) (Version, error)
	// Security reports the confinement the daemon applies to every container (its seccomp profile), which
	// the agent checks once at start-up.
	Security(ctx context.Context) (SecurityInfo, error)
	// Storage reports the daemon's storage driver and its backing file system, which decide whether a
	// container's writable layer can be capped (see StorageInfo); the agent asks once at start-up.
	Storage(ctx context.Context) (StorageInfo, error)
	// HostMemory reports the memory of the daemon's host in bytes (docker info's MemTotal), from which the
	// agent's default allocatable memory is worked out; the agent asks once at start-up.
	HostMemory(ctx context.Context) (int64, error)
	// Init reports the daemon's init binary, which decides whether containers can run under it
	// (ContainerSpec.Init); the agent asks once at start-up.
	Init(ctx context.Context) (InitInfo, error)
	// HostCPUs reports the number of CPUs of the daemon's host (docker info's NCPU), from which the agent's
	// default allocatable CPU and the most CPUs one container may ask for are worked out; asked at start-up.
	HostCPUs(ctx context.Context) (int, error)
	// Runtimes reports the names of the OCI runtimes the daemon offers (docker info's Runtimes: runc, and
	// runsc where gVisor is registered), sorted, from which the agent learns which a container may ask for
	// (ContainerSpec.Runtime); asked at start-up.
	Runtimes(ctx context.Context) ([]string, error)

	// InspectImage reports whether an image is present locally and what it declares. Absent is not an error.
	InspectImage(ctx context.Context, ref string) (ImageInfo, error)
	// PullImage has the daemon pull ref with auth (nil: anonymously), calling progress (which may be nil) as
	// the pull goes. It blocks until the pull ends or ctx does: pulls are the one call that lasts as long as
	// the registry takes, so callers bound ctx themselves.
	PullImage(ctx context.Context, ref string, auth *RegistryAuth, progress func(PullProgress)) (PullResult, error)
	// RemoveImage removes the name ref, and the image with it when no other name holds it; missing is not an
	// error, and one that any container was made from is a Conflict (nothing is removed).
	RemoveImage(ctx context.Context, ref string) error
	// ListImages reports the daemon's images that carry every label of match (nil: all of them, whoever
	// made them), each saying whether any container of the daemon was made from it.
	ListImages(ctx context.Context, match map[string]string) ([]ImageSummary, error)

	EnsureNetwork(ctx context.Context, spec NetworkSpec) (NetworkInfo, error)
	ObserveNetwork(ctx context.Context, name string) (NetworkInfo, error)
	RemoveNetwork(ctx context.Context, name string) error
	ListNetworks(ctx context.Context, match map[string]string) ([]NetworkInfo, error)

	EnsureVolume(ctx context.Context, spec VolumeSpec) (VolumeInfo, error)
	ObserveVolume(ctx context.Context, name string) (VolumeInfo, error)
	RemoveVolume(ctx context.Context, name string) error
	ListVolumes(ctx context.Context, match map[string]string) ([]VolumeInfo, error)

	// EnsureContainer creates the container (not started) if it does not exist, or adopts the existing one
	// with the same name and identity labels. It does not compare the rest of the spec: a changed spec is a
	// new generation, hence a new name.
	EnsureContainer(ctx context.Context, spec ContainerSpec) (ContainerInfo, error)
	// StartContainer starts a created or exited container; starting a running one is not an error.
	StartContainer(ctx context.Context, name string) error
	ObserveContainer(ctx context.Context, name string) (ContainerInfo, error)
	// StopContainer asks the container to stop and kills it after grace; a stopped or missing one is fine.
	StopContainer(ctx context.Context, name string, grace time.Duration) error
	// RemoveContainer force-removes the container (killing it if it runs).
	RemoveContainer(ctx context.Context, name string) error
	ListContainers(ctx context.Context, match map[string]string) ([]ContainerInfo, error)

	// PauseContainer freezes every process of the container (cgroup freezer); pausing a paused one is fine.
	PauseContainer(ctx context.Context, name string) error
	UnpauseContainer(ctx context.Context, name string) error

	// Exec runs a command in a running container with a deadline and an output cap (see ExecRequest).
	// Reaching the deadline or a cancelled ctx is an outcome (ExecResult.Reason), not an error.
	Exec(ctx context.Context, name string, req ExecRequest) (ExecResult, error)
	// ResumeExec waits again for a supervised exec (ExecRequest.Supervised) that a caller gone since started
	// with req, for at most left, and ends it as Exec would have. An exec Docker does not know is NotFound.
	ResumeExec(ctx context.Context, name string, ref ExecRef, req ExecRequest, left time.Duration) (ExecResult, error)
	// StreamExec runs an interactive command in a running container, copying its streams as they are
	// written, until it exits or ctx ends; either way the processes of its session end with it (see
	// StreamExecRequest). The exit code is an outcome; a cut stream is an error.
	StreamExec(ctx context.Context, name string, req StreamExecRequest) (StreamExecResult, error)

	// CopyFrom streams path out of the container as a tar archive; the caller closes the reader.
	CopyFrom(ctx context.Context, name, path string) (io.ReadCloser, error)
	// CopyTo extracts a tar archive into the directory dir of the container.
	CopyTo(ctx context.Context, name, dir string, tar io.Reader) error
	// CopyToAsUser extracts a tar archive into the directory dir of the container, every entry owned by the
	// container's user whatever the archive says.
	CopyToAsUser(ctx context.Context, name, dir string, tar io.Reader) error
	// StatPath reports what is at path in the container (see PathStat); missing is NotFound.
	StatPath(ctx context.Context, name, path string) (PathStat, error)
	// RenamePath renames from to to in the running container as its user, replacing a file at to and never
	// moving into a directory there; the image must have mv (InvalidSpec otherwise).
	RenamePath(ctx context.Context, name, from, to string) error
	// RemovePath removes path (recursively with recursive) in the running container as its user; missing is
	// not an error. The image must have rm (InvalidSpec otherwise).
	RemovePath(ctx context.Context, name, path string, recursive bool) error

	// LogTail returns the last maxBytes of the container's combined output and how many bytes were cut.
	LogTail(ctx context.Context, name string, maxBytes int) (LogTail, error)

	// Events streams lifecycle events of this node's labelled containers until ctx ends, then closes the
	// channel. When the stream from the daemon breaks, the driver resubscribes with backoff and then sends
	// an EventResync: events may have been missed, so the consumer relists.
	Events(ctx context.Context) <-chan Event
}

// Version is what Ping reports.
type Version struct {
	Server     string // daemon version, e.g. 20.10.24
	APIVersion string // API version negotiated with the daemon, e.g. 1.41
}
