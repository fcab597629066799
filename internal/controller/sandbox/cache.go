package sandbox

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/cachetrim"
)

// UnboundCacheTransform trims a Sandbox bound to no node before it enters the agent's cache of unbound
// Sandboxes (the cache's Transform). Every agent caches every unbound Sandbox of the cluster, and one that
// never binds (restoring from a Checkpoint that does not exist, too large for every node) stays there, so what
// the cache keeps of one is paid for by every agent, as many times as users make them (docs/security.md,
// "What bounds the agent's memory").
//
// It keeps what binding, room accounting and the pool and claim controllers read, all of it small and bounded
// by validation: the metadata every cache keeps (cachetrim.Meta: the controller ownerReference, and the pool,
// claim and template hash labels, which their lists select on), and of the spec everything but the program
// and its environment: command (but that there is one), args, env, commandEnv, workingDir and network.allow
// are dropped. The status is kept whole: agents write it, within its validation. Binding writes only spec.nodeName and a
// finalizer, and the status pass only status, each as a merge patch against this copy, so what it lacks is
// never written back; once bound, the node's cache holds the Sandbox whole.
func UnboundCacheTransform(obj any) (any, error) {
	if sbx, ok := obj.(*dsv1alpha1.Sandbox); ok && sbx.Spec.NodeName == "" {
		return trimmedUnbound(sbx), nil
	}
	return obj, nil
}

// runMarker stands for the command of an unbound run in the cache: nothing there runs it.
const runMarker = "(the command is read once the Sandbox is bound)"

func trimmedUnbound(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	out := &dsv1alpha1.Sandbox{TypeMeta: sbx.TypeMeta, ObjectMeta: cachetrim.Meta(&sbx.ObjectMeta, nil), Spec: sbx.Spec, Status: sbx.Status}
	if len(out.Spec.Command) > 0 {
		// A run stays a run (scope.isRun): what a run holds differs from a session's (runVolumeFootprint).
		out.Spec.Command = []string{runMarker}
	}
	out.Spec.Args, out.Spec.Env, out.Spec.CommandEnv = nil, nil, nil
	out.Spec.WorkingDir, out.Spec.Network.Allow = "", nil
	return out
}
