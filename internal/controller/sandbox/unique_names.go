package sandbox

import (
	"context"
	"fmt"
	"strings"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

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
		s.stalled(dsv1alpha1.SandboxFailed, dsv1alpha1.ReasonNameCollision,
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
