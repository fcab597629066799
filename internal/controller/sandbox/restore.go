package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/archive"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// ensureRestored gives a Sandbox with restoreFrom its Checkpoint's files: after the workspace exists (held
// by its holder) and before any service or the primary starts, the archive is verified against its digest
// and copied into the workspace through the holder, in the background (restore). It happens once:
// Restored=True records it, and a primary that exists (of any generation) proves it even when that record
// was lost with a status write (the pass that took the restore's outcome read a stale Sandbox); the record
// is then written again, without the copy's details.
func (r *Reconciler) ensureRestored(ctx context.Context, s *scope) (bool, error) {
	name := s.sbx.Spec.RestoreFrom
	switch {
	case name == "" || meta.IsStatusConditionTrue(s.sbx.Status.Conditions, dsv1alpha1.ConditionRestored):
		return false, nil
	case primaryMade(s):
		status.Set(s.sbx, dsv1alpha1.ConditionRestored, true, dsv1alpha1.ReasonRestored,
			fmt.Sprintf("the files of Checkpoint %q were copied into the workspace before its primary was made", name))
		return false, nil
	}
	if r.Archives == nil {
		s.note(factAwaiting, dsv1alpha1.ReasonRestoreNotSupported, "this agent keeps no checkpoint store, so it cannot restore Checkpoint %q", name)
		return true, nil
	}
	ckpt := &dsv1alpha1.Checkpoint{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.sbx.Namespace, Name: name}, ckpt)
	switch {
	case apierrors.IsNotFound(err):
		return s.notRestored(false, dsv1alpha1.ReasonCheckpointNotFound, "Checkpoint %q does not exist in namespace %s; waiting for it", name, s.sbx.Namespace)
	case err != nil:
		return s.fail(dsv1alpha1.ReasonRestoreFailed, "reading Checkpoint "+name, err)
	case ckpt.Status.NodeName != "" && ckpt.Status.NodeName != r.Options.Node && r.Registry == nil:
		return s.notRestored(true, dsv1alpha1.ReasonCheckpointOnOtherNode, "Checkpoint %q is stored on node %s, not on node %s that runs this Sandbox", name, ckpt.Status.NodeName, r.Options.Node)
	case ckpt.Status.Phase == dsv1alpha1.CheckpointFailed:
		return s.notRestored(true, dsv1alpha1.ReasonCheckpointNotReady, "Checkpoint %q failed: %s", name, readyMessage(ckpt))
	case ckpt.Status.Phase != dsv1alpha1.CheckpointReady:
		return s.notRestored(false, dsv1alpha1.ReasonCheckpointNotReady, "waiting for Checkpoint %q to be Ready", name)
	}
	return r.restore(ctx, s, ckpt)
}

// defaultRestoreConcurrency is how many restores run at once when Options.RestoreConcurrency is 0.
const defaultRestoreConcurrency = 2

// errRestoreCancelled is the outcome of a restore that never ran: the agent stops.
var errRestoreCancelled = errors.New("the restore was cancelled")

// restoreResult is how a restore in the background ended: err, with what it was doing, when it failed.
type restoreResult struct {
	checkpoint string
	uid        types.UID // the Checkpoint's: names its artifact in the checkpoint registry
	namespace  string
	archive    archive.Archive
	took       time.Duration
	doing      string
	err        error
}

// restore has the Checkpoint's archive verified and copied into the workspace in the background
// (copyIn), off the reconcile workers: a large archive takes a minute or more, which must delay no other
// Sandbox's pass. The Sandbox waits in Starting (Restoring) until the restore's end wakes it; the pass
// that follows takes its outcome, once, and goes on or fails as the copy did.
func (r *Reconciler) restore(ctx context.Context, s *scope, ckpt *dsv1alpha1.Checkpoint) (bool, error) {
	res, ok := r.restores.Take(s.sbx.UID)
	if !ok {
		r.startRestore(s, ckpt)
		s.note(factBuilding, dsv1alpha1.ReasonRestoring, "copying the files of Checkpoint %q into the workspace", ckpt.Name)
		return true, nil
	}
	switch {
	case errors.Is(res.err, archive.ErrMissing) || errors.Is(res.err, archive.ErrCorrupt):
		return s.notRestored(true, dsv1alpha1.ReasonRestoreFailed, "Checkpoint %q cannot be restored: %v", res.checkpoint, res.err)
	case res.err != nil:
		return s.fail(dsv1alpha1.ReasonRestoreFailed, res.doing, res.err)
	}
	msg := fmt.Sprintf("the files of Checkpoint %q (%s, %d bytes) were copied into the workspace in %s", res.checkpoint, res.archive.Digest, res.archive.Size, res.took)
	status.Set(s.sbx, dsv1alpha1.ConditionRestored, true, dsv1alpha1.ReasonRestored, msg)
	r.event(s.sbx, false, EventRestored, "Restore", "%s", msg)
	ctrl.LoggerFrom(ctx).Info("Restored", "checkpoint", res.checkpoint, "digest", res.archive.Digest, "duration", res.took)
	return false, nil
}

