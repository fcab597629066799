package sandbox

import (
	"context"
	"fmt"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Runtimes: a Sandbox runs its primary, and each service its container, under the runtime its spec names
// (spec.runtime, runc or gVisor) or else the node's default (Options.Runtimes). A Sandbox naming a runtime
// its node's Docker does not offer is never bound there; bound there by its author, it waits unadmitted,
// as for room (reason RuntimeUnavailable). An unbound one that no agent offers the runtime to waits with
// the same reason, written by every agent in the same words; while some agent offers it, those that do not
// leave its status to that agent (docs/design/scheduling.md, "Runtimes").

// OfferedElsewhere tells whether some live agent of another node publishes that its Docker offers rt (the
// runtimes annotation of its Lease).
type OfferedElsewhere func(ctx context.Context, rt dsv1alpha1.Runtime) (bool, error)

// runtimesAsked are the runtimes the Sandbox's containers name, primary first, each once; one that names
// none runs under the node's default, which every node offers.
func runtimesAsked(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) []dsv1alpha1.Runtime {
	var asked []dsv1alpha1.Runtime
	add := func(rt dsv1alpha1.Runtime) {
		for _, a := range asked {
			if a == rt {
				return
			}
		}
		if rt != "" {
			asked = append(asked, rt)
		}
	}
	add(sbx.Spec.Runtime)
	for _, svc := range services {
		if svc != nil {
			add(svc.Spec.Runtime)
		}
	}
	return asked
}

// missingRuntime is the first runtime the Sandbox's containers run under that this node's Docker does not
// offer, "" when it offers them all. The node's default counts for a container that names none: the agent
// refuses to start without it, but its daemon may drop it later (runtimes.Reread).
func (r *Reconciler) missingRuntime(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) dsv1alpha1.Runtime {
	node := r.Options.Runtimes.Node()
	if !node.Offers(node.Of(sbx.Spec.Runtime)) {
		return node.Of(sbx.Spec.Runtime)
	}
	for _, svc := range services {
		if svc != nil && !node.Offers(node.Of(svc.Spec.Runtime)) {
			return node.Of(svc.Spec.Runtime)
		}
	}
	return ""
}

// runtimeRefusal is why this node cannot take a Sandbox that names rt, which its Docker does not offer.
func (r *Reconciler) runtimeRefusal(rt dsv1alpha1.Runtime) *refusal {
	return &refusal{dsv1alpha1.ReasonRuntimeUnavailable, fmt.Sprintf(
		"this Sandbox asks for runtime %s, which the Docker of node %s does not offer (it offers %s); waiting for it",
		rt, r.Options.Node, offeredForPeople(r.Options.Runtimes.Node().Offered()))}
}

// nobodyOffers is the status of an unbound Sandbox whose runtime no agent offers: every agent writes it in the
// same words.
func nobodyOffers(rt dsv1alpha1.Runtime) finding {
	return found(factAwaiting, dsv1alpha1.ReasonRuntimeUnavailable,
		"this Sandbox asks for runtime %s, which no agent's Docker offers; waiting for an agent that does (docs/deploy.md, \"Running Sandboxes under gVisor\")", rt)
}

// noRoomWords is what every agent without room for an unbound Sandbox writes: the runtimes it asks for, and
// its footprint.
func noRoomWords(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService, need Holding) finding {
	with := ""
	if asked := runtimesAsked(sbx, services); len(asked) > 0 {
		with = " offering runtime " + offeredForPeople(asked) + " and"
	}
	return found(factAwaiting, dsv1alpha1.ReasonNoCapacity,
		"waiting for an agent%s with room for one more Sandbox and %s of memory", with, bytesForPeople(need.Memory))
}

func offeredForPeople(rts []dsv1alpha1.Runtime) string {
	names := make([]string, len(rts))
	for i, rt := range rts {
		names[i] = string(rt)
	}
	return strings.Join(names, " and ")
}
