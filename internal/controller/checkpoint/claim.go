package checkpoint

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// localSandbox is the Checkpoint's Sandbox when it is bound to this node (the manager's cache holds only
// those); nil otherwise.
func (r *Reconciler) localSandbox(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) (*dsv1alpha1.Sandbox, error) {
	sbx := &dsv1alpha1.Sandbox{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ckpt.Namespace, Name: ckpt.Spec.SandboxName}, sbx)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Sandbox %s: %w", ckpt.Spec.SandboxName, err)
	}
	return sbx, nil
}

// ensureFinalizer keeps a Checkpoint this node takes on until its archive, if any, is released.
func (r *Reconciler) ensureFinalizer(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) error {
	if controllerutil.ContainsFinalizer(ckpt, dsv1alpha1.FinalizerCleanup) {
		return nil
	}
	patch := client.MergeFromWithOptions(ckpt.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(ckpt, dsv1alpha1.FinalizerCleanup)
	if err := r.Patch(ctx, ckpt, patch); err != nil {
		return fmt.Errorf("adding the cleanup finalizer: %w", err)
	}
	return nil
}

// reportElsewhere handles a Checkpoint whose Sandbox is not bound to this node. One this node took on has
// lost its Sandbox for good. One no node took on waits; when its Sandbox is missing or unbound, every agent
// says so in the same words (so that agents never fight over it); when it is bound to another node, that
// node's agent takes it on and this one writes nothing.
func (r *Reconciler) reportElsewhere(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) (ctrl.Result, error) {
	name := ckpt.Spec.SandboxName
	sbx := &dsv1alpha1.Sandbox{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ckpt.Namespace, Name: name}, sbx)
	missing := apierrors.IsNotFound(err)
	if err != nil && !missing {
		return ctrl.Result{}, fmt.Errorf("reading Sandbox %s/%s: %w", ckpt.Namespace, name, err)
	}
	claimed := ckpt.Status.NodeName == r.Options.Node
	switch {
	case claimed && missing:
		r.fail(ckpt, dsv1alpha1.ReasonSandboxNotFound, "Sandbox %q was deleted before its workspace was captured", name)
	case claimed:
		r.fail(ckpt, dsv1alpha1.ReasonSandboxOnOtherNode, "Sandbox %q is no longer on node %s, which took this Checkpoint on", name, r.Options.Node)
	case missing:
		r.wait(ckpt, dsv1alpha1.CheckpointPending, dsv1alpha1.ReasonSandboxNotFound, "Sandbox %q does not exist in namespace %s; waiting for it", name, ckpt.Namespace)
	case sbx.Spec.NodeName == "":
		r.wait(ckpt, dsv1alpha1.CheckpointPending, dsv1alpha1.ReasonWaitingForSandbox, "Sandbox %q is not bound to a node yet", name)
	default:
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, nil
}

// reconcileNormal takes the Checkpoint on for this node and moves it on as its Sandbox allows: it fails
// when the Sandbox has nothing to capture any more, waits while the Sandbox comes up, records Capturing
// (so that status.nodeName is stored before any archive is), and captures on the pass after.
func (r *Reconciler) reconcileNormal(ctx context.Context, ckpt *dsv1alpha1.Checkpoint, sbx *dsv1alpha1.Sandbox) (ctrl.Result, error) {
	st := &ckpt.Status
	st.NodeName = r.Options.Node
	name := sbx.Name
	switch {
	case !sbx.DeletionTimestamp.IsZero():
		r.fail(ckpt, dsv1alpha1.ReasonSandboxNotRunning, "Sandbox %q is being deleted", name)
	case status.IsTrue(sbx, dsv1alpha1.ConditionTopologyPoisoned):
		r.fail(ckpt, dsv1alpha1.ReasonSandboxPoisoned, "Sandbox %q has a poisoned topology; its workspace is not captured", name)
	case sbx.Status.Phase == dsv1alpha1.SandboxSucceeded || sbx.Status.Phase == dsv1alpha1.SandboxFailed:
		r.fail(ckpt, dsv1alpha1.ReasonSandboxNotRunning, "Sandbox %q has ended (%s); only a running or paused Sandbox is captured", name, sbx.Status.Phase)
	case sbx.Status.Phase != dsv1alpha1.SandboxRunning && sbx.Status.Phase != dsv1alpha1.SandboxPaused:
		r.wait(ckpt, dsv1alpha1.CheckpointPending, dsv1alpha1.ReasonWaitingForSandbox, "waiting for Sandbox %q to run", name)
	case st.Phase != dsv1alpha1.CheckpointCapturing:
		r.wait(ckpt, dsv1alpha1.CheckpointCapturing, dsv1alpha1.ReasonCapturing, "capturing the workspace of Sandbox %q", name)
	default:
		if stale, err := r.stale(ctx, ckpt); stale || err != nil {
			return ctrl.Result{RequeueAfter: status.StaleRetry}, err
		}
		if wait, res, err := r.awaitHolder(ctx, ckpt, sbx); wait || err != nil {
			return res, err
		}
		return r.capture(ctx, ckpt, sbx)
	}
	return ctrl.Result{}, nil
}

// stale tells whether the API server holds a newer Checkpoint than the cache gave this pass. A capture
// freezes the Sandbox and stores an archive, so it must never run on a stale read: a pass that read
// Capturing from a cache not yet showing the previous pass's Failed or Ready would capture again, leaving an
// archive no Checkpoint names.
func (r *Reconciler) stale(ctx context.Context, ckpt *dsv1alpha1.Checkpoint) (bool, error) {
	live := &dsv1alpha1.Checkpoint{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ckpt), live); err != nil {
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err) // gone: its deletion brings a pass
	}
	return live.ResourceVersion != ckpt.ResourceVersion, nil
}
