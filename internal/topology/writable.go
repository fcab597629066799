package topology

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// The root file system of every container is read-only (the driver's default); these are the places a
// primary or a service can write to besides its own mounts, so that programs writing temporary files or
// caches keep working.
const (
	TmpPath    = "/tmp"
	maxTmpSize = 64 << 20
)

// tmpSize is the size of the /tmp each container gets: a quarter of its memory limit, because /tmp is
// memory counted against that limit and the program needs the rest, and at most 64 MiB, which temporary
// files need; bigger files belong in the workspace, whose size the Sandbox states. A scratch mount at /tmp
// replaces it, at a size of the user's choosing.
func tmpSize(memoryBytes int64) int64 {
	return min(maxTmpSize, memoryBytes/4)
}

// WithTmp adds a /tmp of tmpSize to a container's tmpfs mounts unless one of its mounts (a scratch mount, or
// the workspace at taken) is there already.
func WithTmp(tmpfs []dd.TmpfsMount, memoryBytes int64, taken ...string) []dd.TmpfsMount {
	for _, m := range tmpfs {
		taken = append(taken, m.Target)
	}
	for _, t := range taken {
		if t == TmpPath {
			return tmpfs
		}
	}
	return append(tmpfs, dd.TmpfsMount{Target: TmpPath, SizeBytes: tmpSize(memoryBytes)})
}

// PrimaryTmpfs are the primary container's tmpfs mounts: its scratch mounts and a /tmp.
func PrimaryTmpfs(spec dsv1alpha1.SandboxSpec) []dd.TmpfsMount {
	return WithTmp(ScratchMounts(spec.Scratch), Limits(spec.Resources).MemoryBytes, MountPath(spec.Workspace))
}

// Writable is where a Sandbox's primary container can write, as the Sandbox reconciler makes it.
type Writable struct {
	Workspace dd.TmpfsMount   // the workspace volume: its mount path and size
	Tmpfs     []dd.TmpfsMount // the container's own tmpfs mounts: scratch and /tmp
	RootBytes int64           // the bound of a writable root file system; 0: the root is read-only
}

// PrimaryWritable is where the primary container of a Sandbox with spec can write. The files subresource
// (internal/dataplane/files) serves these places and no others.
func PrimaryWritable(spec dsv1alpha1.SandboxSpec) Writable {
	return Writable{
		Workspace: dd.TmpfsMount{Target: MountPath(spec.Workspace), SizeBytes: WorkspaceBytes(spec.Workspace)},
		Tmpfs:     PrimaryTmpfs(spec),
		RootBytes: WritableRootBytes(spec),
	}
}

// ScratchMounts turns scratch mounts into the container's tmpfs mounts.
func ScratchMounts(scratch []dsv1alpha1.ScratchMount) []dd.TmpfsMount {
	out := make([]dd.TmpfsMount, 0, len(scratch))
	for _, m := range scratch {
		out = append(out, dd.TmpfsMount{Target: m.MountPath, SizeBytes: m.Size.Value()})
	}
	return out
}
