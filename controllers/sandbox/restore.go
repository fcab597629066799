package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/controllers/status"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/archive"
)

// ensureRestored gives a Sandbox with restoreFrom its Checkpoint's files: after the workspace exists (held
// by its holder) and before any service or the primary starts, the archive is verified against its digest
// and copied into the workspace through the holder. It happens once: Restored=True records it, and a
// primary that exists (of any generation) proves it even when that record was lost with a status write.
func (r *SandboxReconciler) ensureRestored(ctx context.Context, s *scope) (bool, error) {
	name := s.sbx.Spec.RestoreFrom
	if name == "" || restored(s) {
		return false, nil
	}
	if r.Archives == nil {
		s.waiting(dsv1alpha1.SandboxPending, dsv1alpha1.ReasonRestoreNotSupported, "this agent keeps no checkpoint store, so it cannot restore Checkpoint %q", name)
		return true, nil
	}
	ckpt := &dsv1alpha1.Checkpoint{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.sbx.Namespace, Name: name}, ckpt)
	switch {
	case apierrors.IsNotFound(err):
		return s.notRestored(false, dsv1alpha1.ReasonCheckpointNotFound, "Checkpoint %q does not exist in namespace %s; waiting for it", name, s.sbx.Namespace)
	case err != nil:
		return s.fail(dsv1alpha1.ReasonRestoreFailed, "reading Checkpoint "+name, err)
	case ckpt.Status.NodeName != "" && ckpt.Status.NodeName != r.Options.Node:
		return s.notRestored(true, dsv1alpha1.ReasonCheckpointOnOtherNode, "Checkpoint %q is stored on node %s, not on node %s that runs this Sandbox", name, ckpt.Status.NodeName, r.Options.Node)
	case ckpt.Status.Phase == dsv1alpha1.CheckpointFailed:
		return s.notRestored(true, dsv1alpha1.ReasonCheckpointNotReady, "Checkpoint %q failed: %s", name, readyMessage(ckpt))
	case ckpt.Status.Phase != dsv1alpha1.CheckpointReady:
		return s.notRestored(false, dsv1alpha1.ReasonCheckpointNotReady, "waiting for Checkpoint %q to be Ready", name)
	}
	return r.restore(ctx, s, ckpt)
}

// restore verifies the Checkpoint's archive byte for byte, then streams it into the workspace.
func (r *SandboxReconciler) restore(ctx context.Context, s *scope, ckpt *dsv1alpha1.Checkpoint) (bool, error) {
	start := time.Now()
	f, err := r.Archives.Open(archive.Archive{Digest: ckpt.Status.Digest, Size: ckpt.Status.SizeBytes})
	switch {
	case errors.Is(err, archive.ErrMissing) || errors.Is(err, archive.ErrCorrupt):
		return s.notRestored(true, dsv1alpha1.ReasonRestoreFailed, "Checkpoint %q cannot be restored: %v", ckpt.Name, err)
	case err != nil:
		return s.fail(dsv1alpha1.ReasonRestoreFailed, "reading the archive of Checkpoint "+ckpt.Name, err)
	}
	defer f.Close()
	if err := r.Driver.CopyTo(ctx, s.holderName(), HolderMountPath, f); err != nil {
		return s.fail(dsv1alpha1.ReasonRestoreFailed, "copying Checkpoint "+ckpt.Name+" into the workspace", err)
	}
	took := time.Since(start).Round(time.Millisecond)
	msg := fmt.Sprintf("the files of Checkpoint %q (%s, %d bytes) were copied into the workspace in %s", ckpt.Name, ckpt.Status.Digest, ckpt.Status.SizeBytes, took)
	status.Set(s.sbx, dsv1alpha1.ConditionRestored, true, dsv1alpha1.ReasonRestored, msg)
	r.event(s.sbx, false, EventRestored, "Restore", "%s", msg)
	ctrl.LoggerFrom(ctx).Info("Restored", "checkpoint", ckpt.Name, "digest", ckpt.Status.Digest, "duration", took)
	return false, nil
}

// restored tells whether the workspace has its Checkpoint's files already.
func restored(s *scope) bool {
	if meta.IsStatusConditionTrue(s.sbx.Status.Conditions, dsv1alpha1.ConditionRestored) {
		return true
	}
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
		s.stalled(dsv1alpha1.SandboxPending, reason, format, args...)
	} else {
		s.waiting(dsv1alpha1.SandboxPending, reason, format, args...)
	}
	status.Set(s.sbx, dsv1alpha1.ConditionRestored, false, reason, s.outcome.message)
	return true, nil
}

func readyMessage(ckpt *dsv1alpha1.Checkpoint) string {
	if c := meta.FindStatusCondition(ckpt.Status.Conditions, dsv1alpha1.ConditionReady); c != nil {
		return c.Message
	}
	return "no reason given"
}

// restoreBinding says whether this node may bind an unbound Sandbox: one that restores from a Checkpoint
// runs only on the node that stores it. Until that Checkpoint is taken on by a node, wait says why in words
// every agent would use; when another node stores it, that node's agent binds it and wait is nil.
func (r *SandboxReconciler) restoreBinding(ctx context.Context, sbx *dsv1alpha1.Sandbox) (mayBind bool, wait *outcome, err error) {
	name := sbx.Spec.RestoreFrom
	if name == "" {
		return true, nil, nil
	}
	ckpt := &dsv1alpha1.Checkpoint{}
	err = r.Get(ctx, client.ObjectKey{Namespace: sbx.Namespace, Name: name}, ckpt)
	switch {
	case apierrors.IsNotFound(err):
		return false, &outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonCheckpointNotFound,
			message: fmt.Sprintf("Checkpoint %q does not exist in namespace %s; the Sandbox is bound to the node that stores it", name, sbx.Namespace)}, nil
	case err != nil:
		return false, nil, err
	case ckpt.Status.NodeName == "":
		return false, &outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonCheckpointNotReady,
			message: fmt.Sprintf("Checkpoint %q is not stored on any node yet; the Sandbox is bound to the node that stores it", name)}, nil
	}
	return ckpt.Status.NodeName == r.Options.Node, nil, nil
}

// sandboxesRestoringFrom maps a Checkpoint to the Sandboxes (bound here or unbound) that restore from it, so
// that they move on as soon as it is stored.
func (r *SandboxReconciler) sandboxesRestoringFrom(ctx context.Context, ckpt client.Object) []reconcile.Request {
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
