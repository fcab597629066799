package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/topology"
)

// A new session's holder leaves Docker to a Sandbox of the node still on its way to its first start, and is
// made once that one has started, woken by the first pass that finds no start under way.
func TestHolderWaitsForTheNodesOtherStarts(t *testing.T) {
	g := NewWithT(t)
	// second is admitted and on its way: no pass has started it yet.
	first, second := bound(newSandbox("first")), newSandbox("second")
	h := newHarness(t, first, second)

	ready := h.passUntil(g, first, 5, isReady)
	res, err := h.pass(ready)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.container(topology.NamesOf(ready).Holder()).Exists).To(BeFalse(), "the holder waits while another start is under way")
	g.Expect(res.RequeueAfter).To(And(BeNumerically(">", 0), BeNumerically("<=", holderWait)), "the holder is made when the wait runs out at the latest")

	h.passUntil(g, second, 5, isReady)
	_, err = h.pass(second) // the pass after its start: no start is under way any more
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.container(topology.NamesOf(second).Holder()).State).To(Equal(dd.StateRunning), "the last start's holder does not wait")
	h.woken(first)

	_, err = h.pass(ready)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.container(topology.NamesOf(ready).Holder()).State).To(Equal(dd.StateRunning))
}

// The wait is bounded: a holder whose primary started holderWait ago is made even while another start is
// under way.
func TestHolderWaitIsBounded(t *testing.T) {
	g := NewWithT(t)
	first, second := bound(newSandbox("first")), newSandbox("second")
	h := newHarness(t, first, second)

	ready := h.passUntil(g, first, 5, isReady)
	h.view.age(topology.NamesOf(ready).Primary(), holderWait)
	_, err := h.pass(ready)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.container(topology.NamesOf(ready).Holder()).State).To(Equal(dd.StateRunning))
	g.Expect(h.get(second).Status.StartTime).To(BeNil(), "the other start was still under way")
}

// A lazy Sandbox is Ready with no start to come until a command asks for one: no holder waits for it.
func TestHolderDoesNotWaitForALazySandbox(t *testing.T) {
	g := NewWithT(t)
	first, idle := bound(newSandbox("first")), bound(lazy(newSandbox("idle")))
	h := newHarness(t, first, idle)
	h.passUntil(g, idle, 5, isReady)

	ready := h.passUntil(g, first, 5, isReady)
	_, err := h.pass(ready)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.container(topology.NamesOf(ready).Holder()).State).To(Equal(dd.StateRunning))
	g.Expect(h.get(idle).Status.Phase).To(Equal(dsv1alpha1.SandboxPending), "the lazy Sandbox stays unstarted")
}
