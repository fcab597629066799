//go:build integration

package api_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

var _ = Describe("an Execution", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		ns = newNamespace(ctx)
		DeferCleanup(func(ctx context.Context) {
			Expect(k8s.DeleteAllOf(ctx, &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})
	})
	execution := func(name string, change func(*dsv1alpha1.ExecutionSpec)) *dsv1alpha1.Execution {
		ex := &dsv1alpha1.Execution{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       dsv1alpha1.ExecutionSpec{SandboxName: "shell", Command: []string{"true"}},
		}
		if change != nil {
			change(&ex.Spec)
		}
		return ex
	}

	It("defaults its deadline, output cap and time to live, and reads InProgress until an agent sees it", func(ctx context.Context) {
		ex := execution("defaults", nil)
		Expect(k8s.Create(ctx, ex)).To(Succeed())
		Expect(ex.Spec.TimeoutSeconds).To(BeEquivalentTo(60))
		Expect(ex.Spec.MaxOutputBytes).To(BeEquivalentTo(65536))
		Expect(*ex.Spec.TTLSecondsAfterFinished).To(BeEquivalentTo(3600))
		Expect(ex.Status.Phase).To(BeEmpty())
		raw := &unstructured.Unstructured{}
		raw.SetGroupVersionKind(dsv1alpha1.GroupVersion.WithKind("Execution"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ex), raw)).To(Succeed())
		Expect(raw.Object["status"]).To(Equal(map[string]any{"observedGeneration": int64(0)}))
	})

	It("refuses stdin past 64 KiB of UTF-8, an output cap past the most, a relative workingDir, a bad env name", func(ctx context.Context) {
		for message, change := range map[string]func(*dsv1alpha1.ExecutionSpec){
			"stdin must be at most 64 KiB": func(s *dsv1alpha1.ExecutionSpec) {
				s.Stdin = strings.Repeat("é", 40000) // 40000 characters, 80000 bytes
			},
			"spec.maxOutputBytes":                 func(s *dsv1alpha1.ExecutionSpec) { s.MaxOutputBytes = 262145 },
			"workingDir must be an absolute path": func(s *dsv1alpha1.ExecutionSpec) { s.WorkingDir = "src" },
			"env name must be a C identifier": func(s *dsv1alpha1.ExecutionSpec) {
				s.Env = []dsv1alpha1.ExecutionEnvVar{{Name: "1X", Value: "y"}}
			},
			"sandboxName must be the name of a Sandbox": func(s *dsv1alpha1.ExecutionSpec) { s.SandboxName = "Shell" },
		} {
			refused(k8s.Create(ctx, execution("refused", change)), message)
		}
		Expect(k8s.Create(ctx, execution("full", func(s *dsv1alpha1.ExecutionSpec) { s.Stdin = strings.Repeat("é", 32768) }))).
			To(Succeed(), "exactly 64 KiB of UTF-8 is accepted")
	})

	It("cannot change after creation", func(ctx context.Context) {
		ex := execution("fixed", nil)
		Expect(k8s.Create(ctx, ex)).To(Succeed())
		ex.Spec.Command = []string{"false"}
		refused(k8s.Update(ctx, ex), "an Execution's spec cannot change after creation")
	})

	It("is listed by Sandbox through a field selector", func(ctx context.Context) {
		Expect(k8s.Create(ctx, execution("in-shell", nil))).To(Succeed())
		Expect(k8s.Create(ctx, execution("elsewhere", func(s *dsv1alpha1.ExecutionSpec) { s.SandboxName = "other" }))).To(Succeed())
		var list dsv1alpha1.ExecutionList
		Expect(k8s.List(ctx, &list, client.InNamespace(ns), client.MatchingFields{dsv1alpha1.FieldExecutionSandboxName: "shell"})).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		Expect(list.Items[0].Name).To(Equal("in-shell"))
	})
})
