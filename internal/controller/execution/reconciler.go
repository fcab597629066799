// Package execution holds the Execution reconciler: it runs the commands of Executions in the session
// Sandboxes bound to its node, one at a time per Sandbox in creation order, and records their outcome. It
// names containers through internal/topology and hands poisonings to the Sandbox reconciler through
// internal/handoff, never importing it.
package execution

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/status"
)

// Options are the node's policy for Executions.
type Options struct {
	Node           string // this agent's node name
	MaxOutputBytes int    // node-wide ceiling of spec.maxOutputBytes, per stream
	// SupervisorImage holds the supervisor commands run under (the holder image; dd.Supervision.Image).
	SupervisorImage string
	// SandboxGrace is how long after its creation an Execution that no agent has taken waits for its Sandbox
	// to exist before it fails with SandboxNotFound; zero means DefaultSandboxGrace.
	SandboxGrace time.Duration
}

// Reconciler runs the Executions of the session Sandboxes bound to this node, one at a time per
// Sandbox in creation order. Client reads Executions (every namespace, output stripped) and this node's
// Sandboxes from the manager's cache; APIReader reads past it where a stale read would start a command
// that must not run, or end one as Lost that is not.
type Reconciler struct {
	client.Client
	APIReader client.Reader
	Driver    dd.Driver
	Recorder  events.EventRecorder
	Runs      *Runs             // this agent's runs; the Sandbox reconciler reads them as its Commands
	Verdicts  *handoff.Verdicts // poisonings handed to the Sandbox reconciler, the one writer of Sandbox status
	Freezes   *handoff.Freezes  // the lock between captures and commands, shared with the Checkpoint reconciler; required
	Idle      *handoff.Idle     // sessions' use: a command keeps its Sandbox awake and thaws one frozen for idleness; nil: none
	Options   Options

	base     context.Context         // commands run until the agent stops (set by SetupWithManager)
	ended    chan event.GenericEvent // Executions whose run has ended
	freed    chan event.GenericEvent // Sandboxes a capture or a command has let go of
	arrivals sync.Map                // Execution UID -> metav1.MicroTime the watch delivered it, until stamped
}

// +kubebuilder:rbac:groups=dockside.dev,resources=executions,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=dockside.dev,resources=executions/status,verbs=get;update;patch

// Reconcile gets the Execution and, if its Sandbox is this node's, expires it when finished, ends it as Lost
// when it was left Running by an agent that is gone, or moves it through the queue towards its run. A
// deleted Execution has its run cancelled. The status is written once, at the end; a command starts only
// after that write recorded it Running.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	ex := &dsv1alpha1.Execution{}
	if err := r.Get(ctx, req.NamespacedName, ex); err != nil {
		if apierrors.IsNotFound(err) {
			r.Runs.cancel(req.NamespacedName, "") // deleted while running: the container is killed
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Runs.cancel(req.NamespacedName, ex.UID) // a run of an earlier Execution of the same name
	switch {
	case !ex.DeletionTimestamp.IsZero():
		r.Runs.cancel(req.NamespacedName, "")
		return ctrl.Result{}, nil
	case r.Runs.holds(req.NamespacedName, ex.UID):
		return ctrl.Result{}, nil // the run writes its own outcome
	}
	sbx, err := r.sandbox(ctx, ex)
	if err != nil {
		return ctrl.Result{}, err
	}
	if sbx == nil && ex.Status.NodeName != r.Options.Node {
		return ctrl.Result{}, nil // another node's, or no agent's yet (untakenReconciler's)
	}
	if sbx != nil && !finished(ex) && ex.Status.Phase != dsv1alpha1.ExecutionRunning {
		err := r.ensureOwner(ctx, ex, sbx) // before the snapshot: it changes the resourceVersion
		switch {
		case apierrors.IsConflict(err):
			return ctrl.Result{RequeueAfter: status.StaleRetry}, nil
		case err != nil:
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	var start *runPlan
	pass := status.Begin(r.Client, ex)
	defer func() {
		stands := r.endPass(ctx, pass, ex, &result, &reterr)
		switch {
		case start == nil:
		case stands && reterr == nil:
			r.launch(ex, *start) // only once the status saying Running stands
		default:
			r.Freezes.EndRun(start.target.UID) // the command will not start: captures may have the Sandbox
		}
	}()

	switch {
	case finished(ex):
		r.Runs.forget(ex.UID) // an outcome kept is written
		return r.expire(ctx, ex)
	case ex.Status.Phase == dsv1alpha1.ExecutionRunning:
		return ctrl.Result{}, r.endRunning(ctx, ex, sbx)
	default:
		start, err = r.reconcileQueued(ctx, ex, sbx)
		return ctrl.Result{}, err
	}
}

// sandbox reads the Execution's Sandbox from this node's cache; nil when it is not bound here (or gone).
func (r *Reconciler) sandbox(ctx context.Context, ex *dsv1alpha1.Execution) (*dsv1alpha1.Sandbox, error) {
	sbx := &dsv1alpha1.Sandbox{}
	err := r.Get(ctx, types.NamespacedName{Namespace: ex.Namespace, Name: ex.Spec.SandboxName}, sbx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Sandbox %s: %w", ex.Spec.SandboxName, err)
	}
	return sbx, nil
}

// expire deletes a finished Execution ttlSecondsAfterFinished after it ended.
func (r *Reconciler) expire(ctx context.Context, ex *dsv1alpha1.Execution) (ctrl.Result, error) {
	ttl := ex.Spec.TTLSecondsAfterFinished
	if ttl == nil || ex.Status.FinishTime == nil {
		return ctrl.Result{}, nil
	}
	if left := time.Until(ex.Status.FinishTime.Add(time.Duration(*ttl) * time.Second)); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	uid := ex.UID
	return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, ex, client.Preconditions{UID: &uid}))
}

func finished(ex *dsv1alpha1.Execution) bool {
	return ex.Status.Phase == dsv1alpha1.ExecutionSucceeded || ex.Status.Phase == dsv1alpha1.ExecutionFailed
}
