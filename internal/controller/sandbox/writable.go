package sandbox

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// The root file system of every container is read-only (the driver's default); these are the places a
// primary or a service can write to besides its own mounts, so that programs writing temporary files or
// caches keep working.
const (
	tmpPath    = "/tmp"
	maxTmpSize = 64 << 20
	homeVar    = "HOME"
)

// tmpSize is the size of the /tmp each container gets: a quarter of its memory limit, because /tmp is
// memory counted against that limit and the program needs the rest, and at most 64 MiB, which temporary
// files need; bigger files belong in the workspace, whose size the Sandbox states. A scratch mount at /tmp
// replaces it, at a size of the user's choosing.
func tmpSize(memoryBytes int64) int64 {
	return min(maxTmpSize, memoryBytes/4)
}

// withTmp adds a /tmp of tmpSize to a container's tmpfs mounts unless one of its mounts (a scratch mount, or
// the workspace at taken) is there already.
func withTmp(tmpfs []dd.TmpfsMount, memoryBytes int64, taken ...string) []dd.TmpfsMount {
	for _, m := range tmpfs {
		taken = append(taken, m.Target)
	}
	for _, t := range taken {
		if t == tmpPath {
			return tmpfs
		}
	}
	return append(tmpfs, dd.TmpfsMount{Target: tmpPath, SizeBytes: tmpSize(memoryBytes)})
}

// primaryTmpfs are the primary container's tmpfs mounts: its scratch mounts and a /tmp.
func primaryTmpfs(spec dsv1alpha1.SandboxSpec) []dd.TmpfsMount {
	return withTmp(scratchMounts(spec.Scratch), limits(spec.Resources).MemoryBytes, mountPath(spec.Workspace))
}

// Writable is where a Sandbox's primary container can write, as primarySpec makes it.
type Writable struct {
	Workspace dd.TmpfsMount   // the workspace volume: its mount path and size
	Tmpfs     []dd.TmpfsMount // the container's own tmpfs mounts: scratch and /tmp
	RootBytes int64           // the bound of a writable root file system; 0: the root is read-only
}

// PrimaryWritable is where the primary container of a Sandbox with spec can write. The files subresource
// (internal/dataplane/files) serves these places and no others.
func PrimaryWritable(spec dsv1alpha1.SandboxSpec) Writable {
	return Writable{
		Workspace: dd.TmpfsMount{Target: mountPath(spec.Workspace), SizeBytes: workspaceBytes(spec.Workspace)},
		Tmpfs:     primaryTmpfs(spec),
		RootBytes: writableRootBytes(spec),
	}
}

// withEnv is a container's environment: the defaults the agent sets (HOME), each replaced by a variable of
// the same name from the spec, then the spec's variables in their order.
func withEnv(defaults, spec []dd.EnvVar) []dd.EnvVar {
	set := map[string]bool{}
	for _, e := range spec {
		set[e.Name] = true
	}
	out := make([]dd.EnvVar, 0, len(defaults)+len(spec))
	for _, e := range defaults {
		if !set[e.Name] {
			out = append(out, e)
		}
	}
	return append(out, spec...)
}

// primaryHome is the primary container's HOME: its workspace, which is writable, sized by the Sandbox and
// kept across topology rolls, so that what programs keep in HOME (a pip cache, pip install --user,
// histories) lasts as long as the Sandbox. The image's own HOME is on the read-only root file system.
func primaryHome(spec dsv1alpha1.SandboxSpec) []dd.EnvVar {
	return []dd.EnvVar{{Name: homeVar, Value: mountPath(spec.Workspace)}}
}

// serviceHome is a service container's HOME: /tmp, as it has no workspace.
func serviceHome() []dd.EnvVar {
	return []dd.EnvVar{{Name: homeVar, Value: tmpPath}}
}
