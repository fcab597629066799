package sandbox

import (
	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// lazyMessage is what a lazy Sandbox that waits for its first command reports.
const lazyMessage = "no container yet (spec.start: Lazy): the first command (an Execution, or an exec, files, processes or port-forward call) builds the topology and waits for it"

// holdLazy keeps a lazy Sandbox (spec.start: Lazy) that no command asked to start without any container
// (docs/design/lazy-start.md). It is bound and counted in its node's room like any other, and Ready with
// reason Lazy, since its first command starts it: handoff.Idle.Start asks for the pass that builds the first
// topology generation. Once one is recorded, or Docker holds anything of one, the Sandbox is a session like
// any other, whatever spec.start says.
func (r *Reconciler) holdLazy(s *scope) bool {
	if s.sbx.Spec.Start != dsv1alpha1.StartLazy || s.gen() > 0 || s.holdsTopology() || r.Idle.StartAsked(s.sbx.UID) {
		return false
	}
	s.note(factLazy, dsv1alpha1.ReasonLazy, lazyMessage)
	return true
}
