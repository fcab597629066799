package dataplane

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
)

// A Sandbox the agent's cache still holds as Pending, though the API server has it Running, is served: a
// client that saw it Running and called at once is not refused for the cache's delay. One that is not
// Running on the API server either is refused as before.
func TestRunnableNowReadsTheAPIServerBeforeRefusing(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(dsv1alpha1.AddToScheme(scheme)).To(Succeed())
	running := &dsv1alpha1.Sandbox{}
	running.Name, running.Namespace, running.UID = "py", "team", "u-1"
	running.Status.Phase = dsv1alpha1.SandboxRunning
	s := &Server{opts: Options{Reader: ctrlfake.NewClientBuilder().WithScheme(scheme).WithObjects(running).Build()}}

	cached := running.DeepCopy()
	cached.Status.Phase = dsv1alpha1.SandboxPending
	g.Expect(runnable(cached, false)).NotTo(BeNil(), "the cache alone refuses")
	g.Expect(s.runnableNow(t.Context(), cached, false)).To(BeNil())
	g.Expect(cached.Status.Phase).To(Equal(dsv1alpha1.SandboxRunning), "the Sandbox served is the fresh one")

	other := running.DeepCopy()
	other.Name, other.UID = "gone", "u-2"
	other.Status.Phase = dsv1alpha1.SandboxPending
	refused := s.runnableNow(t.Context(), other, false)
	g.Expect(refused).NotTo(BeNil(), "not on the API server: the cached refusal stands")
	g.Expect(refused.message).To(ContainSubstring(`Sandbox "gone" is Pending, not Running`))
}
