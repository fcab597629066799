package sandboxclaim

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/templates"
)

// startCold creates the claim's own Sandbox from the pool's template with the claim's overrides, named after
// the claim so that agents starting it at once make one. Any agent with room binds and starts it, as any
// Sandbox; the claim reads Ready when it is.
func (r *Reconciler) startCold(ctx context.Context, claim *dsv1alpha1.SandboxClaim, tpl *dsv1alpha1.SandboxTemplate) error {
	sbx := templates.Cold(claim, tpl)
	err := r.Create(ctx, sbx)
	if apierrors.IsAlreadyExists(err) {
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(sbx), sbx); err != nil {
			return fmt.Errorf("reading Sandbox %s: %w", sbx.Name, err)
		}
		if !owned(sbx, claim.UID) {
			status.Summarize(claim, status.Summary{Stalled: true, Reason: dsv1alpha1.ReasonSandboxNameTaken,
				Message: fmt.Sprintf("the pool has no warm Sandbox and a cold start needs the name %q, which another Sandbox has: claim under another name", sbx.Name)})
			return nil
		}
	} else if apierrors.IsInvalid(err) {
		invalidLabels(claim)
		return nil
	} else if err != nil {
		return fmt.Errorf("creating Sandbox %s for the claim: %w", sbx.Name, err)
	} else {
		claims.WithLabelValues(string(dsv1alpha1.ClaimCold)).Inc()
	}
	record(claim, sbx)
	report(claim, sbx)
	return nil
}
