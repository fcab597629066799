package checkpoint

import (
	ctrl "sigs.k8s.io/controller-runtime"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/archive"
)

// namespaceQuotaRefused handles a capture the namespace's cap on this node left no room for, before anything
// was frozen: it waits while only the namespace's captures under way hold the room, and fails for good when
// its archives kept fill the cap (deleting some of its Checkpoints makes room for new ones).
func (r *Reconciler) namespaceQuotaRefused(ckpt *dsv1alpha1.Checkpoint, q *archive.NamespaceQuotaError) ctrl.Result {
	if q.Transient() {
		r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonWaitingForStore,
			"waiting for captures under way in namespace %s on node %s: %v", q.Namespace, r.Options.Node, q)
		return ctrl.Result{RequeueAfter: storeRetry}
	}
	r.fail(ckpt, dsv1alpha1.ReasonNamespaceCheckpointQuotaExceeded,
		"the Checkpoints of namespace %s stored on node %s hold %d bytes of the %d bytes the agent allows a namespace there (--checkpoint-bytes-per-namespace); nothing was captured; delete Checkpoints of this namespace stored on node %s to make room",
		q.Namespace, r.Options.Node, q.Used, q.Limit, r.Options.Node)
	return ctrl.Result{}
}

// namespaceQuotaPassed fails a capture cut off at the room its namespace had left on this node: storing it
// would have taken the namespace past its cap. The archive was discarded, so nothing of it is kept.
func (r *Reconciler) namespaceQuotaPassed(ckpt *dsv1alpha1.Checkpoint, sbx *dsv1alpha1.Sandbox, room int64, q *archive.NamespaceQuotaError) {
	r.fail(ckpt, dsv1alpha1.ReasonNamespaceCheckpointQuotaExceeded,
		"the workspace archive of Sandbox %q passed %d bytes, the room namespace %s has left on node %s: its Checkpoints there hold %d bytes of the %d bytes the agent allows a namespace (--checkpoint-bytes-per-namespace); nothing was stored; delete Checkpoints of this namespace stored on node %s to make room",
		sbx.Name, room, q.Namespace, r.Options.Node, q.Used, q.Limit, r.Options.Node)
}
