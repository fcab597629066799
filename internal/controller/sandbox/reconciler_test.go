package sandbox

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/testutil/recorder"
	"github.com/dockside-dev/dockside/internal/topology"
)

// pass runs one Reconcile over sbx.
func (h *harness) pass(sbx *dsv1alpha1.Sandbox) (ctrl.Result, error) {
	return h.r.Reconcile(h.ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(sbx)})
}

// passUntil runs error-free passes over sbx until the Sandbox read back is done, at most limit of them, and
// returns it.
func (h *harness) passUntil(g Gomega, sbx *dsv1alpha1.Sandbox, limit int, done func(*dsv1alpha1.Sandbox) bool) *dsv1alpha1.Sandbox {
	h.t.Helper()
	for range limit {
		_, err := h.pass(sbx)
		g.Expect(err).NotTo(HaveOccurred())
		h.checksDone() // the readiness checks it asked for, whose wake brings the next pass
		if got := h.get(sbx); done(got) {
			return got
		}
	}
	h.t.Fatalf("the Sandbox did not get there in %d passes: %+v", limit, h.get(sbx).Status)
	return nil
}

func isReady(sbx *dsv1alpha1.Sandbox) bool {
	return meta.IsStatusConditionTrue(sbx.Status.Conditions, dsv1alpha1.ConditionReady)
}

// bound is a Sandbox its author bound to testNode: not admitted yet, no status.
func bound(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	sbx.Finalizers = nil
	return sbx
}

func TestReconcileBuildsAndCleansUp(t *testing.T) {
	redis := newService("redis", withReadiness(3))
	for _, tc := range []struct {
		name    string
		sbx     *dsv1alpha1.Sandbox
		objects []client.Object
		// what Docker holds once it converged, besides the workspace and its holder
		network string // the network the primary joins; "" for none
		service string // a service instance that runs; "" for none
		events  []string
	}{
		{
			name:   "a session without a network",
			sbx:    bound(newSandbox("shell")),
			events: []string{"Normal " + EventStarted, "Normal " + EventWorkspaceCreated},
		},
		{
			name:    "an Isolated session with a service that has a readiness check",
			sbx:     bound(newSandbox("python", withNetwork(dsv1alpha1.NetworkIsolated), withServices("redis"))),
			objects: []client.Object{redis},
			network: topology.NamesOf(atTopology(newSandbox("python"), 1)).Network(),
			service: "redis",
			events: []string{"Normal " + EventNetworkCreated, "Normal " + EventServiceStarted,
				"Normal " + EventServiceReady, "Normal " + EventStarted, "Normal " + EventWorkspaceCreated},
		},
		{
			name:    "an Unrestricted session on the node's shared bridge",
			sbx:     bound(newSandbox("web", withNetwork(dsv1alpha1.NetworkUnrestricted))),
			network: dd.NodeNetworkName(testNode),
			events:  []string{"Normal " + EventStarted, "Normal " + EventWorkspaceCreated},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			h := newHarness(t, append(tc.objects, tc.sbx)...)

			_, err := h.pass(tc.sbx)
			g.Expect(err).NotTo(HaveOccurred())
			got := h.get(tc.sbx)
			g.Expect(controllerutil.ContainsFinalizer(got, dsv1alpha1.FinalizerCleanup)).To(BeTrue(), "admitted")
			g.Expect(got.Status.TopologyGeneration).To(Equal(int64(1)), "the first generation, built in the pass that records it")

			if !isReady(got) { // a service's readiness check takes passes of its own
				got = h.passUntil(g, tc.sbx, 5, isReady)
			}
			names := topology.NamesOf(got)
			g.Expect(h.container(names.Holder()).Exists).To(BeFalse(), "Ready before the workspace holder is made")
			got = h.holderPass(g, got)
			st := got.Status
			g.Expect(st.Phase).To(Equal(dsv1alpha1.SandboxRunning))
			g.Expect(st.NodeName).To(Equal(testNode))
			g.Expect(st.ObservedGeneration).To(Equal(got.Generation))
			for _, c := range []string{dsv1alpha1.ConditionReconciling, dsv1alpha1.ConditionStalled, dsv1alpha1.ConditionTopologyPoisoned} {
				g.Expect(meta.IsStatusConditionFalse(st.Conditions, c)).To(BeTrue(), c)
			}
			for _, c := range []string{dsv1alpha1.ConditionScheduled, dsv1alpha1.ConditionServicesReady, dsv1alpha1.ConditionServicesUpToDate} {
				g.Expect(meta.IsStatusConditionTrue(st.Conditions, c)).To(BeTrue(), c)
			}
			primary := h.container(names.Primary())
			g.Expect(primary.State).To(Equal(dd.StateRunning))
			g.Expect(primary.ID).To(Equal(st.ContainerID))
			g.Expect(primary.Network).To(Equal(tc.network))
			g.Expect(h.container(names.Holder()).State).To(Equal(dd.StateRunning))
			if tc.service != "" {
				g.Expect(h.container(names.Service(tc.service)).State).To(Equal(dd.StateRunning))
				g.Expect(st.Services).To(HaveLen(1))
				g.Expect(st.Services[0].State).To(Equal(dsv1alpha1.ServiceReady))
			}
			g.Expect(recorder.Drain(h.events)).To(Equal(tc.events))

			_, err = h.pass(tc.sbx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.get(tc.sbx).ResourceVersion).To(Equal(got.ResourceVersion), "a pass over a converged Sandbox writes nothing")
			g.Expect(recorder.Drain(h.events)).To(BeEmpty(), "nor records anything")

			g.Expect(h.client.Delete(h.ctx, got)).To(Succeed())
			_, err = h.pass(tc.sbx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.get(tc.sbx)).To(BeNil(), "the finalizer is gone, and with it the Sandbox")
			g.Expect(h.owned(got.UID)).To(BeZero())
			if tc.network != "" {
				g.Expect(h.network(tc.network).Exists).To(BeFalse())
			}
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Normal " + EventCleanedUp}))
		})
	}
}

