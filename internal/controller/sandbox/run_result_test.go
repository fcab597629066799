package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// TestRunResultOutlastsLostStatusWrites: a run's result is read from what Docker recorded, so a pass whose
// write of it fails for good loses nothing: the next pass reads the same result again and writes it, and
// neither poisons the topology nor calls the run Lost.
func TestRunResultOutlastsLostStatusWrites(t *testing.T) {
	g := NewWithT(t)
	sbx := bound(newSandbox("hello", run()))
	h := newHarness(t, sbx)
	got := h.passUntil(g, sbx, 6, func(sbx *dsv1alpha1.Sandbox) bool { return sbx.Status.Phase == dsv1alpha1.SandboxRunning })
	primary := topology.NamesOf(got).Primary()
	h.noErr(h.docker.WriteLogs(primary, []byte("hello\n")))
	h.noErr(h.docker.Exit(primary, 0))

	refused, refuse := 0, 1<<30
	h.apiFault = func(op string, _ client.Object) error {
		if op != "patch status" || refused >= refuse {
			return nil
		}
		refused++
		if refused%2 == 0 {
			return apierrors.NewTooManyRequests("slow down", 0)
		}
		return apierrors.NewServiceUnavailable("etcd is unwell")
	}
	_, err := h.pass(sbx)
	g.Expect(apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err)).To(BeTrue(), "%v", err)
	g.Expect(refused).To(Equal(4), "one write and three retries within the pass")
	g.Expect(h.get(sbx).Status.Result).To(BeNil())

	refuse = refused + 2 // the API server answers again within the next pass's retries
	got = h.passUntil(g, sbx, 1, isReady)
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxSucceeded))
	g.Expect(got.Status.Result.Reason).To(Equal(dsv1alpha1.ReasonCompleted))
	g.Expect(got.Status.Result.ExitCode).To(HaveValue(BeZero()))
	g.Expect(got.Status.Result.OutputTail).To(Equal("hello\n"))
	g.Expect(topology.Poisoned(got)).To(BeFalse())
	g.Expect(h.container(primary).State).To(Equal(dd.StateExited), "kept as it ended")
}
