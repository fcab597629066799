package status

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StaleRetry is how soon a pass that worked from a stale read runs again; the watch event of the newer
// object usually brings it first.
const StaleRetry = 250 * time.Millisecond

// Pass remembers an object as a reconcile pass found it, so that the pass can write the status it arrived
// at once, at its end.
type Pass[T Object] struct {
	client client.Client
	before T
}

// Begin snapshots obj at the start of a pass. Writes the pass makes to obj's metadata (finalizers) must come
// before Begin: the status write is guarded by the snapshot's resourceVersion.
func Begin[T Object](c client.Client, obj T) *Pass[T] {
	return &Pass[T]{client: c, before: obj.DeepCopyObject().(T)}
}

// Before is the object as the pass found it.
func (p *Pass[T]) Before() T { return p.before }

// End writes obj's status when it changed, guarded by the resourceVersion the pass started from, and
// reports whether the pass's status stands (written, or unchanged). The generation counts as observed only
// after a pass that met no error. A transient API error is retried within the pass (RetryTransient); one
// that persists is returned, so that the pass backs off and decides again. A conflict (the pass worked from
// a stale read) or a vanished object is not an error worth reporting: the pass is run again soon on fresh
// data. Use it deferred:
//
//	defer func() { pass.End(ctx, obj, &result, &reterr) }()
func (p *Pass[T]) End(ctx context.Context, obj T, result *ctrl.Result, reterr *error) (stands bool) {
	if *reterr == nil {
		obj.SetObservedGeneration(obj.GetGeneration())
	}
	if equality.Semantic.DeepEqual(p.before.StatusValue(), obj.StatusValue()) {
		return true
	}
	err := RetryTransient(ctx, func() error {
		return p.client.Status().Patch(ctx, obj, client.MergeFromWithOptions(p.before, client.MergeFromWithOptimisticLock{}))
	})
	switch {
	case err == nil:
		return true
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		ctrl.LoggerFrom(ctx).V(1).Info("Status was written from a stale read; running again")
		if *reterr == nil {
			*result = ctrl.Result{RequeueAfter: StaleRetry}
		}
		return false
	}
	*reterr = errors.Join(*reterr, err)
	return false
}

// RequeueOnConflict turns a conflict (a write from a stale read) into a quiet, quick retry.
func RequeueOnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: StaleRetry}, nil
	}
	return ctrl.Result{}, err
}