func TestReconcileRunsARunToItsResult(t *testing.T) {
	g := NewWithT(t)
	sbx := bound(newSandbox("hello", run()))
	h := newHarness(t, sbx)

	got := h.passUntil(g, sbx, 6, func(sbx *dsv1alpha1.Sandbox) bool { return sbx.Status.Phase == dsv1alpha1.SandboxRunning })
	g.Expect(isReady(got)).To(BeFalse(), "a run is Ready only once it succeeded")
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, dsv1alpha1.ConditionReconciling)).To(BeTrue())

	primary := topology.NamesOf(got).Primary()
	h.noErr(h.docker.WriteLogs(primary, []byte("hello\n")))
	h.noErr(h.docker.Exit(primary, 0))
	got = h.passUntil(g, sbx, 1, isReady)
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxSucceeded))
	g.Expect(got.Status.Result.OutputTail).To(Equal("hello\n"))
	g.Expect(condition(got, dsv1alpha1.ConditionReady).Reason).To(Equal(dsv1alpha1.ReasonCompleted))
	g.Expect(recorder.Drain(h.events)).To(ContainElement("Normal " + EventRunSucceeded))

	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.get(sbx).ResourceVersion).To(Equal(got.ResourceVersion), "a finished run stays as it ended")
	g.Expect(h.container(primary).State).To(Equal(dd.StateExited), "and is never started again")
}

// converged is a harness whose session (no services, no network) is Ready after a few passes, its
// workspace holder made by the pass after.
func converged(t *testing.T, g Gomega) (*harness, *dsv1alpha1.Sandbox) {
	sbx := bound(newSandbox("shell"))
	h := newHarness(t, sbx)
	got := h.holderPass(g, h.passUntil(g, sbx, 5, isReady))
	recorder.Drain(h.events)
	return h, got
}

