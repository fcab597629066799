package sandbox

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/handoff"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

func withServices(names ...string) func(*dsv1alpha1.Sandbox) {
	return func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.Services = names }
}

// olderGeneration is the scope of the Sandbox's topology generation gen, for making what is left of it.
func (h *harness) olderGeneration(s *scope, gen int64) *scope {
	old := s.sbx.DeepCopy()
	old.Status.TopologyGeneration = gen
	return h.scope(old)
}

func TestObserve(t *testing.T) {
	other := newSandbox("other")
	runStepCases(t, (*Reconciler).observe, []stepCase{
		{
			name:    "sees the Sandbox's containers and networks of every generation, and nothing of another Sandbox",
			sbx:     atTopology(newSandbox("s", withServices("db")), 2, newService("db")),
			objects: []client.Object{newService("db")},
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				old := h.olderGeneration(s, 1)
				h.makeNetwork(old)
				h.exited(h.primarySpec(old), 0)
				h.makeWorkspace(h.scope(other))
			},
			check: func(g Gomega, h *harness, s *scope) {
				old := topology.NamesOf(atTopology(newSandbox("s"), 1))
				g.Expect(s.containers).To(HaveLen(2))
				g.Expect(s.containers).To(HaveKey(s.holderName()))
				g.Expect(s.containers).To(HaveKey(old.Primary()))
				g.Expect(s.networks).To(HaveLen(1))
				g.Expect(s.networks).To(HaveKey(old.Network()))
			},
		},
		{
			name:   "Docker unavailable: the pass ends with DockerUnavailable, in the phase it was, and is retried",
			sbx:    withPhase(atTopology(newSandbox("s"), 1), dsv1alpha1.SandboxRunning),
			faults: func(h *harness) { h.docker.SetUnavailable(true) },
			stop:   true, err: true,
			want:    outcome{phase: dsv1alpha1.SandboxRunning, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "listing the Sandbox's containers failed",
		},
		{
			name:   "a network listing with an unknown outcome is retried",
			sbx:    atTopology(newSandbox("s"), 1),
			faults: func(h *harness) { h.docker.FailNext(fake.OpListNetworks, dd.KindUncertain) },
			stop:   true, err: true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "listing the Sandbox's networks failed",
		},
	})
}

func withPhase(sbx *dsv1alpha1.Sandbox, phase dsv1alpha1.SandboxPhase) *dsv1alpha1.Sandbox {
	sbx.Status.Phase = phase
	return sbx
}

func TestResolveSpec(t *testing.T) {
	runStepCases(t, (*Reconciler).resolveSpec, []stepCase{
		{
			name:    "reads the SandboxServices in spec order and hashes what the topology is built from",
			sbx:     newSandbox("s", withServices("db", "web")),
			objects: []client.Object{newService("web"), newService("db")},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.resolved).To(BeTrue())
				g.Expect(s.missing).To(BeEmpty())
				g.Expect(s.services).To(HaveLen(2))
				g.Expect(s.services[0].Name).To(Equal("db"))
				g.Expect(s.services[1].Name).To(Equal("web"))
				g.Expect(s.hash).To(Equal(topology.Hash(&s.sbx.Spec, s.sbx.Spec.Services, s.services)))
			},
		},
		{
			name:    "notes the first SandboxService that does not exist, without ending the pass",
			sbx:     newSandbox("s", withServices("db", "gone", "also-gone")),
			objects: []client.Object{newService("db")},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.missing).To(Equal("gone"))
				g.Expect(s.services[1]).To(BeNil())
				g.Expect(s.hash).To(Equal(topology.Hash(&s.sbx.Spec, s.sbx.Spec.Services, []*dsv1alpha1.SandboxService{s.services[0], nil, nil})))
			},
		},
		{
			name:    "an API error reading a SandboxService is retried, its words not shown",
			sbx:     newSandbox("s", withServices("db")),
			objects: []client.Object{newService("db")},
			faults: func(h *harness) {
				h.apiFault = func(op string, obj client.Object) error {
					if _, ok := obj.(*dsv1alpha1.SandboxService); ok && op == "get" {
						return apierrors.NewServiceUnavailable("etcd is unwell")
					}
					return nil
				}
			},
			stop: true, err: true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonServiceNotFound}, // the phase it had: none yet
			message: "reading SandboxService db failed; retrying",
		},
	})
}

