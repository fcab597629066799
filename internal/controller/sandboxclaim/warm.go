package sandboxclaim

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/templates"
)

// bindWarm takes a warm Sandbox of this node for the claim: one write to the Sandbox, guarded by the
// resourceVersion it was read at, and the claim's status at the pass's end. It skips Sandboxes that another
// pass of this agent is taking (inFlight), and reports busy when only such ones were left: one of them may
// yet come free. A Sandbox changed since the cache showed it fails the write with a conflict, and the next
// one is tried. It touches no Docker object: the Sandbox runs already, and the claim's env reaches commands
// through spec.commandEnv.
func (r *Reconciler) bindWarm(ctx context.Context, claim *dsv1alpha1.SandboxClaim, pool *dsv1alpha1.SandboxWarmPool,
	tpl *dsv1alpha1.SandboxTemplate) (bound, busy bool, err error) {
	candidates, err := r.warmHere(ctx, pool)
	if err != nil {
		return false, false, err
	}
	key := client.ObjectKeyFromObject(pool)
	for _, sbx := range spread(candidates, claim, templates.Hash(tpl)) {
		if !r.flight.take(sbx, key) {
			busy = true
			continue
		}
		version := sbx.ResourceVersion
		patch := client.MergeFromWithOptions(sbx.DeepCopy(), client.MergeFromWithOptimisticLock{})
		templates.Claim(sbx, claim, tpl, sbx.Status.StartTime)
		err := r.Patch(ctx, sbx, patch)
		if err != nil {
			r.flight.untake(sbx, version)
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // it changed or went since the cache showed it: the next one
		}
		if apierrors.IsInvalid(err) {
			invalidLabels(claim)
			return true, false, nil
		}
		if apierrors.IsForbidden(err) {
			// A confinement policy older than the claim binding's exception (docs/deploy.md, "Agents: each
			// confined to its node") refuses it: start one cold rather than leave the claim waiting.
			ctrl.LoggerFrom(ctx).Info("Binding a warm Sandbox was refused; the claim gets a cold start", "sandbox", sbx.Name, "reason", err.Error())
			return false, false, nil
		}
		if err != nil {
			return false, false, fmt.Errorf("binding Sandbox %s to the claim: %w", sbx.Name, err)
		}
		r.flight.bound(claim)
		record(claim, sbx)
		status.Summarize(claim, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonClaimed,
			Message: fmt.Sprintf("Sandbox %s is Ready", sbx.Name)})
		claims.WithLabelValues(string(dsv1alpha1.ClaimWarm)).Inc()
		return true, false, nil
	}
	return false, busy, nil
}

// warmHere lists the pool's warm, Ready Sandboxes bound to this node, and forgets what passes took that the
// cache shows changed since.
func (r *Reconciler) warmHere(ctx context.Context, pool *dsv1alpha1.SandboxWarmPool) ([]*dsv1alpha1.Sandbox, error) {
	var list dsv1alpha1.SandboxList
	if err := r.List(ctx, &list, client.InNamespace(pool.Namespace), client.MatchingLabels{dsv1alpha1.LabelPool: pool.Name}); err != nil {
		return nil, fmt.Errorf("listing the node's Sandboxes of SandboxWarmPool %s: %w", pool.Name, err)
	}
	listed := map[types.UID]string{}
	var out []*dsv1alpha1.Sandbox
	for i := range list.Items {
		sbx := &list.Items[i]
		listed[sbx.UID] = sbx.ResourceVersion
		if claimable(sbx, pool) && sbx.Spec.NodeName == r.Options.Node {
			out = append(out, sbx)
		}
	}
	r.flight.prune(client.ObjectKeyFromObject(pool), listed)
	return out, nil
}

// warmElsewhere asks the API server whether another node holds a warm, Ready Sandbox of the pool.
func (r *Reconciler) warmElsewhere(ctx context.Context, pool *dsv1alpha1.SandboxWarmPool) (bool, error) {
	var list dsv1alpha1.SandboxList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(pool.Namespace), client.MatchingLabels{dsv1alpha1.LabelPool: pool.Name}); err != nil {
		return false, fmt.Errorf("listing the Sandboxes of SandboxWarmPool %s: %w", pool.Name, err)
	}
	return slices.ContainsFunc(list.Items, func(s dsv1alpha1.Sandbox) bool {
		return claimable(&s, pool) && s.Spec.NodeName != r.Options.Node
	}), nil
}

// claimable tells whether sbx is a warm member of the pool that a claim may take: made by it, and warm.
func claimable(sbx *dsv1alpha1.Sandbox, pool *dsv1alpha1.SandboxWarmPool) bool {
	owner := metav1.GetControllerOf(sbx)
	return owner != nil && owner.UID == pool.UID && warm(sbx)
}

// warm tells whether sbx is a pool's Sandbox that a claim may take: unclaimed, bound to a node, not being
// deleted, Ready and not paused.
func warm(sbx *dsv1alpha1.Sandbox) bool {
	return sbx.Labels[dsv1alpha1.LabelPool] != "" && sbx.Labels[dsv1alpha1.LabelClaim] == "" &&
		sbx.DeletionTimestamp.IsZero() && sbx.Spec.NodeName != "" &&
		meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionReady) &&
		!meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionPaused)
}

// spread orders the candidates so that claims made at once try different Sandboxes first: those of the
// current template before older ones, each group rotated by a hash of the claim's UID. Without it every
// claim would race for the same first Sandbox, and all but one would pay a conflict.
func spread(sbxs []*dsv1alpha1.Sandbox, claim *dsv1alpha1.SandboxClaim, hash string) []*dsv1alpha1.Sandbox {
	slices.SortFunc(sbxs, func(a, b *dsv1alpha1.Sandbox) int {
		ac, bc := a.Labels[dsv1alpha1.LabelTemplateHash] == hash, b.Labels[dsv1alpha1.LabelTemplateHash] == hash
		if ac != bc {
			if ac {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	h := fnv.New32a()
	_, _ = h.Write([]byte(claim.UID))
	current := 0
	for current < len(sbxs) && sbxs[current].Labels[dsv1alpha1.LabelTemplateHash] == hash {
		current++
	}
	rotate(sbxs[:current], int(h.Sum32()))
	rotate(sbxs[current:], int(h.Sum32()))
	return sbxs
}

// rotate turns s left by n places.
func rotate(s []*dsv1alpha1.Sandbox, n int) {
	if len(s) == 0 {
		return
	}
	n %= len(s)
	slices.Reverse(s[:n])
	slices.Reverse(s[n:])
	slices.Reverse(s)
}

// invalidLabels reports a claim whose labels the API server refused on its Sandbox: the only part of a
// binding that CEL on the claim does not check whole (the rule would cost more than the API server allows).
func invalidLabels(claim *dsv1alpha1.SandboxClaim) {
	status.Summarize(claim, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonInvalidLabels,
		Message: "the API server refused the claim's labels on the Sandbox: keys are an optional DNS prefix and '/' and at most 63 letters, digits, '-', '_' and '.', values at most 63 of them"})
}
