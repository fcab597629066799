package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

func TestEnsureLifecycle(t *testing.T) {
	db, web := newService("db"), newService("web")
	paused := func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused }
	topology := func(mutate ...func(*dsv1alpha1.Sandbox)) *dsv1alpha1.Sandbox {
		return withStarted(atTopology(newSandbox("s", append(mutate, withServices("db", "web"))...), 1, db, web))
	}
	services := []client.Object{newService("db"), newService("web")}
	// all builds the topology, each container as build leaves it
	all := func(build func(h *harness, spec dd.ContainerSpec) string) func(h *harness, s *scope) {
		return func(h *harness, s *scope) {
			build(h, h.serviceSpec(s, db))
			build(h, h.serviceSpec(s, web))
			build(h, h.primarySpec(s))
		}
	}
	running, frozen := all((*harness).start), all((*harness).paused)
	states := func(want dd.ContainerState) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			for _, name := range []string{s.serviceName("db"), s.serviceName("web"), s.primaryName()} {
				g.Expect(h.container(name).State).To(Equal(want), name)
			}
		}
	}
	pausedCondition := func(on bool, reason string) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			c := condition(s.sbx, dsv1alpha1.ConditionPaused)
			g.Expect(c.Status == metav1.ConditionTrue).To(Equal(on))
			g.Expect(c.Reason).To(Equal(reason))
		}
	}
	runStepCases(t, (*Reconciler).ensureLifecycle, []stepCase{
		{
			name:    "Paused freezes the primary first, then the services in reverse start order",
			sbx:     topology(paused),
			objects: services,
			docker:  running,
			want:    outcome{phase: dsv1alpha1.SandboxPaused, ready: true, reason: dsv1alpha1.ReasonPaused},
			events:  []string{"Normal " + EventPaused},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(Equal([]string{"pause " + s.primaryName(), "pause " + s.serviceName("web"), "pause " + s.serviceName("db")}))
				states(dd.StatePaused)(g, h, s)
				pausedCondition(true, dsv1alpha1.ReasonPaused)(g, h, s)
			},
		},
		{
			name:    "Running thaws the services in start order, the primary last",
			sbx:     topology(),
			objects: services,
			docker:  frozen,
			events:  []string{"Normal " + EventResumed},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(Equal([]string{"unpause " + s.serviceName("db"), "unpause " + s.serviceName("web"), "unpause " + s.primaryName()}))
				states(dd.StateRunning)(g, h, s)
				pausedCondition(false, dsv1alpha1.ReasonRunning)(g, h, s)
			},
		},
		{
			name:    "a topology already as asked is left alone, without an Event",
			sbx:     topology(paused),
			objects: services,
			docker:  frozen,
			want:    outcome{phase: dsv1alpha1.SandboxPaused, ready: true, reason: dsv1alpha1.ReasonPaused},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(BeEmpty())
				pausedCondition(true, dsv1alpha1.ReasonPaused)(g, h, s)
			},
		},
		{
			name:    "a Sandbox a capture holds frozen is left frozen until the capture lets go",
			sbx:     topology(),
			objects: services,
			docker: func(h *harness, s *scope) {
				running(h, s)
				h.noErr(h.docker.PauseContainer(h.ctx, s.primaryName()))
				h.r.Freezes.Hold(s.sbx, "c")
			},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(BeEmpty())
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StatePaused))
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
				g.Expect(condition(s.sbx, dsv1alpha1.ConditionPaused).Type).To(BeEmpty(), "the Paused condition is not touched")
			},
		},
		{
			name:    "a freeze Docker refuses is retried: PauseFailed",
			sbx:     topology(paused),
			objects: services,
			docker:  running,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpPauseContainer, dd.KindConflict) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonPauseFailed},
			check:   pausedCondition(false, dsv1alpha1.ReasonPauseFailed),
		},
		{
			name:    "Docker unavailable while thawing: DockerUnavailable, retried",
			sbx:     topology(),
			objects: services,
			docker:  frozen,
			faults:  func(h *harness) { h.docker.SetUnavailable(true) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "freezing or thawing " + newScope(atTopology(newSandbox("s"), 1)).serviceName("db") + " failed",
			check:   pausedCondition(false, dsv1alpha1.ReasonPauseFailed),
		},
	})
}

// TestReconcileKeepsAPausedSandboxPausedDuringACapture: while a capture holds a Sandbox that its spec keeps
// Paused, a pass leaves it frozen and says so.
func TestReconcileKeepsAPausedSandboxPausedDuringACapture(t *testing.T) {
	g := NewWithT(t)
	h, sbx := converged(t, g)
	sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
	g.Expect(h.client.Update(h.ctx, sbx)).To(Succeed())
	paused := h.passUntil(g, sbx, 2, func(sbx *dsv1alpha1.Sandbox) bool { return sbx.Status.Phase == dsv1alpha1.SandboxPaused })

	h.r.Freezes.Hold(paused, "c")
	_, err := h.pass(sbx)
	g.Expect(err).NotTo(HaveOccurred())
	got := h.get(sbx)
	g.Expect(got.Status.Phase).To(Equal(dsv1alpha1.SandboxPaused))
	g.Expect(condition(got, dsv1alpha1.ConditionReady).Reason).To(Equal(dsv1alpha1.ReasonPaused))
	g.Expect(got.ResourceVersion).To(Equal(paused.ResourceVersion), "nothing to write: the status is as it was")
	g.Expect(h.container(topology.NamesOf(got).Primary()).State).To(Equal(dd.StatePaused))
}

func TestThawLooksAgainAtAContainerSeenFrozen(t *testing.T) {
	g := NewWithT(t)
	h := newHarness(t)
	s := newScope(withStarted(atTopology(newSandbox("s"), 1)))
	h.makeWorkspace(s)
	h.start(h.primarySpec(s))
	h.continues(h.r.observe(h.ctx, s))
	// Seen frozen as the pass began, by a capture that has thawed it since.
	c := s.containers[s.primaryName()]
	c.State = dd.StatePaused
	s.containers[s.primaryName()] = c
	for len(h.events.Events) > 0 {
		<-h.events.Events // the workspace's, made above
	}

	h.continues(h.r.ensureLifecycle(h.ctx, s))
	g.Expect(h.docker.Calls(fake.OpUnpauseContainer)).To(BeZero(), "a running container is not thawed")
	g.Expect(h.events.Events).To(BeEmpty(), "no Resumed Event for a thaw that did not happen")
}
