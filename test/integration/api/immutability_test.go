//go:build integration

package api_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// updateSandbox reads the Sandbox, changes it with mutate and writes it back.
func updateSandbox(ctx context.Context, key client.ObjectKey, mutate func(*dsv1alpha1.SandboxSpec)) error {
	var sbx dsv1alpha1.Sandbox
	Expect(k8s.Get(ctx, key, &sbx)).To(Succeed())
	mutate(&sbx.Spec)
	return k8s.Update(ctx, &sbx)
}

// refused asserts that err is the API server refusing an update with message.
func refused(err error, message string) {
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want a refusal, got %v", err)
	Expect(err.Error()).To(ContainSubstring(message))
}

var _ = Describe("changes after creation", func() {
	var ns string
	var key client.ObjectKey
	BeforeEach(func(ctx context.Context) {
		ns = newNamespace(ctx)
		key = client.ObjectKey{Namespace: ns, Name: "sbx"}
		Expect(k8s.Create(ctx, &dsv1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
			Spec:       dsv1alpha1.SandboxSpec{Image: "busybox"},
		})).To(Succeed())
	})

	It("accepts changes to image, command, services, network, resources and lifecycle, each a new generation", func(ctx context.Context) {
		for _, mutate := range []func(*dsv1alpha1.SandboxSpec){
			func(s *dsv1alpha1.SandboxSpec) { s.Image = "dockside.dev/busybox:local" },
			func(s *dsv1alpha1.SandboxSpec) { s.Command = []string{"sleep", "1"} },
			func(s *dsv1alpha1.SandboxSpec) { s.Services = []string{"redis", "web"} },
			func(s *dsv1alpha1.SandboxSpec) { s.Network.Mode = dsv1alpha1.NetworkIsolated },
			func(s *dsv1alpha1.SandboxSpec) { s.Resources.Memory = resource.MustParse("1Gi") },
			func(s *dsv1alpha1.SandboxSpec) { s.Lifecycle = dsv1alpha1.LifecyclePaused },
		} {
			var before dsv1alpha1.Sandbox
			Expect(k8s.Get(ctx, key, &before)).To(Succeed())
			Expect(updateSandbox(ctx, key, mutate)).To(Succeed())
			var after dsv1alpha1.Sandbox
			Expect(k8s.Get(ctx, key, &after)).To(Succeed())
			Expect(after.Generation).To(Equal(before.Generation + 1))
		}
	})

	It("lets an agent bind nodeName once, then refuses to change or remove it", func(ctx context.Context) {
		Expect(updateSandbox(ctx, key, func(s *dsv1alpha1.SandboxSpec) { s.NodeName = "node-a" })).To(Succeed())
		refused(updateSandbox(ctx, key, func(s *dsv1alpha1.SandboxSpec) { s.NodeName = "node-b" }), "nodeName cannot be changed or removed once set")
		refused(updateSandbox(ctx, key, func(s *dsv1alpha1.SandboxSpec) { s.NodeName = "" }), "nodeName cannot be changed or removed once set")
	})

	It("refuses to change the workspace", func(ctx context.Context) {
		refused(updateSandbox(ctx, key, func(s *dsv1alpha1.SandboxSpec) { s.Workspace.Size = resource.MustParse("1Gi") }), "workspace cannot change after creation")
		refused(updateSandbox(ctx, key, func(s *dsv1alpha1.SandboxSpec) { s.Workspace.MountPath = "/src" }), "workspace cannot change after creation")
	})

	It("refuses to add restoreFrom after creation", func(ctx context.Context) {
		refused(updateSandbox(ctx, key, func(s *dsv1alpha1.SandboxSpec) { s.RestoreFrom = "snap" }), "restoreFrom is set when the Sandbox is created")
	})

	It("refuses to change or remove restoreFrom", func(ctx context.Context) {
		restored := client.ObjectKey{Namespace: ns, Name: "restored"}
		Expect(k8s.Create(ctx, &dsv1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: restored.Name},
			Spec:       dsv1alpha1.SandboxSpec{Image: "busybox", RestoreFrom: "snap"},
		})).To(Succeed())
		refused(updateSandbox(ctx, restored, func(s *dsv1alpha1.SandboxSpec) { s.RestoreFrom = "other" }), "restoreFrom is set when the Sandbox is created")
		refused(updateSandbox(ctx, restored, func(s *dsv1alpha1.SandboxSpec) { s.RestoreFrom = "" }), "restoreFrom is set when the Sandbox is created")
		Expect(updateSandbox(ctx, restored, func(s *dsv1alpha1.SandboxSpec) { s.Lifecycle = dsv1alpha1.LifecyclePaused })).To(Succeed())
	})

	It("refuses any change to a Checkpoint's spec", func(ctx context.Context) {
		ckpt := &dsv1alpha1.Checkpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
			Spec:       dsv1alpha1.CheckpointSpec{SandboxName: "sbx"},
		}
		Expect(k8s.Create(ctx, ckpt)).To(Succeed())
		ckpt.Spec.Paths = []string{"src"}
		refused(k8s.Update(ctx, ckpt), "a Checkpoint's spec cannot change after creation")
	})
})
