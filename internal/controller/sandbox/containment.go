package sandbox

import (
	"context"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/topology"
)

// checkContainment refuses, before anything of a start is built, what this node will not run: a container
// as root while the agent runs without --allow-root, and a writable root file system its storage driver
// cannot cap. Like an image the node's policy refuses, the refusal is Stalled at once and keeps its reason
// past the startup deadline; a change of spec that rolls the topology, or an agent started with the flag,
// starts it again.
func (r *Reconciler) checkContainment(_ context.Context, s *scope) (bool, error) {
	if s.started() {
		return false, nil
	}
	if who := rootAsker(s); who != "" && !r.Options.AllowRoot {
		s.stalled(dsv1alpha1.SandboxFailed, dsv1alpha1.ReasonRootNotAllowed,
			"%s asks to run as root (runAsRoot: true), which node %s does not allow: its agent runs without --allow-root", who, r.Options.Node)
		return true, nil
	}
	if topology.WritableRootBytes(s.sbx.Spec) > 0 {
		if can, why := r.Options.Storage.CapsWritableLayer(); !can {
			s.stalled(dsv1alpha1.SandboxFailed, dsv1alpha1.ReasonWritableRootUnsupported,
				"rootFilesystem Writable needs its size capped on the node's disk, which node %s cannot do: %s", r.Options.Node, why)
			return true, nil
		}
	}
	return false, nil
}

// rootAsker names, for people, the first container of the Sandbox that asks to run as root, or "".
func rootAsker(s *scope) string {
	if s.sbx.Spec.RunAsRoot {
		return "the primary container"
	}
	for _, svc := range s.services {
		if svc != nil && svc.Spec.RunAsRoot {
			return "service " + svc.Name
		}
	}
	return ""
}
