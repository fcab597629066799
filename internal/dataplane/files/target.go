package files

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/topology"
)

// Target is the container a request works in and where it may write.
type Target struct {
	// Container is the Docker name of the Sandbox's primary container.
	Container string
	// Mounts are the primary's writable mounts: the workspace first, then its tmpfs mounts.
	Mounts []Mount
	// RootBytes bounds a writable root file system; 0: the root is read-only.
	RootBytes int64
	// Paused: the Sandbox is paused (or being paused); writes are refused with 409 rather than waited for.
	Paused bool
}

// Mount is one writable mount of the primary container.
type Mount struct {
	Path      string // absolute path in the container
	SizeBytes int64  // its size bound; 0 if unknown
	Name      string // what people call it in messages: "the workspace", "/tmp"
	// Tmpfs: a tmpfs mount of the container itself (scratch, /tmp), which only its own processes see; files
	// reaches it through them (inside.go), never through the daemon's archive API.
	Tmpfs bool
	// Volume is the Docker volume of the workspace, whose host side files reads and writes directly when it
	// can (volume.go); "" for the other mounts.
	Volume string
}

// TargetFor is the Target of a Sandbox: its current primary container and the mounts its spec gives it.
// Before its first topology it has no primary, which is a 409 (a *fileswire.StatusError); after that,
// whether the primary runs is for the driver to say.
func TargetFor(sbx *dsv1alpha1.Sandbox) (Target, error) {
	if sbx.Status.TopologyGeneration == 0 {
		return Target{}, conflict("the Sandbox has no primary container yet (phase %s)", phaseOf(sbx))
	}
	w := topology.PrimaryWritable(sbx.Spec)
	t := Target{
		Container: topology.NamesOf(sbx).Primary(),
		Mounts: []Mount{{
			Path: w.Workspace.Target, SizeBytes: w.Workspace.SizeBytes, Name: "the workspace", Volume: topology.NamesOf(sbx).Workspace(),
		}},
		RootBytes: w.RootBytes,
		Paused:    sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused || sbx.Status.Phase == dsv1alpha1.SandboxPaused,
	}
	for _, m := range w.Tmpfs {
		t.Mounts = append(t.Mounts, Mount{Path: m.Target, SizeBytes: m.SizeBytes, Name: m.Target, Tmpfs: true})
	}
	return t, nil
}

func phaseOf(sbx *dsv1alpha1.Sandbox) dsv1alpha1.SandboxPhase {
	if sbx.Status.Phase == "" {
		return dsv1alpha1.SandboxPending
	}
	return sbx.Status.Phase
}

// inTmpfs tells whether p lies in one of the container's own tmpfs mounts.
func (t Target) inTmpfs(p string) bool {
	m := t.mountOf(p)
	return m != nil && m.Tmpfs
}

// mountOf is the mount holding p (the longest that does), or nil for the root file system.
func (t Target) mountOf(p string) *Mount {
	var best *Mount
	for i, m := range t.Mounts {
		if within(p, m.Path) && (best == nil || len(m.Path) > len(best.Path)) {
			best = &t.Mounts[i]
		}
	}
	return best
}
