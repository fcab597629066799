package sandbox

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// A pass records what it found out about where the Sandbox stands (a fact, with the reason and message its
// conditions give); derivePhase alone turns that into the phase and Ready, Reconciling and Stalled
// (docs/design/decisions/0029-one-step-table-and-a-derived-phase.md).

// fact is the kind of thing a pass found that decides the Sandbox's phase.
type fact int

const (
	// factBuilding: the topology is being built or rolled: images, workspace, restore, network, services, primary.
	factBuilding fact = iota
	// factAwaiting: something the start needs before it builds is not there yet: room, a Checkpoint, a
	// Secret, a subnet, a checkpoint store.
	factAwaiting
	// factUnrestorable: the Checkpoint to restore from can never be restored here; only a new Sandbox helps.
	factUnrestorable
	// factServiceMissing: a SandboxService the spec names does not exist.
	factServiceMissing
	// factLazy: a lazy Sandbox that no command asked to start yet.
	factLazy
	// factPrimaryRunning: the primary runs: a session serves, a run's command goes on.
	factPrimaryRunning
	// factAwaitingExecution: a session's primary stopped while an Execution ran, whose outcome decides.
	factAwaitingExecution
	// factFrozen: the topology is frozen, as spec.lifecycle asks or for idleness.
	factFrozen
	// factSucceeded: the run's command exited 0.
	factSucceeded
	// factFailed: ended or refused for good: a run that failed, a poisoned topology, a deadline, a spec the
	// node will not run.
	factFailed
	// factRetrying: something failed on the way, or is in doubt: the pass is retried and the Sandbox stays in
	// the phase it was in.
	factRetrying
	// factDeleting: the Sandbox is being deleted.
	factDeleting
)

// finding is what a pass found, with the reason and message of its Ready, Reconciling and Stalled.
type finding struct {
	fact    fact
	reason  string
	message string
}

func found(f fact, reason, format string, args ...any) finding {
	return finding{fact: f, reason: reason, message: fmt.Sprintf(format, args...)}
}

// observed is what the phase is derived from: the pass's finding and what the Sandbox itself says.
type observed struct {
	finding
	run        bool                    // spec.command is set: a run is not Ready while its command goes on
	generation int64                   // the topology generation recorded; 0 before the first
	lastPhase  dsv1alpha1.SandboxPhase // the phase the last pass wrote
}

func observedOf(sbx *dsv1alpha1.Sandbox, f finding) observed {
	return observed{finding: f, run: len(sbx.Spec.Command) > 0, generation: sbx.Status.TopologyGeneration, lastPhase: sbx.Status.Phase}
}

// derivePhase is the one place that decides a Sandbox's phase and its Ready, Reconciling and Stalled, from
// what the pass observed. Some findings keep the phase the Sandbox was in: a retry says nothing new about
// where it stands. An empty phase is Pending.
func derivePhase(o observed) (dsv1alpha1.SandboxPhase, status.Summary) {
	sum := status.Summary{Reason: o.reason, Message: o.message}
	phase := o.lastPhase
	switch o.fact {
	case factBuilding:
		phase = dsv1alpha1.SandboxStarting
	case factAwaiting:
		phase = dsv1alpha1.SandboxPending
	case factUnrestorable:
		phase, sum.Stalled = dsv1alpha1.SandboxPending, true
	case factServiceMissing:
		if o.generation == 0 {
			phase = dsv1alpha1.SandboxPending // nothing was ever built: it has not started to
		}
	case factLazy:
		phase, sum.Ready = dsv1alpha1.SandboxPending, true // its first command starts it
	case factPrimaryRunning:
		phase, sum.Ready = dsv1alpha1.SandboxRunning, !o.run // a run is Ready once it succeeded
	case factAwaitingExecution:
		phase = dsv1alpha1.SandboxRunning
	case factFrozen:
		phase, sum.Ready = dsv1alpha1.SandboxPaused, true // a command or a thaw of the spec resumes it
	case factSucceeded:
		phase, sum.Ready = dsv1alpha1.SandboxSucceeded, true
	case factFailed:
		phase, sum.Stalled = dsv1alpha1.SandboxFailed, true
	case factRetrying:
	case factDeleting:
		phase = dsv1alpha1.SandboxTerminating
	}
	if phase == "" {
		phase = dsv1alpha1.SandboxPending
	}
	return phase, sum
}

// applyFinding writes the phase, Ready, Reconciling and Stalled derived from a pass's finding.
func applyFinding(sbx *dsv1alpha1.Sandbox, f finding) {
	phase, sum := derivePhase(observedOf(sbx, f))
	sbx.Status.Phase = phase
	status.Summarize(sbx, sum)
}

// lastFinding is what the last pass found, as far as its status says: the reason and message of its Ready,
// Failed or Unrestorable when it was Stalled, else a retry that keeps its phase.
func lastFinding(sbx *dsv1alpha1.Sandbox) finding {
	f := finding{fact: factRetrying}
	if c := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
		f.reason, f.message = c.Reason, c.Message
	}
	if meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionStalled) {
		f.fact = factFailed
		if sbx.Status.Phase == dsv1alpha1.SandboxPending {
			f.fact = factUnrestorable
		}
	}
	return f
}
