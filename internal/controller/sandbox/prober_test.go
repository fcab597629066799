package sandbox

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/topology"
)

// checksDone waits until no readiness check or restore is outstanding: each has stored its result for a pass
// to take.
func (h *harness) checksDone() {
	h.t.Helper()
	outstanding := func() int { return h.r.probes.Outstanding() + h.r.restores.Outstanding() }
	NewWithT(h.t).Eventually(outstanding, 10*time.Second, 5*time.Millisecond).Should(BeZero(), "background jobs still outstanding")
}

// woken waits for the pass a wakeup asks for over sbx.
func (h *harness) woken(sbx *dsv1alpha1.Sandbox) {
	h.t.Helper()
	select {
	case ev := <-h.requeues:
		NewWithT(h.t).Expect(client.ObjectKeyFromObject(ev.Object)).To(Equal(client.ObjectKeyFromObject(sbx)))
	case <-time.After(10 * time.Second):
		h.t.Fatal("no wakeup came")
	}
}

// checksBlock makes every readiness check run until release is closed (or its timeout ends it).
func checksBlock(h *harness, release <-chan struct{}) {
	h.docker.SetExecHandler(func(ctx context.Context, _ string, _ dd.ExecRequest) fake.ExecOutput {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return fake.ExecOutput{}
	})
}

// TestReconcileDoesNotWaitForAReadinessCheck: a pass over a Sandbox whose service's check blocks returns at
// once, holding no worker while the check runs; the check's completion wakes the Sandbox, and the pass that
// wake brings finds the service ready and starts the primary.
func TestReconcileDoesNotWaitForAReadinessCheck(t *testing.T) {
	g := NewWithT(t)
	slow := newService("slow", func(svc *dsv1alpha1.SandboxService) {
		svc.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"check"}, PeriodSeconds: 60, TimeoutSeconds: 30, FailureThreshold: 3}
	})
	sbx := newSandbox("s", withServices("slow"))
	h := newHarness(t, sbx.DeepCopy(), slow)
	release := make(chan struct{})
	checksBlock(h, release)

	for range 3 { // the topology; the workspace and the network; then the service and its check
		start := time.Now()
		_, err := h.pass(sbx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "the pass waited for the check")
	}
	got := h.get(sbx)
	g.Expect(got.Status.Services).To(HaveLen(1))
	g.Expect(got.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceStarting))
	g.Expect(got.Status.Conditions).To(ContainElement(HaveField("Reason", dsv1alpha1.ReasonWaitingForServices)))
	// The check runs in the background: its exec reaches Docker a moment after the pass that started it.
	g.Eventually(func() int { return h.docker.Calls(fake.OpExec) }).Should(Equal(1), "one check outstanding")

	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.docker.Calls(fake.OpExec)).To(Equal(1), "a pass while the check runs starts no other")
	g.Expect(h.requeues).To(BeEmpty(), "nothing wakes the Sandbox before the check completes")

	close(release)
	h.woken(sbx)
	_, err = h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	got = h.get(sbx)
	g.Expect(got.Status.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
	g.Expect(h.container(topology.NamesOf(got).Primary()).State).To(Equal(dd.StateRunning))
	g.Expect(isReady(got)).To(BeTrue())
}

// TestCompletedCheckIsCountedOnce: a failed check of a ready service counts once, however many passes come
// before the next one is due.
func TestCompletedCheckIsCountedOnce(t *testing.T) {
	g := NewWithT(t)
	h, sbx, _ := readyServiceHarness(t)
	checksExit(1)(h)

	s, _ := h.checkAgain(sbx)
	g.Expect(s.sbx.Status.Services[0].Message).To(ContainSubstring("1 of 3 failures in a row"))
	for range 3 {
		s := h.scope(sbx)
		h.continues(h.r.ensureServices(h.ctx, s))
		g.Expect(s.recheck).To(BeNumerically("~", 2*time.Second, time.Second), "a pass before the next check is due asks for one then")
	}
	h.checksDone()
	g.Expect(h.docker.Calls(fake.OpExec)).To(Equal(1))
	g.Expect(sbx.Status.Services[0].Message).To(ContainSubstring("1 of 3 failures in a row"))
}
