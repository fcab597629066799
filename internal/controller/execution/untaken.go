package execution

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// DefaultSandboxGrace is how long an Execution waits by default for a Sandbox that does not exist: a client
// may well create the Execution just before its Sandbox.
const DefaultSandboxGrace = 30 * time.Second

// untakenRecheck is how often each agent asks the API server again about the Sandbox of an Execution that no
// agent has taken although the Sandbox exists (it waits unbound for room, or for its node's agent): the
// Sandbox may yet be deleted before any node has it, which no watch of this agent sees. Every agent asks, once
// per such Execution, hence the long period.
const untakenRecheck = 5 * time.Minute

func (o Options) sandboxGrace() time.Duration {
	if o.SandboxGrace <= 0 {
		return DefaultSandboxGrace
	}
	return o.SandboxGrace
}

// untakenReconciler fails the Executions that no agent has taken (no nodeName) and whose Sandbox is not on
// this node, once the grace after their creation has passed and the Sandbox does not exist, and expires them
// by their TTL, so that they do not stay in every agent's cache for ever. It is a controller of its own, with
// its own queue, so that a flood of them never delays the Executions of this node.
//
// No node owns such an Execution, so every agent does this. Each reads the same answer from the API server and
// writes the same phase, reason and message, guarded by the resourceVersion its pass started from: the first
// write stands, the others conflict and find the Execution finished on their next pass. The agents' turns are
// staggered, so that the first usually writes alone (docs/design/executions.md).
type untakenReconciler struct{ *Reconciler }

func (u untakenReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	r := u.Reconciler
	ex := &dsv1alpha1.Execution{}
	if err := r.Get(ctx, req.NamespacedName, ex); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ex.Status.NodeName != "" || !ex.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // taken, or going
	}
	if sbx, err := r.sandbox(ctx, ex); err != nil || sbx != nil {
		return ctrl.Result{}, err // this node's: the Execution reconciler takes it
	}
	if finished(ex) {
		return r.expire(ctx, ex)
	}
	// Nothing is written while it waits: every agent sees it, and none has taken it.
	if wait, err := r.untakenWait(ctx, ex); err != nil || wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, err
	}
	pass := status.Begin(r.Client, ex)
	defer r.endPass(ctx, pass, ex, &result, &reterr)
	settle(ex, dsv1alpha1.ExecutionFailed, dsv1alpha1.ReasonSandboxNotFound,
		fmt.Sprintf("Sandbox %s does not exist in namespace %s; the command did not run", ex.Spec.SandboxName, ex.Namespace))
	return ctrl.Result{}, nil
}

// untakenWait says how long an untaken Execution is left alone before it is looked at again: until the grace
// after its creation and this agent's stagger have passed, or untakenRecheck while the API server has its
// Sandbox. Zero means it is time and the Sandbox does not exist: it fails.
func (r *Reconciler) untakenWait(ctx context.Context, ex *dsv1alpha1.Execution) (time.Duration, error) {
	if left := time.Until(ex.CreationTimestamp.Add(r.Options.sandboxGrace() + r.stagger(ex))); left > 0 {
		return left, nil
	}
	// Its metadata is enough to tell that it exists.
	sbx := &metav1.PartialObjectMetadata{}
	sbx.SetGroupVersionKind(dsv1alpha1.GroupVersion.WithKind("Sandbox"))
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ex.Namespace, Name: ex.Spec.SandboxName}, sbx)
	switch {
	case err == nil:
		return untakenRecheck, nil
	case apierrors.IsNotFound(err):
		return 0, nil
	}
	return 0, fmt.Errorf("reading Sandbox %s: %w", ex.Spec.SandboxName, err)
}

// stagger is this agent's turn at an untaken Execution, within a third of the grace after it: a hash of the
// node and the Execution's UID, so that a different agent usually goes first for each, and the others then
// find it finished in their cache instead of writing too. Should the first be down, the next comes seconds
// later.
func (r *Reconciler) stagger(ex *dsv1alpha1.Execution) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(r.Options.Node + "/" + string(ex.UID)))
	spread := uint64(r.Options.sandboxGrace()/3) + 1
	return time.Duration(h.Sum64() % spread)
}
