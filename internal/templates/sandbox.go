package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// Hash digests a template's Sandbox spec: a pool's Sandboxes made from another digest are of an older
// template. It is short enough for a label value.
func Hash(tpl *dsv1alpha1.SandboxTemplate) string {
	data, _ := json.Marshal(tpl.Spec.Sandbox) // a spec always marshals
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

// MemberName is the name of a pool's index-th Sandbox. Every agent picks the lowest free index, so that two
// agents filling the same gap create the same name and the API server lets only one through.
func MemberName(pool string, index int) string {
	return fmt.Sprintf("%s-%d", pool, index)
}

// Warm is the Sandbox a pool keeps started: the template's spec without its deadline, which counts from the
// claim (Claim sets it), owned by the pool so that a cluster's garbage collector removes it with the pool.
func Warm(pool *dsv1alpha1.SandboxWarmPool, tpl *dsv1alpha1.SandboxTemplate, name, hash string) *dsv1alpha1.Sandbox {
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pool.Namespace,
			Labels: map[string]string{dsv1alpha1.LabelPool: pool.Name, dsv1alpha1.LabelTemplateHash: hash},
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(pool, dsv1alpha1.GroupVersion.WithKind("SandboxWarmPool")),
			},
		},
		Spec: *tpl.Spec.Sandbox.DeepCopy(),
	}
	sbx.Spec.ActiveDeadlineSeconds = nil
	return sbx
}

// Cold is the Sandbox started for a claim when its pool has none warm: the template's spec with every
// override of the claim, named after the claim and owned by it.
func Cold(claim *dsv1alpha1.SandboxClaim, tpl *dsv1alpha1.SandboxTemplate) *dsv1alpha1.Sandbox {
	sbx := &dsv1alpha1.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace},
		Spec:       *tpl.Spec.Sandbox.DeepCopy(),
	}
	sbx.Spec.SecretFiles = append(sbx.Spec.SecretFiles, claim.Spec.SecretFiles...)
	Claim(sbx, claim, tpl, nil)
	return sbx
}

// Claim makes sbx the claim's: its labels, its owner, the claim's env for every command, its lifecycle, and
// its deadline counted from now. started is when a warm Sandbox's primary started (nil for a cold one): the
// deadline, which Dockside counts from the start, is lengthened by the time it already ran, within the
// API's bound of 7 days.
func Claim(sbx *dsv1alpha1.Sandbox, claim *dsv1alpha1.SandboxClaim, tpl *dsv1alpha1.SandboxTemplate, started *metav1.Time) {
	if sbx.Labels == nil {
		sbx.Labels = map[string]string{}
	}
	for k, v := range claim.Spec.Labels {
		sbx.Labels[k] = v
	}
	sbx.Labels[dsv1alpha1.LabelClaim] = claim.Name
	sbx.OwnerReferences = []metav1.OwnerReference{
		*metav1.NewControllerRef(claim, dsv1alpha1.GroupVersion.WithKind("SandboxClaim")),
	}
	sbx.Spec.CommandEnv = claim.Spec.Env
	if claim.Spec.Lifecycle != "" {
		sbx.Spec.Lifecycle = claim.Spec.Lifecycle
	}
	deadline := tpl.Spec.Sandbox.ActiveDeadlineSeconds
	if claim.Spec.ActiveDeadlineSeconds != nil {
		deadline = claim.Spec.ActiveDeadlineSeconds
	}
	sbx.Spec.ActiveDeadlineSeconds = nil
	if deadline != nil {
		ran := int64(0)
		if started != nil {
			ran = int64(metav1.Now().Sub(started.Time).Seconds()) + 1
		}
		sbx.Spec.ActiveDeadlineSeconds = ptr.To(min(*deadline+ran, maxDeadlineSeconds))
	}
}

// maxDeadlineSeconds mirrors the Maximum marker on spec.activeDeadlineSeconds (7 days).
const maxDeadlineSeconds = 604800