// startRestore starts the Sandbox's restore unless one is running or its outcome waits to be taken. It is
// keyed by the Sandbox's UID, as the workspace is: a roll does not cut it short, the Sandbox's deletion
// does (reconcileDelete). Its end wakes the Sandbox.
func (r *Reconciler) startRestore(s *scope, ckpt *dsv1alpha1.Checkpoint) {
	key, holder, deadline := s.key(), s.holderName(), s.startupDeadline
	res := restoreResult{checkpoint: ckpt.Name, uid: ckpt.UID, namespace: ckpt.Namespace, archive: archive.Archive{Digest: ckpt.Status.Digest, Size: ckpt.Status.SizeBytes}}
	cancelled := res
	cancelled.doing, cancelled.err = "restoring Checkpoint "+ckpt.Name, errRestoreCancelled
	r.restores.Start(r.Wake.Context(), s.sbx.UID, positiveOr(r.Options.RestoreConcurrency, defaultRestoreConcurrency),
		func(ctx context.Context) restoreResult { return r.copyIn(ctx, holder, deadline, res) },
		cancelled, func() { r.Wake.Now(key) })
}

// copyIn verifies the archive of res byte for byte, then streams it into the workspace through its holder,
// all before the startup deadline (none when zero): a restore still running then is cut short, and the
// start fails with RestoreTimeout.
func (r *Reconciler) copyIn(ctx context.Context, holder string, deadline time.Time, res restoreResult) restoreResult {
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	if err := ctx.Err(); err != nil { // the deadline passed while it waited for its turn
		res.doing, res.err = "restoring Checkpoint "+res.checkpoint, err
		return res
	}
	start := time.Now()
	f, done, err := r.openArchive(ctx, res)
	if err != nil {
		res.doing, res.err = "reading the archive of Checkpoint "+res.checkpoint, err
		return res
	}
	defer done()
	if err := r.Driver.CopyTo(ctx, holder, topology.HolderMountPath, f); err != nil {
		res.doing, res.err = "copying Checkpoint "+res.checkpoint+" into the workspace", err
		return res
	}
	res.took = time.Since(start).Round(time.Millisecond)
	return res
}

// primaryMade tells whether a primary of any generation exists: one is made only once the workspace is
// restored.
func primaryMade(s *scope) bool {
	for _, c := range s.containers {
		if _, role, _ := dd.OwnerFromLabels(c.Labels); role == dsv1alpha1.RolePrimary {
			return true
		}
	}
	return false
}

// notRestored holds the Sandbox in Pending, saying why its restore cannot happen (yet). stalled says that
// it never will without a new Sandbox (restoreFrom cannot change).
func (s *scope) notRestored(stalled bool, reason, format string, args ...any) (bool, error) {
	if stalled {
		s.note(factUnrestorable, reason, format, args...)
	} else {
		s.note(factAwaiting, reason, format, args...)
	}
	status.Set(s.sbx, dsv1alpha1.ConditionRestored, false, reason, s.finding.message)
	return true, nil
}

func readyMessage(ckpt *dsv1alpha1.Checkpoint) string {
	if c := meta.FindStatusCondition(ckpt.Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return "no reason given"
}

// restoreBinding says whether this node may bind an unbound Sandbox: one that restores from a Checkpoint
// runs only on the node that stores it, or on any node when the agents share a checkpoint registry. Until
// that Checkpoint is taken on by a node, wait says why in words every agent would use; when another node
// stores it (and there is no registry), that node's agent binds it and wait is nil.
func (r *Reconciler) restoreBinding(ctx context.Context, sbx *dsv1alpha1.Sandbox) (mayBind bool, wait *finding, err error) {
	name := sbx.Spec.RestoreFrom
	if name == "" {
		return true, nil, nil
	}
	ckpt := &dsv1alpha1.Checkpoint{}
	err = r.Get(ctx, client.ObjectKey{Namespace: sbx.Namespace, Name: name}, ckpt)
	switch {
	case apierrors.IsNotFound(err):
		return false, &finding{fact: factAwaiting, reason: dsv1alpha1.ReasonCheckpointNotFound,
			message: fmt.Sprintf("Checkpoint %q does not exist in namespace %s; the Sandbox is bound to the node that stores it", name, sbx.Namespace)}, nil
	case err != nil:
		return false, nil, fmt.Errorf("reading Checkpoint %s: %w", name, err)
	case ckpt.Status.NodeName == "":
		return false, &finding{fact: factAwaiting, reason: dsv1alpha1.ReasonCheckpointNotReady,
			message: fmt.Sprintf("Checkpoint %q is not stored on any node yet; the Sandbox is bound to the node that stores it", name)}, nil
	}
	return r.Registry != nil || ckpt.Status.NodeName == r.Options.Node, nil, nil
}

// sandboxesRestoringFrom maps a Checkpoint to the Sandboxes (bound here or unbound) that restore from it, so
// that they move on as soon as it is stored.
func (r *Reconciler) sandboxesRestoringFrom(ctx context.Context, ckpt client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, reader := range []client.Reader{r.Client, r.Unbound} {
		var list dsv1alpha1.SandboxList
		if err := reader.List(ctx, &list, client.InNamespace(ckpt.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the Sandboxes that restore from a Checkpoint", "checkpoint", ckpt.GetName())
			continue
		}
		for _, sbx := range list.Items {
			if sbx.Spec.RestoreFrom == ckpt.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sbx)})
			}
		}
	}
	return out
}

func positiveOr(n, fallback int) int {
	if n <= 0 {
		return fallback
	}
	return n
}
