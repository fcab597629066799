package sandbox

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// homeVar is the variable the agent sets to a writable place (primaryHome, serviceHome).
const homeVar = "HOME"

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
	return []dd.EnvVar{{Name: homeVar, Value: topology.MountPath(spec.Workspace)}}
}

// serviceHome is a service container's HOME: /tmp, as it has no workspace.
func serviceHome() []dd.EnvVar {
	return []dd.EnvVar{{Name: homeVar, Value: topology.TmpPath}}
}
