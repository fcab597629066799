package sandbox

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/topology"
)

// trackStartup starts the clock of the current topology generation's start (status.startup) and, while
// the start goes on, sets its deadline: the steps after it get only the time left (scope.bound), and a
// wakeup comes at the deadline whatever else happens.
func (r *Reconciler) trackStartup(_ context.Context, s *scope) (bool, error) {
	st := &s.sbx.Status
	if s.started() {
		r.Wake.Cancel(s.key()) // a start that is over needs no pass at its deadline
		return false, nil
	}
	if st.Startup == nil || st.Startup.TopologyGeneration != st.TopologyGeneration {
		// Microseconds, as the API server keeps them, so that every pass computes the same deadline.
		st.Startup = &dsv1alpha1.StartupStatus{TopologyGeneration: st.TopologyGeneration, StartTime: metav1.NewMicroTime(time.Now().Truncate(time.Microsecond))}
	}
	s.startupDeadline = st.Startup.StartTime.Add(dsv1alpha1.StartupDeadline(s.sbx))
	if !time.Now().Before(s.startupDeadline) {
		// Every Docker call would be cut at once: the start stands where the last pass left it.
		s.finding = lastFinding(s.sbx)
		return true, nil
	}
	r.Wake.At(s.key(), s.startupDeadline)
	return false, nil
}

// checkNames refuses, before anything of a start is built, a topology in which two of its containers
// claim one DNS name: Docker would accept both aliases and the name would resolve to either container, so
// the Sandbox's code could talk to the wrong one. Like a refusal of checkContainment it is Stalled at once;
// a change that makes the names unique (a SandboxService edited, the Sandbox's services changed) starts it
// again. A topology that already runs is left alone: a SandboxService edited later reaches it only at its
// next roll, and until then ServicesUpToDate says NameCollision (setServicesUpToDate).
func (r *Reconciler) checkNames(_ context.Context, s *scope) (bool, error) {
	if s.started() {
		return false, nil
	}
	if msg, ok := topologyNameCollision(s.sbx, s.services); ok {
		s.note(factFailed, dsv1alpha1.ReasonNameCollision,
			"%s: each name of a topology must resolve to one container; rename a service or drop the alias", msg)
		return true, nil
	}
	return false, nil
}

// topologyNameCollision says, for people, the first DNS name two containers of the Sandbox's topology would
// claim: the primary holds the Sandbox's name (hostname and alias), each service its SandboxService's name
// and aliases. topology.Names are compared case-insensitively, as DNS does. A container naming itself twice (an
// alias equal to its service's own name) is no collision: the name still resolves to one container.
// services are the SandboxServices in spec order; a nil one (missing) claims nothing.
func topologyNameCollision(sbx *dsv1alpha1.Sandbox, services []*dsv1alpha1.SandboxService) (string, bool) {
	type claim struct{ owner, who string } // owner tells containers apart; who names the claim for people
	claims := map[string]claim{}
	take := func(name string, c claim) (string, bool) {
		key := strings.ToLower(name)
		prior, taken := claims[key]
		if !taken {
			claims[key] = c
			return "", false
		}
		if prior.owner == c.owner {
			return "", false
		}
		return fmt.Sprintf("the name %q is claimed by %s and by %s", name, prior.who, c.who), true
	}
	take(sbx.Name, claim{owner: "", who: "the primary (the Sandbox's own name)"})
	for _, svc := range services {
		if svc == nil {
			continue
		}
		owner := "service " + svc.Name
		if msg, ok := take(svc.Name, claim{owner: owner, who: fmt.Sprintf("service %q", svc.Name)}); ok {
			return msg, true
		}
		for _, alias := range svc.Spec.Aliases {
			if msg, ok := take(alias, claim{owner: owner, who: fmt.Sprintf("an alias of service %q", svc.Name)}); ok {
				return msg, true
			}
		}
	}
	return "", false
}

// checkContainment refuses, before anything of a start is built, what this node will not run: a container
// as root while the agent runs without --allow-root, a runtime its Docker does not offer (named by a spec
// changed after admission, which alone checks it otherwise), network mode Unrestricted while it runs with
// --refuse-unrestricted, and a writable root file system its storage driver cannot cap. Like an image the node's policy refuses, the refusal is Stalled at once and keeps its reason
// past the startup deadline; a change of spec that rolls the topology, or an agent started with the flag,
// starts it again.
func (r *Reconciler) checkContainment(_ context.Context, s *scope) (bool, error) {
	if s.started() {
		return false, nil
	}
	if who := rootAsker(s); who != "" && !r.Options.AllowRoot {
		s.note(factFailed, dsv1alpha1.ReasonRootNotAllowed,
			"%s asks to run as root (runAsRoot: true), which node %s does not allow: its agent runs without --allow-root", who, r.Options.Node)
		return true, nil
	}
	if rt := r.missingRuntime(s.sbx, s.services); rt != "" {
		// Admitted before its spec named rt: binding and admission never take such a Sandbox.
		s.note(factFailed, dsv1alpha1.ReasonRuntimeUnavailable,
			"this Sandbox asks for runtime %s, which the Docker of node %s does not offer; set a runtime it offers, or create the Sandbox again to have it bound where %s is offered", rt, r.Options.Node, rt)
		return true, nil
	}
	if s.sbx.Spec.Network.Mode == dsv1alpha1.NetworkUnrestricted && r.Options.RefuseUnrestricted {
		s.note(factFailed, dsv1alpha1.ReasonUnrestrictedNotAllowed,
			"network mode Unrestricted reaches every address the host can route to, which node %s does not allow: its agent runs with --refuse-unrestricted", r.Options.Node)
		return true, nil
	}
	if topology.WritableRootBytes(s.sbx.Spec) > 0 {
		if can, why := r.Options.Storage.CapsWritableLayer(); !can {
			s.note(factFailed, dsv1alpha1.ReasonWritableRootUnsupported,
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
