package execution

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// runPlan is what a command about to start needs: the Sandbox's topology as it is Ready now, and the spec read
// whole from the API server.
type runPlan struct {
	target     topology.Names
	spec       dsv1alpha1.ExecutionSpec
	commandEnv []dsv1alpha1.ExecutionEnvVar // the Sandbox's, read with it: a claim's env (docs/pools.md)
}

// reconcileQueued keeps a waiting Execution Queued, fails it when its Sandbox can never run it, or, when it is
// first in its Sandbox's queue, the Sandbox is Ready and no capture holds it, takes the Sandbox from
// captures (Freezes), records it Running and returns what to run where. The caller gives the Sandbox back
// when the command does not start.
func (r *Reconciler) reconcileQueued(ctx context.Context, ex *dsv1alpha1.Execution, sbx *dsv1alpha1.Sandbox) (*runPlan, error) {
	st := &ex.Status
	st.NodeName = r.Options.Node
	if st.QueueTime == nil {
		st.QueueTime = r.arrival(ex)
	}
	if sbx == nil {
		settle(ex, dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonSandboxNotReady, fmt.Sprintf("Sandbox %s no longer exists", ex.Spec.SandboxName))
		return nil, nil
	}
	if a := admit(ex, sbx); !a.now() {
		if a.start {
			r.Idle.Start(client.ObjectKeyFromObject(sbx), sbx.UID) // its watch brings the pass that runs the command
		}
		a.apply(ex)
		return nil, nil
	}
	if first, err := r.ahead(ctx, ex, sbx); err != nil || first != "" {
		queued(ex, dsv1alpha1.ReasonQueued, fmt.Sprintf("waiting for Execution %s to finish first", first))
		return nil, err
	}
	// The cache may lag behind the Sandbox: start only in one that is Ready now, in the topology it is
	// Ready in.
	live := &dsv1alpha1.Sandbox{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sbx), live); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	switch a := admit(ex, live); {
	case live.UID != sbx.UID || a.refuse != "":
		queued(ex, dsv1alpha1.ReasonQueued, "waiting for the Sandbox's latest state")
		return nil, nil // the Sandbox's watch event brings the next pass
	case !a.now():
		a.apply(ex)
		return nil, nil
	}
	// The cache holds the Execution without its command, stdin and env (CacheTransform): the run takes them
	// from the API server, read before the status says Running so that a failed read starts nothing.
	full, err := r.fullRead(ctx, ex)
	if err != nil || full == nil {
		return nil, err
	}
	// Last, the Sandbox is taken from captures: from here until the run has written its outcome no capture
	// can freeze the primary, so Docker never finds it paused by one (docs/design/executions.md).
	// A capture holding it now wakes this Execution when it lets go.
	if capturing, running, ok := r.Freezes.StartRun(live, ex.Name); !ok {
		if capturing != "" {
			queued(ex, dsv1alpha1.ReasonSandboxFrozen, fmt.Sprintf("waiting while Checkpoint %s captures the workspace of Sandbox %s", capturing, live.Name))
		} else {
			queued(ex, dsv1alpha1.ReasonQueued, fmt.Sprintf("waiting for Execution %s to finish first", running))
		}
		return nil, nil
	}
	now := metav1.NowMicro()
	st.Phase, st.StartTime, st.TopologyGeneration = dsv1alpha1.ExecutionRunning, &now, live.Status.TopologyGeneration
	setExecutionConditions(ex, dsv1alpha1.ReasonRunning, "the command is running")
	return &runPlan{target: topology.NamesOf(live), spec: full.Spec, commandEnv: live.Spec.CommandEnv}, nil
}

// admission is whether a Sandbox can run an Execution now: refuse says why it never will, wait why not yet
// (reason is then Queued or SandboxPaused); all are empty when it can. start says the Sandbox is lazy and
// not started: the Execution asks for its start (docs/design/lazy-start.md) and waits for it.
type admission struct {
	refuse, reason, wait string
	start                bool
}

func (a admission) now() bool { return a.refuse == "" && a.wait == "" }

// apply fails the Execution that is refused, or keeps it Queued saying why.
func (a admission) apply(ex *dsv1alpha1.Execution) {
	if a.refuse != "" {
		settle(ex, dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonSandboxNotReady, a.refuse+"; the command did not run")
		return
	}
	queued(ex, a.reason, a.wait)
}

