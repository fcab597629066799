//go:build integration

package api_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// The python sample: env, services and a network mode, so it shows how each kind of list merges.
const applySample = "dockside_v1alpha1_sandbox_python.yaml"

// apply server-side applies manifest as field manager owner.
func apply(ctx context.Context, manifest, ns, owner string, opts ...client.ApplyOption) error {
	opts = append(opts, client.FieldOwner(owner))
	return k8s.Apply(ctx, client.ApplyConfigurationFromUnstructured(fromYAML(manifest, ns)), opts...)
}

// applyStatus server-side applies a status holding one condition as field manager owner.
func applyStatus(ctx context.Context, ns, name, owner, conditionType string) error {
	obj := fromYAML(`apiVersion: dockside.dev/v1alpha1
kind: Sandbox
metadata: {name: `+name+`}
status:
  conditions:
    - {type: `+conditionType+`, status: "True", reason: Test, message: set by `+owner+`, lastTransitionTime: "2026-01-01T00:00:00Z"}
`, ns)
	return k8s.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(owner))
}

// managersOf names the field managers that own the field at path (in managedFields form, e.g. "f:spec", "f:image").
func managersOf(obj client.Object, path ...string) []string {
	var names []string
	for _, entry := range obj.GetManagedFields() {
		var fields map[string]any
		Expect(json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields)).To(Succeed())
		if _, found, _ := unstructured.NestedFieldNoCopy(fields, path...); found {
			names = append(names, entry.Manager)
		}
	}
	return names
}

var _ = Describe("server-side apply", func() {
	var ns, sample string
	var key client.ObjectKey
	BeforeEach(func(ctx context.Context) {
		ns = newNamespace(ctx)
		raw, err := os.ReadFile(filepath.Join(samplesDir, applySample))
		Expect(err).NotTo(HaveOccurred())
		sample = string(raw)
		key = client.ObjectKey{Namespace: ns, Name: fromYAML(sample, ns).GetName()}
		Expect(apply(ctx, sample, ns, "gitops")).To(Succeed())
	})

	get := func(ctx context.Context) *dsv1alpha1.Sandbox {
		var sbx dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx, key, &sbx)).To(Succeed())
		return &sbx
	}

	// The create did not store the defaulted status (create drops status); the first re-apply stores it, a
	// metadata-only write. From then on a re-apply of the same manifest writes nothing at all.
	It("keeps the generation when the same manager applies the same sample again, and then writes nothing", func(ctx context.Context) {
		before := get(ctx)
		Expect(apply(ctx, sample, ns, "gitops")).To(Succeed())
		once := get(ctx)
		Expect(once.Generation).To(Equal(int64(1)))
		Expect(once.Spec).To(Equal(before.Spec))

		Expect(apply(ctx, sample, ns, "gitops")).To(Succeed())
		Expect(get(ctx).ResourceVersion).To(Equal(once.ResourceVersion))
	})

	It("makes a second manager applying the same values a co-owner, without a conflict or a new generation", func(ctx context.Context) {
		Expect(apply(ctx, sample, ns, "alice")).To(Succeed())
		sbx := get(ctx)
		Expect(sbx.Generation).To(Equal(int64(1)))
		Expect(managersOf(sbx, "f:spec", "f:image")).To(ConsistOf("gitops", "alice"))
		Expect(managersOf(sbx, "f:spec", "f:services")).To(ConsistOf("gitops", "alice"))
	})

	It("refuses a second manager's different value as a conflict, unless it forces and takes the field over", func(ctx context.Context) {
		changed := fromYAML(sample, ns)
		Expect(unstructured.SetNestedField(changed.Object, "dockside.dev/busybox:local", "spec", "image")).To(Succeed())
		changedYAML, err := json.Marshal(changed.Object)
		Expect(err).NotTo(HaveOccurred())

		err = apply(ctx, string(changedYAML), ns, "alice")
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "want a conflict, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`conflict with "gitops"`))
		Expect(err.Error()).To(ContainSubstring(".spec.image"))
		Expect(get(ctx).Spec.Image).To(Equal("dockside.dev/python:local"))

		Expect(apply(ctx, string(changedYAML), ns, "alice", client.ForceOwnership)).To(Succeed())
		sbx := get(ctx)
		Expect(sbx.Spec.Image).To(Equal("dockside.dev/busybox:local"))
		Expect(managersOf(sbx, "f:spec", "f:image")).To(ConsistOf("alice"))
		Expect(managersOf(sbx, "f:spec", "f:services")).To(ConsistOf("gitops", "alice"))
	})

	It("merges env entries by name, but treats services as one ordered whole", func(ctx context.Context) {
		Expect(apply(ctx, manifest("Sandbox", key.Name, `{env: [{name: DEBUG, value: "1"}]}`), ns, "alice")).To(Succeed())
		Expect(get(ctx).Spec.Env).To(ConsistOf(
			dsv1alpha1.EnvVar{Name: "REDIS_URL", Value: "redis://redis:6379/0"},
			dsv1alpha1.EnvVar{Name: "DEBUG", Value: "1"},
		))

		err := apply(ctx, manifest("Sandbox", key.Name, `{services: [web]}`), ns, "alice")
		Expect(apierrors.IsConflict(err)).To(BeTrue(), "want a conflict, got %v", err)
		Expect(err.Error()).To(ContainSubstring(".spec.services"))
	})

	It("merges status conditions from two managers by type", func(ctx context.Context) {
		Expect(applyStatus(ctx, ns, key.Name, "dockside-agent", dsv1alpha1.ConditionReady)).To(Succeed())
		Expect(applyStatus(ctx, ns, key.Name, "probe", "Probed")).To(Succeed())
		var types []string
		for _, c := range get(ctx).Status.Conditions {
			types = append(types, c.Type)
		}
		Expect(types).To(ConsistOf(dsv1alpha1.ConditionReady, "Probed"))
	})
})
