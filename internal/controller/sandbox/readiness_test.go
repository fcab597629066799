package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// readyServiceHarness is a Sandbox whose one service, "checked" (readiness with failureThreshold 3), runs
// and was recorded Ready by an earlier pass.
func readyServiceHarness(t *testing.T) (*harness, *dsv1alpha1.Sandbox, string) {
	checked := newService("checked", withReadiness(3))
	sbx := serviceAt(atTopology(newSandbox("s", withServices("checked")), 1, checked), 0, dsv1alpha1.ServiceReady, "")
	h := newHarness(t, sbx.DeepCopy(), newService("checked", withReadiness(3)))
	name := h.start(h.serviceSpec(h.scope(sbx.DeepCopy()), checked))
	return h, sbx, name
}

// checkAgain runs the service step of one pass over sbx once its next check is due, as if its period had
// passed, lets the check it asks for complete, and runs the step of the pass that the check's wake brings,
// whose scope it returns.
func (h *harness) checkAgain(sbx *dsv1alpha1.Sandbox) (*scope, bool) {
	h.t.Helper()
	h.probeAge.Add(int64(time.Hour)) // longer than any check's period
	h.continues(h.r.ensureServices(h.ctx, h.scope(sbx)))
	h.checksDone()
	s := h.scope(sbx)
	stop, err := h.r.ensureServices(h.ctx, s)
	h.noErr(err)
	return s, stop
}

// TestReadyServiceCheckTimeouts: a check of a ready service that outlasts its timeout is one failed check,
// never a killed service; failureThreshold of them in a row poison the topology, saying they timed out.
func TestReadyServiceCheckTimeouts(t *testing.T) {
	g := NewWithT(t)
	h, sbx, name := readyServiceHarness(t)
	checksHang(h)
	h.view.clear()

	s, stop := h.checkAgain(sbx)
	g.Expect(stop).To(BeFalse())
	g.Expect(s.finding).To(Equal(newScope(sbx).finding), "the pass goes on building as if nothing happened")
	g.Expect(sbx.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
	g.Expect(sbx.Status.Services[0].Message).To(Equal("its last readiness check timed out after 1s: 1 of 3 failures in a row"))
	g.Expect(h.container(name).State).To(Equal(dd.StateRunning), "the check's timeout left the container alone")
	g.Expect(h.view.calls()).To(BeEmpty())

	h.checkAgain(sbx)
	g.Expect(sbx.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
	g.Expect(sbx.Status.Services[0].Message).To(ContainSubstring("2 of 3 failures in a row"))

	s, stop = h.checkAgain(sbx)
	g.Expect(stop).To(BeTrue())
	g.Expect(outcomeOf(s).reason).To(Equal(dsv1alpha1.ReasonServiceUnhealthy))
	g.Expect(outcomeOf(s).message).To(Equal(`service "checked" failed readiness 3 of 3 times in a row; the last check timed out after 1s`))
	g.Expect(sbx.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceFailed))
	g.Expect(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned).Reason).To(Equal(dsv1alpha1.ReasonServiceUnhealthy))
	g.Expect(h.docker.Calls(fake.OpExec)).To(Equal(3))
	g.Expect(h.container(name).State).To(Equal(dd.StateRunning), "stopping is the next pass's, on the recorded decision")
	g.Expect(h.view.calls()).To(BeEmpty())
}

// TestReadyServiceCheckSuccessResetsCount: failed checks under the threshold leave the service Ready, and
// one that passes starts the count again.
func TestReadyServiceCheckSuccessResetsCount(t *testing.T) {
	g := NewWithT(t)
	h, sbx, name := readyServiceHarness(t)

	checksExit(2)(h)
	h.checkAgain(sbx)
	h.checkAgain(sbx)
	g.Expect(sbx.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
	g.Expect(sbx.Status.Services[0].Message).To(Equal("its last readiness check exited with code 2: 2 of 3 failures in a row"))

	checksExit(0)(h)
	h.checkAgain(sbx)
	g.Expect(sbx.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
	g.Expect(sbx.Status.Services[0].Message).To(BeEmpty())

	checksExit(2)(h)
	s, stop := h.checkAgain(sbx)
	g.Expect(stop).To(BeFalse())
	g.Expect(outcomeOf(s).stalled).To(BeFalse())
	g.Expect(sbx.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
	g.Expect(sbx.Status.Services[0].Message).To(ContainSubstring("1 of 3 failures in a row"), "the success reset the count")
	g.Expect(h.container(name).State).To(Equal(dd.StateRunning))
}