// admit says whether the Sandbox can run the Execution. A paused Sandbox (spec.lifecycle: Paused, or still
// reported paused) makes it wait until the Sandbox is resumed; a capture's freeze is not seen here but in
// Freezes, as it is no state of the Sandbox.
func admit(ex *dsv1alpha1.Execution, sbx *dsv1alpha1.Sandbox) admission {
	ready := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
	stalled := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionStalled)
	notReady := func(why string) admission {
		return admission{reason: dsv1alpha1.ReasonQueued, wait: fmt.Sprintf("waiting for Sandbox %s to be Ready: %s", sbx.Name, why)}
	}
	pausedWait := admission{reason: dsv1alpha1.ReasonSandboxPaused, wait: fmt.Sprintf("waiting for Sandbox %s to be resumed (spec.lifecycle: Running)", sbx.Name)}
	switch owner := sandboxOwner(ex); {
	case owner != "" && owner != sbx.UID:
		return admission{refuse: fmt.Sprintf("the Sandbox %s it was created for was deleted", sbx.Name)}
	case !sbx.DeletionTimestamp.IsZero():
		return admission{refuse: fmt.Sprintf("Sandbox %s is being deleted", sbx.Name)}
	case len(sbx.Spec.Command) > 0:
		return admission{refuse: fmt.Sprintf("Sandbox %s is a run (it has a command); Executions run only in session Sandboxes", sbx.Name)}
	case sbx.Status.ObservedGeneration != sbx.Generation && sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused:
		return pausedWait
	case sbx.Status.ObservedGeneration != sbx.Generation:
		return notReady("its agent has not yet acted on its latest spec")
	case stalled != nil && stalled.Status == metav1.ConditionTrue:
		return admission{refuse: fmt.Sprintf("Sandbox %s cannot run commands: %s", sbx.Name, stalled.Message)}
	case paused(sbx):
		return pausedWait
	case dsv1alpha1.LazyUnstarted(sbx):
		return admission{reason: dsv1alpha1.ReasonQueued, start: true,
			wait: fmt.Sprintf("waiting for Sandbox %s to start: it starts at its first command (spec.start: Lazy)", sbx.Name)}
	case ready != nil && ready.Status == metav1.ConditionTrue && (sbx.Status.Phase == dsv1alpha1.SandboxRunning || dsv1alpha1.IdlePaused(sbx)):
		return admission{} // one frozen for idleness is thawed by its command's start (launch)
	case ready != nil:
		return notReady(fmt.Sprintf("it is %s: %s", sbx.Status.Phase, ready.Message))
	}
	return notReady("it has not started yet")
}

// paused tells whether the Sandbox is, or is to be, frozen by its spec. One frozen for idleness is not: its
// command thaws it.
func paused(sbx *dsv1alpha1.Sandbox) bool {
	return !dsv1alpha1.IdlePaused(sbx) && (sbx.Spec.Lifecycle == dsv1alpha1.LifecyclePaused ||
		sbx.Status.Phase == dsv1alpha1.SandboxPaused || status.IsTrue(sbx, dsv1alpha1.ConditionPaused))
}

// ahead names the Execution this one waits for: the one just before it in its Sandbox's queue, running or
// queued, or else one running in the Sandbox; "" when it is first. The one just before stays the same while
// the queue moves on, so a waiting Execution's status is written once, however long the queue: naming the
// one running would change the status of every waiting Execution at each turn.
func (r *Reconciler) ahead(ctx context.Context, ex *dsv1alpha1.Execution, sbx *dsv1alpha1.Sandbox) (string, error) {
	var list dsv1alpha1.ExecutionList
	if err := r.List(ctx, &list, client.InNamespace(ex.Namespace), client.MatchingFields{dsv1alpha1.FieldExecutionSandboxName: sbx.Name}); err != nil {
		return "", fmt.Errorf("listing the Executions of Sandbox %s: %w", sbx.Name, err)
	}
	var before *dsv1alpha1.Execution
	running := r.Runs.runningIn(sbx.UID)
	for i := range list.Items {
		other := &list.Items[i]
		switch {
		case other.UID == ex.UID || !waiting(other, sbx):
			continue
		case other.Status.Phase == dsv1alpha1.ExecutionRunning && running == "":
			running = other.Name
		}
		if queuedBefore(other, ex, r.seen) && (before == nil || queuedBefore(before, other, r.seen)) {
			before = other
		}
	}
	if before != nil {
		return before.Name, nil
	}
	return running, nil
}