func TestEnsureTopology(t *testing.T) {
	db := newService("db")
	runStepCases(t, (*Reconciler).ensureTopology, []stepCase{
		{
			name:    "a new Sandbox records its first topology generation and goes on to build it in the same pass",
			sbx:     newSandbox("s", withServices("db")),
			objects: []client.Object{newService("db")},
			want:    building,
			check: func(g Gomega, h *harness, s *scope) {
				st := s.sbx.Status
				g.Expect(st.TopologyGeneration).To(Equal(int64(1)))
				g.Expect(st.TopologyHash).To(Equal(s.hash))
				g.Expect(st.Services).To(Equal([]dsv1alpha1.ServiceInstanceStatus{{Name: "db", State: dsv1alpha1.ServicePending}}))
				g.Expect(meta.IsStatusConditionFalse(st.Conditions, dsv1alpha1.ConditionTopologyPoisoned)).To(BeTrue())
				g.Expect(h.owned(s.sbx.UID)).To(BeZero())
			},
		},
		{
			name: "a lazy Sandbox no command asked to start is Ready with reason Lazy, with nothing recorded or built",
			sbx:  lazy(newSandbox("s")),
			stop: true,
			want: outcome{phase: dsv1alpha1.SandboxPending, ready: true, reason: dsv1alpha1.ReasonLazy},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(BeZero())
				g.Expect(h.owned(s.sbx.UID)).To(BeZero())
			},
		},
		{
			name: "a lazy Sandbox whose start a command asked for records its first generation and builds it",
			sbx:  lazy(newSandbox("s")),
			docker: func(h *harness, s *scope) {
				h.r.Idle = &handoff.Idle{}
				h.r.Idle.Start(s.key(), s.sbx.UID)
			},
			want: building,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(1)))
			},
		},
		{
			name: "a lazy Sandbox Docker holds a topology of is no longer held, whatever its status says",
			sbx:  lazy(newSandbox("s")),
			docker: func(h *harness, s *scope) {
				h.start(h.primarySpec(h.scope(atTopology(s.sbx.DeepCopy(), 1))))
			},
			stop: true,
			// The primary Docker holds held the workspace alone: the holder holds it before the roll removes it.
			events: []string{"Normal " + EventWorkspaceCreated},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(outcomeOf(s).reason).NotTo(Equal(dsv1alpha1.ReasonLazy))
			},
		},
		{
			name: "a first generation Docker holds but the cache does not show yet waits for it, removing nothing",
			sbx:  newSandbox("s"),
			docker: func(h *harness, s *scope) {
				h.start(h.primarySpec(h.scope(atTopology(s.sbx.DeepCopy(), 1))))
				live := h.get(s.sbx)
				live.Status.TopologyGeneration = 1
				h.noErr(h.client.Status().Update(h.ctx, live))
			},
			stop: true,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
				g.Expect(s.sbx.Status.TopologyGeneration).To(BeZero())
				g.Expect(h.container(topology.NamesOf(atTopology(newSandbox("s"), 1)).Primary()).State).To(Equal(dd.StateRunning))
			},
		},
		{
			name: "a missing SandboxService keeps a new Sandbox Pending",
			sbx:  newSandbox("s", withServices("gone")),
			stop: true,
			want: outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonServiceNotFound},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(BeZero())
			},
		},
		{
			name: "a missing SandboxService leaves a built topology in its phase",
			sbx:  withPhase(atTopology(newSandbox("s", withServices("db")), 1, db), dsv1alpha1.SandboxRunning),
			stop: true,
			want: outcome{phase: dsv1alpha1.SandboxRunning, reason: dsv1alpha1.ReasonServiceNotFound},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(1)))
			},
		},
		{
			name:    "the current generation stays, and what is left of older ones is removed",
			sbx:     atTopology(newSandbox("s", withServices("db")), 2, db),
			objects: []client.Object{newService("db")},
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				old := h.olderGeneration(s, 1)
				h.makeNetwork(old)
				h.exited(h.serviceSpec(old, db), 0)
				h.exited(h.primarySpec(old), 0)
				h.makeNetwork(s)
				h.start(h.serviceSpec(s, db))
			},
			check: func(g Gomega, h *harness, s *scope) {
				old := topology.NamesOf(atTopology(newSandbox("s"), 1))
				g.Expect(h.container(old.Primary()).Exists).To(BeFalse())
				g.Expect(h.container(old.Service("db")).Exists).To(BeFalse())
				g.Expect(h.network(old.Network()).Exists).To(BeFalse())
				g.Expect(h.container(s.serviceName("db")).State).To(Equal(dd.StateRunning))
				g.Expect(h.network(s.networkName()).Exists).To(BeTrue())
				g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
				g.Expect(s.containers).NotTo(HaveKey(old.Primary()))
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(2)))
			},
		},
		{
			name:    "a spec change rolls the topology: everything but the workspace goes, the next generation is recorded",
			sbx:     changeSpec(withStarted(atTopology(newSandbox("s", withServices("db")), 1, db))),
			objects: []client.Object{newService("db")},
			docker:  func(h *harness, s *scope) { h.runningTopology(s, db) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonRollingTopology},
			events:  []string{"Normal " + EventRolled},
			check: func(g Gomega, h *harness, s *scope) {
				old := topology.NamesOf(atTopology(newSandbox("s"), 1))
				g.Expect(h.container(old.Primary()).Exists).To(BeFalse())
				g.Expect(h.container(old.Service("db")).Exists).To(BeFalse())
				g.Expect(h.network(old.Network()).Exists).To(BeFalse())
				g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
				g.Expect(h.volume(s.volumeName()).Exists).To(BeTrue())
				st := s.sbx.Status
				g.Expect(st.TopologyGeneration).To(Equal(int64(2)))
				g.Expect(st.TopologyHash).To(Equal(s.hash))
				g.Expect(st.ContainerID).To(BeEmpty())
				g.Expect(st.StartTime).To(BeNil())
				g.Expect(st.Services).To(Equal([]dsv1alpha1.ServiceInstanceStatus{{Name: "db", State: dsv1alpha1.ServicePending}}))
			},
		},
		{
			name:   "a spec change while the holder waits for the node's other starts: the holder starts before the primary goes",
			sbx:    changeSpec(withStarted(atTopology(newSandbox("s"), 1))),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonRollingTopology},
			events: []string{"Normal " + EventWorkspaceCreated, "Normal " + EventRolled},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(topology.NamesOf(atTopology(newSandbox("s"), 1)).Primary()).Exists).To(BeFalse())
				g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
				g.Expect(h.view.calls()).To(Equal([]string{"start " + s.holderName()}))
			},
		},
		{
			name:    "a roll waits while the cache is behind the agent's own last write, removing nothing",
			sbx:     changeSpec(atTopology(newSandbox("s"), 1)),
			objects: nil,
			docker: func(h *harness, s *scope) {
				h.start(h.primarySpec(s))
				live := h.get(s.sbx)
				live.Status.TopologyGeneration = 2
				h.noErr(h.client.Status().Update(h.ctx, live))
			},
			stop: true,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(1)))
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StateRunning))
			},
		},
		{
			name:    "a finished run is not rolled because a SandboxService it names was replaced",
			sbx:     finished(atTopology(newSandbox("s", run(), withServices("db")), 1, db)),
			objects: []client.Object{newService("db", func(svc *dsv1alpha1.SandboxService) { svc.UID = "uid-svc-db-2" })},
			docker: func(h *harness, s *scope) {
				h.makeNetwork(s)
				h.exited(h.serviceSpec(s, db), 143)
				h.exited(h.primarySpec(s), 0)
			},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(1)))
				g.Expect(h.container(s.primaryName()).Exists).To(BeTrue())
			},
		},
		{
			name:   "a finished run is rolled by a change of its own spec",
			sbx:    changeSpec(finished(atTopology(newSandbox("s", run()), 1))),
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonRollingTopology},
			events: []string{"Normal " + EventRolled},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(2)))
				g.Expect(s.sbx.Status.Result).To(BeNil())
				g.Expect(s.sbx.Status.FinishTime).To(BeNil())
			},
		},
		{
			name: "a removal Docker refuses keeps what is left and is retried before anything new is built",
			sbx:  atTopology(newSandbox("s"), 2),
			docker: func(h *harness, s *scope) {
				h.exited(h.primarySpec(h.olderGeneration(s, 1)), 0)
			},
			faults: func(h *harness) { h.docker.FailNext(fake.OpRemoveContainer, dd.KindConflict) },
			stop:   true, err: true,
			want: outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonCleanupFailed},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(topology.NamesOf(atTopology(newSandbox("s"), 1)).Primary()).Exists).To(BeTrue())
			},
		},
		{
			name:   "Docker unavailable during a roll: DockerUnavailable, retried, the generation unchanged",
			sbx:    changeSpec(atTopology(newSandbox("s"), 1)),
			docker: func(h *harness, s *scope) { h.runningTopology(s) },
			faults: func(h *harness) { h.docker.FailNext(fake.OpRemoveContainer, dd.KindUnavailable) },
			stop:   true, err: true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "Docker is not reachable",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.TopologyGeneration).To(Equal(int64(1)))
			},
		},
	})
}

