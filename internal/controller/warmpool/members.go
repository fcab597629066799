package warmpool

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// members lists the pool's warm Sandboxes on every node, from the API server: those it made (its label and
// its UID as owner), not claimed, not being deleted. taken is every name the pool's label holds, claimed and
// terminating ones included, which new members must not reuse.
func (r *Reconciler) members(ctx context.Context, pool *dsv1alpha1.SandboxWarmPool) ([]*dsv1alpha1.Sandbox, map[string]bool, error) {
	var list dsv1alpha1.SandboxList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(pool.Namespace), client.MatchingLabels{dsv1alpha1.LabelPool: pool.Name}); err != nil {
		return nil, nil, fmt.Errorf("listing the Sandboxes of SandboxWarmPool %s: %w", pool.Name, err)
	}
	taken := map[string]bool{}
	var out []*dsv1alpha1.Sandbox
	for i := range list.Items {
		sbx := &list.Items[i]
		taken[sbx.Name] = true
		if warm(sbx, pool.UID) {
			out = append(out, sbx)
		}
	}
	return out, taken, nil
}

// warm tells whether sbx is an unclaimed member, not being deleted, of the pool with that UID.
func warm(sbx *dsv1alpha1.Sandbox, pool types.UID) bool {
	owner := metav1.GetControllerOf(sbx)
	return owner != nil && owner.UID == pool && sbx.Labels[dsv1alpha1.LabelClaim] == "" && sbx.DeletionTimestamp.IsZero()
}

// deleteOrphans deletes the unclaimed Sandboxes bound to this node that carry the pool's label but were made
// by no pool of that UID: all of them once the pool is gone (uid ""), those of an earlier pool of the same
// name otherwise. Claimed ones are their claim's. The node's cache is enough: only this node's are its to
// delete.
func (r *Reconciler) deleteOrphans(ctx context.Context, pool types.NamespacedName, uid types.UID) error {
	var list dsv1alpha1.SandboxList
	if err := r.List(ctx, &list, client.InNamespace(pool.Namespace), client.MatchingLabels{dsv1alpha1.LabelPool: pool.Name}); err != nil {
		return fmt.Errorf("listing the node's Sandboxes of SandboxWarmPool %s: %w", pool, err)
	}
	for i := range list.Items {
		sbx := &list.Items[i]
		if sbx.Labels[dsv1alpha1.LabelClaim] != "" || !sbx.DeletionTimestamp.IsZero() || (uid != "" && warm(sbx, uid)) {
			continue
		}
		if uid == "" && !r.poolGone(ctx, pool) {
			return nil // the cache was behind: a pool of that name is back
		}
		if err := r.Delete(ctx, sbx, client.Preconditions{UID: &sbx.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Sandbox %s of a SandboxWarmPool that is gone: %w", sbx.Name, err)
		}
	}
	return nil
}

// poolGone asks the API server, not the cache, whether the pool is gone or going.
func (r *Reconciler) poolGone(ctx context.Context, key types.NamespacedName) bool {
	pool := &dsv1alpha1.SandboxWarmPool{}
	err := r.APIReader.Get(ctx, key, pool)
	return apierrors.IsNotFound(err) || (err == nil && !pool.DeletionTimestamp.IsZero())
}

// waitingForRoom counts the Sandboxes of no pool that wait unbound because no node had room for them.
func (r *Reconciler) waitingForRoom(ctx context.Context) (int, error) {
	var list dsv1alpha1.SandboxList
	if err := r.Unbound.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing the unbound Sandboxes: %w", err)
	}
	n := 0
	for i := range list.Items {
		sbx := &list.Items[i]
		c := findCondition(sbx, dsv1alpha1.ConditionScheduled)
		if sbx.Labels[dsv1alpha1.LabelPool] == "" && c != nil && c.Status == metav1.ConditionFalse && c.Reason == dsv1alpha1.ReasonNoCapacity {
			n++
		}
	}
	return n, nil
}
