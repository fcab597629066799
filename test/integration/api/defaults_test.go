//go:build integration

package api_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	watchapi "k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

var _ = Describe("defaults", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	It("fills in resources, workspace, network and lifecycle of a minimal Sandbox", func(ctx context.Context) {
		Expect(k8s.Create(ctx, fromYAML(manifest("Sandbox", "minimal", `{image: busybox}`), ns))).To(Succeed())
		var got dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "minimal"}, &got)).To(Succeed())
		Expect(got.Spec.Resources.CPU.String()).To(Equal("1"))
		Expect(got.Spec.Resources.Memory.String()).To(Equal("512Mi"))
		Expect(got.Spec.Resources.Pids).To(Equal(int64(256)))
		Expect(got.Spec.Workspace.Size.String()).To(Equal("512Mi"))
		Expect(got.Spec.Workspace.MountPath).To(Equal("/workspace"))
		Expect(got.Spec.Network.Mode).To(Equal(dsv1alpha1.NetworkNone))
		Expect(got.Spec.Lifecycle).To(Equal(dsv1alpha1.LifecycleRunning))
		Expect(got.Spec.RootFilesystem).To(Equal(dsv1alpha1.RootFilesystem{Mode: dsv1alpha1.RootFilesystemReadOnly}))
		Expect(got.Spec.RunAsRoot).To(BeFalse())
	})

	It("fills in each missing limit on its own, keeping the ones given", func(ctx context.Context) {
		Expect(k8s.Create(ctx, fromYAML(manifest("Sandbox", "partial", `{image: busybox, resources: {memory: 64Mi}, workspace: {mountPath: /src}}`), ns))).To(Succeed())
		var got dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "partial"}, &got)).To(Succeed())
		Expect(got.Spec.Resources.Memory.String()).To(Equal("64Mi"))
		Expect(got.Spec.Resources.CPU.String()).To(Equal("1"))
		Expect(got.Spec.Resources.Pids).To(Equal(int64(256)))
		Expect(got.Spec.Workspace.MountPath).To(Equal("/src"))
		Expect(got.Spec.Workspace.Size.String()).To(Equal("512Mi"))
	})

	It("fills in readiness timing, port protocol and resources of a SandboxService", func(ctx context.Context) {
		Expect(k8s.Create(ctx, fromYAML(manifest("SandboxService", "cache", `{image: redis, ports: [{port: 6379}], readiness: {command: [redis-cli, ping]}}`), ns))).To(Succeed())
		var got dsv1alpha1.SandboxService
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cache"}, &got)).To(Succeed())
		Expect(got.Spec.Ports).To(ConsistOf(dsv1alpha1.ServicePort{Port: 6379, Protocol: "TCP"}))
		Expect(*got.Spec.Readiness).To(Equal(dsv1alpha1.Readiness{
			Command: []string{"redis-cli", "ping"}, InitialDelaySeconds: 0, PeriodSeconds: 2, TimeoutSeconds: 1, FailureThreshold: 3,
		}))
		Expect(got.Spec.Resources.Memory.String()).To(Equal("512Mi"))
	})

	DescribeTable("defaults status to {observedGeneration: 0} on create, get, list and watch, so kstatus reads a new object as InProgress",
		func(ctx context.Context, kind, spec string) {
			created := fromYAML(manifest(kind, "fresh", spec), ns)
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(created.GroupVersionKind().GroupVersion().WithKind(kind + "List"))
			watch, err := watcher.Watch(ctx, list, client.InNamespace(ns))
			Expect(err).NotTo(HaveOccurred())
			defer watch.Stop()

			Expect(k8s.Create(ctx, created)).To(Succeed())
			Expect(created.Object).To(HaveKeyWithValue("status", map[string]any{"observedGeneration": int64(0)}), "the create response")

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(created.GroupVersionKind())
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(created), got)).To(Succeed())
			Expect(got.Object).To(HaveKeyWithValue("status", map[string]any{"observedGeneration": int64(0)}), "a read-back")
			Expect(kstatusOf(got)).To(Equal(status.InProgressStatus))

			Expect(k8s.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			Expect(list.Items).To(HaveLen(1))
			Expect(list.Items[0].Object).To(HaveKeyWithValue("status", map[string]any{"observedGeneration": int64(0)}), "a list")

			var event watchapi.Event
			Eventually(watch.ResultChan()).Should(Receive(&event))
			Expect(event.Object.(*unstructured.Unstructured).Object).To(HaveKeyWithValue("status", map[string]any{"observedGeneration": int64(0)}), "a watch event")
		},
		Entry("Sandbox", "Sandbox", `{image: busybox}`),
		Entry("SandboxService", "SandboxService", `{image: redis}`),
		Entry("Checkpoint", "Checkpoint", `{sandboxName: shell}`),
	)

	It("drops a status sent with create: only the agent writes status, through the status subresource", func(ctx context.Context) {
		obj := fromYAML(manifest("Sandbox", "forged", `{image: busybox}`)+"status: {observedGeneration: 1, phase: Running}\n", ns)
		Expect(k8s.Create(ctx, obj)).To(Succeed())
		var got dsv1alpha1.Sandbox
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(obj), &got)).To(Succeed())
		Expect(got.Status).To(Equal(dsv1alpha1.SandboxStatus{}))
	})

	It("reads Current, InProgress or Failed from the conditions once the agent records the generation", func(ctx context.Context) {
		sbx := &dsv1alpha1.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "observed"},
			Spec:       dsv1alpha1.SandboxSpec{Image: "busybox"},
		}
		Expect(k8s.Create(ctx, sbx)).To(Succeed())
		for _, step := range []struct {
			conditions []metav1.Condition
			want       status.Status
		}{
			{[]metav1.Condition{cond(dsv1alpha1.ConditionReady, metav1.ConditionTrue, dsv1alpha1.ReasonRunning)}, status.CurrentStatus},
			{[]metav1.Condition{
				cond(dsv1alpha1.ConditionReady, metav1.ConditionFalse, dsv1alpha1.ReasonCreating),
				cond(dsv1alpha1.ConditionReconciling, metav1.ConditionTrue, dsv1alpha1.ReasonCreating),
			}, status.InProgressStatus},
			{[]metav1.Condition{
				cond(dsv1alpha1.ConditionReady, metav1.ConditionFalse, dsv1alpha1.ReasonServiceExited),
				cond(dsv1alpha1.ConditionStalled, metav1.ConditionTrue, dsv1alpha1.ReasonServiceExited),
			}, status.FailedStatus},
		} {
			sbx.Status.ObservedGeneration = sbx.Generation
			sbx.Status.Conditions = nil
			for _, c := range step.conditions {
				c.ObservedGeneration = sbx.Generation
				meta.SetStatusCondition(&sbx.Status.Conditions, c)
			}
			Expect(k8s.Status().Update(ctx, sbx)).To(Succeed())

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(dsv1alpha1.GroupVersion.WithKind("Sandbox"))
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(sbx), got)).To(Succeed())
			Expect(kstatusOf(got)).To(Equal(step.want), "conditions %v", step.conditions)
		}
	})
})

// cond is a condition as the agent would write it.
func cond(conditionType string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: conditionType, Status: s, Reason: reason, Message: reason}
}

// kstatusOf is the status Flux, Argo CD's kstatus health and `kubectl wait`-style tools compute for obj.
func kstatusOf(obj *unstructured.Unstructured) status.Status {
	result, err := status.Compute(obj)
	Expect(err).NotTo(HaveOccurred())
	return result.Status
}
