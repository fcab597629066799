package sandbox

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
)

// reconcileDelete removes everything Docker holds for the Sandbox and lets the Sandbox go only once Docker
// confirms that nothing is left. A removal that fails or whose outcome is uncertain keeps the finalizer,
// says so in the conditions, and is retried with backoff.
func (r *Reconciler) reconcileDelete(ctx context.Context, sbx *dsv1alpha1.Sandbox) (ctrl.Result, error) {
	r.probes.Forget(client.ObjectKeyFromObject(sbx))
	r.restores.Forget(sbx.UID)
	r.Idle.Forget(sbx.UID)
	r.Wake.Cancel(client.ObjectKeyFromObject(sbx)) // a deletion starts nothing: no pass at a startup deadline
	applyFinding(sbx, found(factDeleting, dsv1alpha1.ReasonDeleting, "removing the Sandbox's containers, network and workspace"))
	if err := r.removeOwned(ctx, sbx.UID, sbx.Spec.Services); err != nil {
		applyFinding(sbx, found(factDeleting, dsv1alpha1.ReasonCleanupFailed,
			"Docker has not confirmed the removal (%v); the Sandbox stays until it does", err))
		return ctrl.Result{}, err
	}
	patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(sbx, dsv1alpha1.FinalizerCleanup)
	switch err := r.Patch(ctx, sbx, patch); {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// A stale read: the Sandbox changed since (confirmed again on fresh data), or an earlier pass let it go
		// and the cache has not seen it gone. This pass let go of nothing, so the Sandbox as it knows it keeps
		// the finalizer: its end records no second deletion root (docs/design/tracing.md) and no second event.
		controllerutil.AddFinalizer(sbx, dsv1alpha1.FinalizerCleanup)
		return ctrl.Result{RequeueAfter: status.StaleRetry}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("deleting the Sandbox: %w", err)
	}
	r.forgetAdmission(sbx.UID)
	ctrl.LoggerFrom(ctx).Info("Docker confirmed the Sandbox's resources are gone; finalizer removed")
	if usesSharedNetwork(sbx) {
		if err := r.releaseSharedNetworks(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Info("The node's shared network stays for now", "reason", err.Error())
		}
	}
	r.event(sbx, false, EventCleanedUp, "Delete", "every container, network and volume of the Sandbox is gone")
	return ctrl.Result{}, nil
}

// removeOwned removes everything of one Sandbox (found by its UID label) that Docker holds for this node,
// in the order docs/design/docker-mapping.md ("Deletion") gives: primaries, services in reverse start order, networks, the workspace holder,
// volumes. It then lists again, so that only Docker's own word that nothing is left ends it and frees the
// Sandbox's topology subnet.
func (r *Reconciler) removeOwned(ctx context.Context, uid types.UID, services []string) error {
	match := map[string]string{dsv1alpha1.LabelUID: string(uid)}
	containers, err := r.Driver.ListContainers(ctx, match)
	if err != nil {
		return fmt.Errorf("listing the Sandbox's containers: %w", err)
	}
	byName := map[string]dd.ContainerInfo{}
	for _, c := range containers {
		byName[c.Name] = c
	}
	var holders []string
	for _, c := range removalOrder(byName, services) {
		if _, role, _ := dd.OwnerFromLabels(c.Labels); role == dsv1alpha1.RoleHolder {
			holders = append(holders, c.Name)
			continue
		}
		if err := r.Driver.RemoveContainer(ctx, c.Name); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Name, err)
		}
	}
	networks, err := r.Driver.ListNetworks(ctx, match)
	if err != nil {
		return fmt.Errorf("listing the Sandbox's networks: %w", err)
	}
	for _, n := range networks {
		if err := r.Driver.RemoveNetwork(ctx, n.Name); err != nil {
			return fmt.Errorf("removing network %s: %w", n.Name, err)
		}
	}
	for _, name := range holders {
		if err := r.Driver.RemoveContainer(ctx, name); err != nil {
			return fmt.Errorf("removing the holder %s: %w", name, err)
		}
	}
	volumes, err := r.Driver.ListVolumes(ctx, match)
	if err != nil {
		return fmt.Errorf("listing the Sandbox's volumes: %w", err)
	}
	for _, v := range volumes {
		if err := r.Driver.RemoveVolume(ctx, v.Name); err != nil {
			return fmt.Errorf("removing volume %s: %w", v.Name, err)
		}
	}
	if err := r.confirmGone(ctx, match); err != nil {
		return err
	}
	r.releaseSubnet(string(uid))
	return nil
}

// RemoveOrphan removes everything Docker holds for the Sandbox uid, which no longer exists (the sweeper's
// orphans, internal/nodewatch): its spec, and so its service order, is gone.
func (r *Reconciler) RemoveOrphan(ctx context.Context, uid types.UID) error {
	return r.removeOwned(ctx, uid, nil)
}

// confirmGone lists once more what removeOwned removed.
func (r *Reconciler) confirmGone(ctx context.Context, match map[string]string) error {
	containers, err := r.Driver.ListContainers(ctx, match)
	if err != nil {
		return fmt.Errorf("listing the Sandbox's containers: %w", err)
	}
	networks, err := r.Driver.ListNetworks(ctx, match)
	if err != nil {
		return fmt.Errorf("listing the Sandbox's networks: %w", err)
	}
	volumes, err := r.Driver.ListVolumes(ctx, match)
	if err != nil {
		return fmt.Errorf("listing the Sandbox's volumes: %w", err)
	}
	if left := len(containers) + len(networks) + len(volumes); left > 0 {
		return fmt.Errorf("%d Docker objects of the Sandbox remain after removal", left)
	}
	return nil
}
