package templates

import (
	"fmt"
	"slices"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Refused names the first thing the claim sets that its template's claimOverrides leave out, in words for
// people, or "" when the template allows all of it. The API server checks the shape of each override; only
// the agent can set the claim beside its template, which is another object.
func Refused(claim *dsv1alpha1.SandboxClaim, tpl *dsv1alpha1.SandboxTemplate) string {
	set := map[dsv1alpha1.ClaimOverride]bool{
		dsv1alpha1.OverrideEnv:                   len(claim.Spec.Env) > 0,
		dsv1alpha1.OverrideSecretFiles:           len(claim.Spec.SecretFiles) > 0,
		dsv1alpha1.OverrideLabels:                len(claim.Spec.Labels) > 0,
		dsv1alpha1.OverrideActiveDeadlineSeconds: claim.Spec.ActiveDeadlineSeconds != nil,
		dsv1alpha1.OverrideLifecycle:             claim.Spec.Lifecycle != "",
	}
	for _, o := range []dsv1alpha1.ClaimOverride{dsv1alpha1.OverrideEnv, dsv1alpha1.OverrideSecretFiles,
		dsv1alpha1.OverrideLabels, dsv1alpha1.OverrideActiveDeadlineSeconds, dsv1alpha1.OverrideLifecycle} {
		if set[o] && !slices.Contains(tpl.Spec.ClaimOverrides, o) {
			return fmt.Sprintf("the claim sets %s, which SandboxTemplate %s does not let claims override (its claimOverrides: %v)",
				o, tpl.Name, tpl.Spec.ClaimOverrides)
		}
	}
	return ""
}
