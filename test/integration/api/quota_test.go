//go:build integration

package api_test

import (
	"context"
	"fmt"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// quotaLimit is what this spec lowers each of the example's limits to: reaching the example's 20 and 200
// would take hundreds of creates and prove nothing more.
const quotaLimit = 2

// countedKinds are the Dockside kinds a ResourceQuota counts, by the plural it names them with.
var countedKinds = map[string]string{
	"Sandbox": "sandboxes", "SandboxService": "sandboxservices", "Checkpoint": "checkpoints", "Execution": "executions",
}

// quotaExample is the ResourceQuota of docs/deploy.md ("Limits per namespace"), placed in namespace ns with
// each limit lowered to quotaLimit.
func quotaExample(ns string) *corev1.ResourceQuota {
	GinkgoHelper()
	for _, block := range yamlBlocks(filepath.Join("..", "..", "..", "docs", "deploy.md")) {
		if fromYAML(block, ns).GetKind() != "ResourceQuota" {
			continue
		}
		quota := &corev1.ResourceQuota{}
		Expect(yaml.UnmarshalStrict([]byte(block), quota)).To(Succeed())
		quota.Namespace = ns
		for name := range quota.Spec.Hard {
			quota.Spec.Hard[name] = *resource.NewQuantity(quotaLimit, resource.DecimalSI)
		}
		return quota
	}
	Fail("docs/deploy.md has no ResourceQuota example")
	return nil
}

// exampleOf is docs/api.md's example of kind (one per kind, accepted as it is: samples_test.go), named name,
// in namespace ns.
func exampleOf(kind, name, ns string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, block := range yamlBlocks(apiDoc) {
		if obj := fromYAML(block, ns); obj.GetKind() == kind {
			obj.SetName(name)
			return obj
		}
	}
	Fail("docs/api.md has no example of " + kind)
	return nil
}

var _ = Describe("a ResourceQuota on the Dockside kinds", func() {
	// envtest runs no kube-controller-manager, so its quota controller is played here: the API server's quota
	// admission enforces a quota's status.hard and counts creates into status.used, and it is that controller
	// which writes the status of a new quota (and gives counts back on deletion, which this spec does not need).
	It("limits creates of each kind through the API server's own quota admission, refusing in words that say which quota and how much", func(ctx context.Context) {
		ns := newNamespace(ctx)
		DeferCleanup(func(ctx context.Context) {
			Expect(k8s.DeleteAllOf(ctx, &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})
		quota := quotaExample(ns)
		counted := map[corev1.ResourceName]string{}
		for kind, plural := range countedKinds {
			name := corev1.ResourceName("count/" + plural + ".dockside.dev")
			Expect(quota.Spec.Hard).To(HaveKey(name), "the example limits %s", kind)
			counted[name] = kind
		}
		Expect(quota.Spec.Hard).To(HaveLen(len(countedKinds)), "the example limits the four kinds and nothing else")
		// A canary at 0 that this spec's ConfigMap probe runs into: once admission refuses it, admission works
		// from the status written below (one object, so all its limits at once).
		canary := corev1.ResourceName("count/configmaps")
		quota.Spec.Hard[canary] = resource.MustParse("0")
		Expect(k8s.Create(ctx, quota)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(k8s.Delete(ctx, quota)).To(Succeed()) })

		By("creating a Sandbox before any status is written: nothing counts it yet (admission reads status.hard only)")
		Expect(k8s.Create(ctx, exampleOf("Sandbox", "before-status", ns))).To(Succeed())

		By("writing its status as the quota controller does: the limits, and what the namespace holds")
		quota.Status.Hard = quota.Spec.DeepCopy().Hard
		quota.Status.Used = corev1.ResourceList{}
		for name := range quota.Status.Hard {
			quota.Status.Used[name] = resource.MustParse("0")
		}
		quota.Status.Used["count/sandboxes.dockside.dev"] = resource.MustParse("1")
		Expect(k8s.Status().Update(ctx, quota)).To(Succeed())
		Eventually(func() error {
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}}
			return k8s.Create(ctx, probe, client.DryRunAll)
		}).Should(MatchError(ContainSubstring("exceeded quota: dockside")))

		By("refusing the create of each kind past its limit")
		for name, kind := range counted {
			var list unstructured.UnstructuredList
			list.SetAPIVersion(dsv1alpha1.GroupVersion.String())
			list.SetKind(kind + "List")
			Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			for i := len(list.Items); i < quotaLimit; i++ {
				Expect(k8s.Create(ctx, exampleOf(kind, fmt.Sprintf("fits-%d", i), ns))).To(Succeed(), kind)
			}
			err := k8s.Create(ctx, exampleOf(kind, "one-too-many", ns))
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%s: %v", kind, err)
			Expect(err.Error()).To(Equal(fmt.Sprintf(
				`%s "one-too-many" is forbidden: exceeded quota: dockside, requested: %s=1, used: %s=%d, limited: %s=%d`,
				countedKinds[kind]+".dockside.dev", name, name, quotaLimit, name, quotaLimit)))
		}

		By("having counted every create into the quota's status itself")
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		for name := range counted {
			Expect(quota.Status.Used.Name(name, resource.DecimalSI).Value()).To(BeEquivalentTo(quotaLimit), string(name))
		}
	})
})
