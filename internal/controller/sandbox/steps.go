package sandbox

// steps is the whole pass over a bound, admitted Sandbox, in the order reconcileNormal runs it: a step that
// has to wait, that settles the Sandbox or that fails ends the pass there. Every step is idempotent, so a pass
// cut short anywhere is simply run again. Each group of steps has a file of its own, named for its concern.
func (r *Reconciler) steps() []step {
	return []step{
		// observe (observe.go): what Docker holds, what the spec resolves to, which generation should run.
		r.observe,        // one list of containers and one of networks by the UID label: no polling between passes
		r.resolveSpec,    // the SandboxServices the spec names and the hash the topology would be built from
		r.ensureTopology, // the current generation stays while the hash does, else it rolls: any roll but the first ends the pass

		// settle (settle.go): a topology that ended for good is kept as it ended, before anything else is looked at.
		r.releaseSecretFiles, // secrets holders no start needs any more hold files that should not outlive it
		r.removeFailedStart,  // a topology poisoned before its primary ran holds nothing worth keeping, only address space
		r.holdSettled,        // a finished run, a session past its deadline or a poisoned topology is kept stopped
		r.followPrimary,      // a primary that ended or vanished settles the Sandbox: a run's result comes first

		// gate (gate.go): what holds a start back, checked before anything of it is built.
		r.trackStartup,     // the startup clock and deadline: the steps after it get only the time left
		r.checkNames,       // two containers claiming one DNS name would let the Sandbox's code reach the wrong one
		r.checkContainment, // root, Unrestricted or a writable root the node does not allow is refused at once
		r.ensureImages,     // images present as their pull policy wants (pulled in the background), or refused

		// build (build.go): the topology's Docker objects, each once and in this order.
		r.ensureSecretFiles, // the secret files, with the values the Secrets hold now, before the primary starts
		r.ensureWorkspace,   // the workspace volume, and its holder when something needs it before the primary
		r.ensureRestored,    // a Checkpoint's files copied in through the holder, before anything starts
		r.ensureNetwork,     // the bridge the containers join, of its own when there are services
		r.ensureServices,    // the services in declaration order, each ready before the next starts
		r.ensurePrimary,     // the primary once every service is ready; activeDeadlineSeconds enforced from the host

		// lifecycle (lifecycle.go): a built topology is paused or running as spec.lifecycle (and idleness) asks.
		r.ensureLifecycle,
	}
}
