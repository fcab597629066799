package checkpoint

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// holderRetry is how soon a capture waiting for its Sandbox's workspace holder looks again: a new session's
// holder starts on the pass right after the Sandbox came Ready (docs/design/docker-mapping.md, "Why the
// holder exists").
const holderRetry = 500 * time.Millisecond

// awaitHolder tells whether the capture must wait because the Sandbox's workspace holder, which it copies the
// workspace out through, does not run yet; it records the wait. A Docker error is returned for backoff.
func (r *Reconciler) awaitHolder(ctx context.Context, ckpt *dsv1alpha1.Checkpoint, sbx *dsv1alpha1.Sandbox) (bool, ctrl.Result, error) {
	holder, err := r.Driver.ObserveContainer(ctx, topology.NamesOf(sbx).Holder())
	switch {
	case dd.IsUnavailable(err):
		r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonDockerUnavailable, "Docker did not answer; retrying")
		return true, ctrl.Result{}, fmt.Errorf("observing the workspace holder: %w", err)
	case err != nil:
		return true, ctrl.Result{}, fmt.Errorf("observing the workspace holder: %w", err)
	case holder.State == dd.StateRunning:
		return false, ctrl.Result{}, nil
	}
	r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonWaitingForSandbox,
		"waiting for the workspace holder of Sandbox %q to start", sbx.Name)
	return true, ctrl.Result{RequeueAfter: holderRetry}, nil
}
