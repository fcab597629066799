package sandboxclaim

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
)

// labelled lists the Sandboxes of this node and the unbound ones that carry the claim's label, whoever owns
// them.
func (r *Reconciler) labelled(ctx context.Context, claim types.NamespacedName) ([]*dsv1alpha1.Sandbox, error) {
	var out []*dsv1alpha1.Sandbox
	for _, c := range []client.Reader{r.Client, r.Unbound} {
		var list dsv1alpha1.SandboxList
		if err := c.List(ctx, &list, client.InNamespace(claim.Namespace), client.MatchingLabels{dsv1alpha1.LabelClaim: claim.Name}); err != nil {
			return nil, fmt.Errorf("listing the Sandboxes of SandboxClaim %s: %w", claim, err)
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// held is the Sandbox of this node (or unbound) that the claim holds: the one its status names, or, when a
// pass bound one but its status write was lost, the one it owns. nil when this node has none.
func (r *Reconciler) held(ctx context.Context, claim *dsv1alpha1.SandboxClaim) (*dsv1alpha1.Sandbox, error) {
	sbxs, err := r.labelled(ctx, client.ObjectKeyFromObject(claim))
	if err != nil {
		return nil, err
	}
	for _, sbx := range sbxs {
		if owned(sbx, claim.UID) && (claim.Status.SandboxName == "" || sbx.Name == claim.Status.SandboxName) {
			return sbx, nil
		}
	}
	return nil, nil
}

func owned(sbx *dsv1alpha1.Sandbox, claim types.UID) bool {
	owner := metav1.GetControllerOf(sbx)
	return owner != nil && owner.UID == claim
}

// follow records the Sandbox the claim holds, reports its readiness, and deletes any other Sandbox of this
// node that a losing agent's pass bound to the claim.
func (r *Reconciler) follow(ctx context.Context, claim *dsv1alpha1.SandboxClaim, held *dsv1alpha1.Sandbox) (ctrl.Result, error) {
	if claim.Status.SandboxName == "" {
		record(claim, held)
	}
	if err := r.deleteStrays(ctx, claim); err != nil {
		return ctrl.Result{}, err
	}
	if held == nil {
		sbx := &dsv1alpha1.Sandbox{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: claim.Namespace, Name: claim.Status.SandboxName}, sbx)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && !owned(sbx, claim.UID)):
			status.Summarize(claim, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonSandboxGone,
				Message: fmt.Sprintf("Sandbox %q was deleted: delete the claim and claim again", claim.Status.SandboxName)})
			return ctrl.Result{}, nil
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("reading Sandbox %s: %w", claim.Status.SandboxName, err)
		}
		held = sbx // on another node: its agent reports it too, from the same object
	}
	report(claim, held)
	return ctrl.Result{}, nil
}

// record names the Sandbox in the claim's status.
func record(claim *dsv1alpha1.SandboxClaim, sbx *dsv1alpha1.Sandbox) {
	claim.Status.SandboxName = sbx.Name
	claim.Status.Start = dsv1alpha1.ClaimCold
	if sbx.Labels[dsv1alpha1.LabelPool] != "" {
		claim.Status.Start = dsv1alpha1.ClaimWarm
	}
}

// report summarizes the claim from its Sandbox's readiness.
func report(claim *dsv1alpha1.SandboxClaim, sbx *dsv1alpha1.Sandbox) {
	ready := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
	switch {
	case ready != nil && ready.Status == metav1.ConditionTrue:
		status.Summarize(claim, status.Summary{Ready: true, Reason: dsv1alpha1.ReasonClaimed,
			Message: fmt.Sprintf("Sandbox %s is Ready", sbx.Name)})
	case meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionStalled):
		stalled := meta.FindStatusCondition(sbx.Status.Conditions, dsv1alpha1.ConditionStalled)
		status.Summarize(claim, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonSandboxFailed,
			Message: fmt.Sprintf("Sandbox %s failed: %s: %s", sbx.Name, stalled.Reason, stalled.Message)})
	default:
		status.Summarize(claim, status.Summary{Reason: dsv1alpha1.ReasonColdStart,
			Message: fmt.Sprintf("Sandbox %s is being started for the claim", sbx.Name)})
	}
}

// deleteStrays deletes the Sandboxes of this node labelled for the claim other than the one it holds.
func (r *Reconciler) deleteStrays(ctx context.Context, claim *dsv1alpha1.SandboxClaim) error {
	sbxs, err := r.labelled(ctx, client.ObjectKeyFromObject(claim))
	if err != nil {
		return err
	}
	return r.deleteBound(ctx, slices.DeleteFunc(sbxs, func(s *dsv1alpha1.Sandbox) bool { return s.Name == claim.Status.SandboxName }))
}

// release deletes the Sandboxes of this node that a claim now gone held, once the API server confirms it
// is gone (the cache may lag behind a claim made again under the same name).
func (r *Reconciler) release(ctx context.Context, key types.NamespacedName) error {
	r.flight.seen(key)
	sbxs, err := r.labelled(ctx, key)
	if err != nil || len(sbxs) == 0 {
		return err
	}
	claim := &dsv1alpha1.SandboxClaim{}
	err = r.APIReader.Get(ctx, key, claim)
	switch {
	case err == nil && claim.DeletionTimestamp.IsZero():
		sbxs = slices.DeleteFunc(sbxs, func(s *dsv1alpha1.Sandbox) bool { return owned(s, claim.UID) })
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading SandboxClaim %s: %w", key, err)
	}
	return r.deleteBound(ctx, sbxs)
}

// deleteBound deletes those of the Sandboxes bound to this node: an unbound one is deleted by the agent that
// binds it, the only one that may (config/rbac/agent_confinement.yaml).
func (r *Reconciler) deleteBound(ctx context.Context, sbxs []*dsv1alpha1.Sandbox) error {
	for _, sbx := range sbxs {
		if sbx.Spec.NodeName != r.Options.Node || !sbx.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Delete(ctx, sbx, client.Preconditions{UID: &sbx.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting Sandbox %s of a SandboxClaim: %w", sbx.Name, err)
		}
	}
	return nil
}
