package execution

import (
	"context"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// patchWritten writes change onto the status of a launched Execution, at first onto launched itself: the
// Execution as this agent last wrote it, at that write's resourceVersion. Nothing else writes a running
// Execution's status, so that write usually stands, and spares a read from the API server on each of a
// run's writes. If anything wrote the Execution since (a conflict), each further try reads it afresh and
// applies says whether change still applies to what it read (false: leave it, with applies's error if
// any). On success launched becomes the Execution as written, for the run's next write.
func (r *Reconciler) patchWritten(ctx context.Context, launched *dsv1alpha1.Execution, applies func(*dsv1alpha1.Execution) (bool, error), change func(*dsv1alpha1.Execution)) (written bool, err error) {
	ex := launched.DeepCopy()
	if ex.ResourceVersion == "" { // no version to hold the write to: read one
		ex = nil
	}
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if ex == nil {
			ex = &dsv1alpha1.Execution{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(launched), ex); err != nil {
				return err //nolint:wrapcheck // the callers say what they were writing
			}
			if ok, err := applies(ex); !ok {
				return err
			}
		}
		before := ex.DeepCopy()
		change(ex)
		if err := r.Status().Patch(ctx, ex, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			ex = nil
			return err //nolint:wrapcheck // as above
		}
		written = true
		return nil
	})
	if written {
		*launched = *ex
	}
	return written, err
}