// changeSpec changes the Sandbox's own spec after its topology was recorded.
func changeSpec(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	sbx.Spec.Env = append(sbx.Spec.Env, dsv1alpha1.EnvVar{Name: "CHANGED", Value: "1"})
	return sbx
}

func TestRemoveFailedStart(t *testing.T) {
	db := newService("db")
	poisoned := func(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
		sbx.Status.NetworkID = "recorded"
		return withCondition(sbx, dsv1alpha1.ConditionTopologyPoisoned, true, dsv1alpha1.ReasonServiceNotReady, "the start did not finish")
	}
	builtButNotStarted := func(h *harness, s *scope) {
		h.makeWorkspace(s)
		h.start(h.serviceSpec(s, db))
		h.create(h.primarySpec(s))
	}
	runStepCases(t, (*Reconciler).removeFailedStart, []stepCase{
		{
			name:    "a live start is left alone",
			sbx:     atTopology(newSandbox("s", withServices("db")), 1, db),
			objects: []client.Object{newService("db")},
			docker:  builtButNotStarted,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.serviceName("db")).State).To(Equal(dd.StateRunning))
				g.Expect(h.network(s.networkName()).Exists).To(BeTrue())
			},
		},
		{
			name:    "a start poisoned before its primary ran is removed, all but the workspace",
			sbx:     poisoned(atTopology(newSandbox("s", withServices("db")), 1, db)),
			objects: []client.Object{newService("db")},
			docker:  builtButNotStarted,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.serviceName("db")).Exists).To(BeFalse())
				g.Expect(h.container(s.primaryName()).Exists).To(BeFalse())
				g.Expect(h.network(s.networkName()).Exists).To(BeFalse())
				g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
				g.Expect(s.sbx.Status.NetworkID).To(BeEmpty())
			},
		},
		{
			name:    "a start poisoned before its primary ran frees its topology subnet with its network",
			sbx:     poisoned(atTopology(newSandbox("s", withServices("db")), 1, db)),
			objects: []client.Object{newService("db")},
			docker: func(h *harness, s *scope) {
				h.withSubnets("10.120.0.0/28") // one subnet, which the Sandbox's network takes
				builtButNotStarted(h, s)
			},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.network(s.networkName()).Exists).To(BeFalse())
				_, err := h.r.Subnets.pool.Allocate("another-sandbox")
				g.Expect(err).NotTo(HaveOccurred(), "the subnet is free for another Sandbox")
			},
		},
		{
			name:    "a topology poisoned after its primary ran is kept for holdSettled to stop",
			sbx:     poisoned(atTopology(newSandbox("s", withServices("db")), 1, db)),
			objects: []client.Object{newService("db")},
			docker: func(h *harness, s *scope) {
				h.start(h.serviceSpec(s, db))
				h.exited(h.primarySpec(s), 1)
			},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.serviceName("db")).State).To(Equal(dd.StateRunning))
				g.Expect(h.container(s.primaryName()).Exists).To(BeTrue())
				g.Expect(s.sbx.Status.NetworkID).To(Equal("recorded"))
			},
		},
		{
			name:    "a removal Docker does not confirm is retried",
			sbx:     poisoned(atTopology(newSandbox("s", withServices("db")), 1, db)),
			objects: []client.Object{newService("db")},
			docker:  builtButNotStarted,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpRemoveNetwork, dd.KindUncertain) },
			stop:    true, err: true,
			want: outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonCleanupFailed},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.NetworkID).To(Equal("recorded"))
			},
		},
	})
}

// lazy makes the Sandbox start at its first command (spec.start: Lazy).
func lazy(sbx *dsv1alpha1.Sandbox) *dsv1alpha1.Sandbox {
	sbx.Spec.Start = dsv1alpha1.StartLazy
	return sbx
}