// waiting tells whether an Execution holds a place in the queue of Sandbox sbx: unfinished, not being
// deleted, and made for this Sandbox (not for one of the same name deleted since).
func waiting(ex *dsv1alpha1.Execution, sbx *dsv1alpha1.Sandbox) bool {
	owner := sandboxOwner(ex)
	return !finished(ex) && ex.DeletionTimestamp.IsZero() && (owner == "" || owner == sbx.UID)
}

// queuedBefore orders a Sandbox's queue by creation: creationTimestamp first (whole seconds), then the time
// the agent saw each Execution arrive (the watch delivers creations in order), then the name. One whose
// arrival the agent does not know comes after those it does within the same second.
func queuedBefore(a, b *dsv1alpha1.Execution, seen func(*dsv1alpha1.Execution) *metav1.MicroTime) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	switch qa, qb := seen(a), seen(b); {
	case qa != nil && qb != nil && !qa.Equal(qb):
		return qa.Before(qb)
	case (qa == nil) != (qb == nil):
		return qa != nil
	}
	return a.Name < b.Name
}

// seen is when the agent saw the Execution arrive: its stamp, or the arrival noted before it was stamped.
func (r *Reconciler) seen(ex *dsv1alpha1.Execution) *metav1.MicroTime {
	if ex.Status.QueueTime != nil {
		return ex.Status.QueueTime
	}
	if t, ok := r.arrivals.Load(ex.UID); ok {
		at := t.(metav1.MicroTime)
		return &at
	}
	return nil
}

// arrival is when the watch delivered the Execution to this agent, or now if it did not note it.
func (r *Reconciler) arrival(ex *dsv1alpha1.Execution) *metav1.MicroTime {
	if at := r.seen(ex); at != nil {
		return at
	}
	now := metav1.NowMicro()
	return &now
}

// noteArrival remembers when an Execution the agent has not stamped yet arrived, and forgets it once stamped.
func (r *Reconciler) noteArrival(ex *dsv1alpha1.Execution) {
	if ex.Status.QueueTime != nil {
		r.arrivals.Delete(ex.UID)
		return
	}
	r.arrivals.LoadOrStore(ex.UID, metav1.NowMicro())
}

// ensureOwner makes the Sandbox the Execution's controlling owner, so that a cluster's garbage collector
// deletes it with its Sandbox. Clients usually set it at creation; this covers those that do not. The cache
// keeps no other ownerReference, so the patch starts from the whole Execution read from the API server, lest
// it drop a client's; ex then stands for the version read (or written), trimmed as the cache keeps it.
func (r *Reconciler) ensureOwner(ctx context.Context, ex *dsv1alpha1.Execution, sbx *dsv1alpha1.Sandbox) error {
	if sandboxOwner(ex) != "" {
		return nil
	}
	full, err := r.fullRead(ctx, ex)
	switch {
	case err != nil:
		return err
	case full == nil:
		return errReplaced
	case sandboxOwner(full) == "":
		before := full.DeepCopy()
		if err := controllerutil.SetControllerReference(sbx, full, r.Scheme()); err != nil {
			return fmt.Errorf("owning Execution %s by its Sandbox: %w", full.Name, err)
		}
		if err := r.Patch(ctx, full, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("owning Execution %s by its Sandbox: %w", full.Name, err)
		}
	}
	*ex = *trimmed(full)
	return nil
}

// sandboxOwner is the UID of the Sandbox that owns the Execution, "" when none does yet.
func sandboxOwner(ex *dsv1alpha1.Execution) types.UID {
	for _, ref := range ex.OwnerReferences {
		if isSandboxRef(ref) {
			return ref.UID
		}
	}
	return ""
}

func isSandboxRef(ref metav1.OwnerReference) bool {
	return ref.Kind == "Sandbox" && ref.APIVersion == dsv1alpha1.GroupVersion.String()
}