// holderPass is the pass that the primary's start asks for at once: it makes the workspace holder, and writes
// nothing to the Sandbox.
func (h *harness) holderPass(g Gomega, sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	h.t.Helper()
	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	got := h.get(sbx)
	g.Expect(got.ResourceVersion).To(Equal(sbx.ResourceVersion), "the holder's pass writes nothing")
	g.Expect(h.container(topology.NamesOf(got).Holder()).State).To(Equal(dd.StateRunning), "the holder runs after the pass the start asked for")
	return got
}

func TestReconcileReportsDockerUnavailableAndRetries(t *testing.T) {
	g := NewWithT(t)
	h, sbx := converged(t, g)

	h.docker.SetUnavailable(true)
	_, err := h.pass(sbx)
	g.Expect(dd.IsUnavailable(err)).To(BeTrue(), "returned, so that backoff retries it")
	got := h.get(sbx)
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxRunning), "the phase it was in")
	for typ, on := range map[string]bool{dsv1alpha1.ConditionReady: false, dsv1alpha1.ConditionReconciling: true, dsv1alpha1.ConditionStalled: false} {
		c := condition(got, typ)
		g.Expect(c.Status == metav1.ConditionTrue).To(Equal(on), typ)
		g.Expect(c.Reason).To(Equal(dsv1alpha1.ReasonDockerUnavailable), typ)
	}

	h.docker.SetUnavailable(false)
	got = h.passUntil(g, sbx, 1, isReady)
	g.Expect(condition(got, dsv1alpha1.ConditionReady).Reason).To(Equal(dsv1alpha1.ReasonRunning))
	g.Expect(recorder.Drain(h.events)).To(BeEmpty(), "nothing was rebuilt")
}

func TestReconcileWritesAVerdict(t *testing.T) {
	for _, conflict := range []bool{false, true} {
		name := "the first write stands"
		if conflict {
			name = "the first write meets a conflict"
		}
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			h, sbx := converged(t, g)
			verdict := verdictOn(sbx, sbx.Status.TopologyGeneration)
			verdict.Related = &dsv1alpha1.Execution{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "e"}}
			done := h.handOver(verdict)

			if conflict {
				h.apiFault = func(op string, obj client.Object) error {
					if op == "patch status" {
						h.apiFault = nil
						return apierrors.NewConflict(schema.GroupResource{Group: "dockside.dev", Resource: "sandboxes"}, obj.GetName(), errors.New("stale"))
					}
					return nil
				}
				res, err := h.pass(sbx)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.RequeueAfter).To(Equal(status.StaleRetry))
				g.Expect(topology.Poisoned(h.get(sbx))).To(BeFalse())
				g.Expect(h.pending(sbx)).To(BeTrue(), "the verdict waits for a write that stands")
				g.Expect(recorder.Drain(h.events)).To(BeEmpty())
			}

			_, err := h.pass(sbx)
			g.Expect(err).NotTo(HaveOccurred())
			got := h.get(sbx)
			c := condition(got, dsv1alpha1.ConditionTopologyPoisoned)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(c.Reason).To(Equal(dsv1alpha1.ReasonDeadlineExceeded))
			g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxFailed))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, dsv1alpha1.ConditionStalled)).To(BeTrue())
			g.Expect(h.container(topology.NamesOf(got).Primary()).State).To(Equal(dd.StateRunning), "the pass that records the verdict acts on nothing")
			g.Eventually(done).WithTimeout(time.Minute).Should(Receive(BeNil()), "the run's wait ends once the write stands")
			g.Expect(recorder.Drain(h.events)).To(Equal([]string{"Warning " + EventPoisoned}))

			_, err = h.pass(got) // the pass that reads the verdict back
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(h.container(topology.NamesOf(got).Primary()).State).To(Equal(dd.StateExited), "the poisoned topology is stopped")
			g.Expect(h.container(topology.NamesOf(got).Holder()).State).To(Equal(dd.StateRunning), "its workspace kept")
		})
	}
}
