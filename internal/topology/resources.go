package topology

import (
	"path"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Limits where a field was left out (the CRD defaults them, so this only covers objects made before).
const (
	defaultCPU       = 1_000_000_000 // nano CPUs: one core
	defaultMemory    = 512 << 20
	defaultPids      = 256
	defaultMountPath = "/workspace"
)

// HolderLimits are the holder's: it only sleeps while it keeps the workspace mounted. Its CPU limit is a
// whole CPU all the same, because runc starts the container inside the container's own cgroup: at 10m the
// start alone took over 3 s on a busy host (1.2 s on a quiet one, against 0.27 s at one CPU), on every
// Sandbox's critical path. A sleeping process uses none of it, and no user code runs in the holder.
var HolderLimits = dd.Resources{MemoryBytes: 8 << 20, NanoCPUs: 1_000_000_000, PIDs: 16}

// Limits are a container's resource limits, with the defaults where a field was left out.
func Limits(res dsv1alpha1.Resources) dd.Resources {
	out := dd.Resources{MemoryBytes: res.Memory.Value(), NanoCPUs: res.CPU.MilliValue() * 1_000_000, PIDs: res.Pids}
	if out.MemoryBytes == 0 {
		out.MemoryBytes = defaultMemory
	}
	if out.NanoCPUs == 0 {
		out.NanoCPUs = defaultCPU
	}
	if out.PIDs == 0 {
		out.PIDs = defaultPids
	}
	return out
}

// MountPath is where the primary mounts the workspace.
func MountPath(w dsv1alpha1.Workspace) string {
	if w.MountPath == "" {
		return defaultMountPath
	}
	return path.Clean(w.MountPath)
}

// WorkspaceBytes is the size of the workspace volume.
func WorkspaceBytes(w dsv1alpha1.Workspace) int64 {
	if n := w.Size.Value(); n > 0 {
		return n
	}
	return 512 << 20
}

// WritableRootBytes is the size the primary's root file system may grow to, or 0 when it is read-only.
func WritableRootBytes(spec dsv1alpha1.SandboxSpec) int64 {
	fs := spec.RootFilesystem
	if fs.Mode != dsv1alpha1.RootFilesystemWritable || fs.Size == nil {
		return 0
	}
	return fs.Size.Value()
}
