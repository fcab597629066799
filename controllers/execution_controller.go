package controllers

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// DefaultMaxExecOutputBytes is the node-wide ceiling of an Execution's maxOutputBytes unless the agent is told
// otherwise; it is also the most the CRD accepts.
const DefaultMaxExecOutputBytes = 262144

// ExecutionOptions are the node's policy for Executions.
type ExecutionOptions struct {
	Node           string // this agent's node name
	MaxOutputBytes int    // node-wide ceiling of spec.maxOutputBytes, per stream
}

// ExecutionReconciler runs the Executions of the session Sandboxes bound to this node, one at a time per
// Sandbox in creation order. Client reads Executions (every namespace, output stripped) and this node's
// Sandboxes from the manager's cache; APIReader reads past it where a stale read would start a command
// that must not run, or end one as Lost that is not.
type ExecutionReconciler struct {
	client.Client
	APIReader client.Reader
	Driver    dd.Driver
	Recorder  events.EventRecorder
	Runs      *ExecutionRuns
	Options   ExecutionOptions

	base     context.Context         // commands run until the agent stops (set by SetupWithManager)
	ended    chan event.GenericEvent // Executions whose run has ended
	arrivals sync.Map                // Execution UID -> metav1.MicroTime the watch delivered it, until stamped
}

// +kubebuilder:rbac:groups=dockside.dev,resources=executions,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=dockside.dev,resources=executions/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=dockside.dev,resources=sandboxes/status,verbs=get;update;patch

// Reconcile gets the Execution and, if its Sandbox is this node's, expires it when finished, ends it as Lost
// when it was left Running by an agent that is gone, or moves it through the queue towards its run. A
// deleted Execution has its run cancelled. The status is written once, at the end; a command starts only
// after that write recorded it Running.
func (r *ExecutionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
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
		return ctrl.Result{}, nil // another node's, or no agent's yet
	}
	if sbx != nil && !finished(ex) && ex.Status.Phase != dsv1alpha1.ExecutionRunning {
		err := r.ensureOwner(ctx, ex, sbx) // before the snapshot: it changes the resourceVersion
		switch {
		case apierrors.IsConflict(err):
			return ctrl.Result{RequeueAfter: staleRetry}, nil
		case err != nil:
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
	}

	var start *runTarget
	snapshot := ex.DeepCopy()
	defer func() {
		stands, err := r.patchStatus(ctx, snapshot, ex)
		switch {
		case err != nil:
			reterr = errors.Join(reterr, err)
		case !stands:
			result = ctrl.Result{RequeueAfter: staleRetry}
		case start != nil && reterr == nil:
			r.launch(ex, *start)
		}
	}()

	switch {
	case finished(ex):
		return r.expire(ctx, ex)
	case ex.Status.Phase == dsv1alpha1.ExecutionRunning:
		return ctrl.Result{}, r.endLost(ctx, ex)
	default:
		start, err = r.reconcileQueued(ctx, ex, sbx)
		return ctrl.Result{}, err
	}
}

// sandbox reads the Execution's Sandbox from this node's cache; nil when it is not bound here (or gone).
func (r *ExecutionReconciler) sandbox(ctx context.Context, ex *dsv1alpha1.Execution) (*dsv1alpha1.Sandbox, error) {
	sbx := &dsv1alpha1.Sandbox{}
	err := r.Get(ctx, types.NamespacedName{Namespace: ex.Namespace, Name: ex.Spec.SandboxName}, sbx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sbx, nil
}

// patchStatus writes the status once, when it changed, guarded by the resourceVersion the pass started
// from: a pass that worked from a stale read must not overwrite a newer status, nor start a command for an
// Execution deleted meanwhile. It reports whether the pass's status stands (written, or unchanged); a
// conflict is not an error worth reporting, the pass simply runs again on fresh data.
func (r *ExecutionReconciler) patchStatus(ctx context.Context, snapshot, ex *dsv1alpha1.Execution) (bool, error) {
	if equality.Semantic.DeepEqual(snapshot.Status, ex.Status) {
		return true, nil
	}
	ex.Status.ObservedGeneration = ex.Generation
	err := r.Status().Patch(ctx, ex, client.MergeFromWithOptions(snapshot, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		if finished(ex) && !finished(snapshot) {
			r.announce(ex)
		}
		return true, nil
	case apierrors.IsConflict(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Status was written from a stale read; running again")
		return false, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, err
}

// expire deletes a finished Execution ttlSecondsAfterFinished after it ended.
func (r *ExecutionReconciler) expire(ctx context.Context, ex *dsv1alpha1.Execution) (ctrl.Result, error) {
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
