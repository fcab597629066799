//go:build integration

package controllers_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/agent"
)

// stubbornDocker is the fake daemon with a twist: while uncertain is set, removing anything answers
// Uncertain without removing it, as when the daemon's answer is lost and the removal may not have happened.
// It also records the order of removals.
type stubbornDocker struct {
	*fake.Driver
	uncertain atomic.Bool
	mu        sync.Mutex
	removed   []string // role, or "network"/"volume", in removal order
}

func (d *stubbornDocker) RemoveContainer(ctx context.Context, name string) error {
	if d.uncertain.Load() {
		return dd.NewError(dd.KindUncertain, dd.PhaseRemove, name, "the outcome is unknown")
	}
	if c, err := d.ObserveContainer(ctx, name); err == nil && c.Exists {
		_, role, svc := dd.OwnerFromLabels(c.Labels)
		d.record(role + svc)
	}
	return d.Driver.RemoveContainer(ctx, name)
}

func (d *stubbornDocker) RemoveNetwork(ctx context.Context, name string) error {
	if d.uncertain.Load() {
		return dd.NewError(dd.KindUncertain, dd.PhaseRemove, name, "the outcome is unknown")
	}
	d.record("network")
	return d.Driver.RemoveNetwork(ctx, name)
}

func (d *stubbornDocker) RemoveVolume(ctx context.Context, name string) error {
	d.record("volume")
	return d.Driver.RemoveVolume(ctx, name)
}

func (d *stubbornDocker) record(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removed = append(d.removed, what)
}

func (d *stubbornDocker) removals() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.removed...)
}

// newStubbornAgent starts an agent whose driver is a stubbornDocker.
func newStubbornAgent() (*testAgent, *stubbornDocker) {
	node := newNode()
	stubborn := &stubbornDocker{Driver: newDocker(node)}
	a := startAgent(node, stubborn.Driver, func(o *agent.Options) { o.Driver = stubborn })
	return a, stubborn
}

// waitIdle waits until the agent has stopped looking at Docker (no pass for a while), so that what a spec
// does next is seen only through the path under test.
func waitIdle(a *testAgent) {
	GinkgoHelper()
	last := -1
	Eventually(func() bool {
		n := a.docker.Calls(fake.OpListContainers)
		idle := n == last
		last = n
		return idle
	}, timeout, 400*time.Millisecond).Should(BeTrue())
}

var _ = Describe("Faults", func() {
	It("a lost create response makes no duplicate", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "db"))
		for range 3 {
			a.docker.LoseNextResponse(fake.OpEnsureContainer)
		}
		a.docker.LoseNextResponse(fake.OpEnsureNetwork)
		a.docker.LoseNextResponse(fake.OpStartContainer)
		sbx := sandbox(ns, "lossy", a.node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		for _, role := range []string{dsv1alpha1.RoleHolder, dsv1alpha1.RoleService, dsv1alpha1.RolePrimary} {
			Expect(containers(a.docker, sbx, role)).To(HaveLen(1), role)
		}
		nets, err := a.docker.ListNetworks(ctx(), map[string]string{dsv1alpha1.LabelUID: string(get(sbx).UID)})
		Expect(err).NotTo(HaveOccurred())
		Expect(nets).To(HaveLen(1))
	})

	It("an event stream drop is recovered when the stream resumes", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "deaf", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		waitIdle(a)

		a.docker.DropEvents()
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 1)).To(Succeed())
		Consistently(phase(sbx), 700*time.Millisecond).Should(Equal(dsv1alpha1.SandboxRunning), "the die event was lost")
		a.docker.ResumeEvents()
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned), 3*time.Second).Should(Equal("True/PrimaryExited"))
	})

	It("the periodic sweep catches an event that was lost for good", func() {
		ns, a := newNamespace(), newAgent(func(o *agent.Options) { o.SweepPeriod = 300 * time.Millisecond })
		sbx := sandbox(ns, "missed", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		a.docker.DropEvents()
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 1)).To(Succeed())
		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned), 3*time.Second).Should(Equal("True/PrimaryExited"))
	})

	It("a daemon that does not answer is reported and recovered from", func() {
		ns, a := newNamespace(), newAgent()
		a.docker.SetUnavailable(true)
		sbx := sandbox(ns, "patient", a.node)
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/DockerUnavailable"))
		Expect(condition(sbx, dsv1alpha1.ConditionReconciling)()).To(Equal("True/DockerUnavailable"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).NotTo(ContainSubstring("conflict"))
		a.docker.SetUnavailable(false)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})
})

var _ = Describe("Deletion", func() {
	It("removes primary, services in reverse order, network, holder, volume, then lets the Sandbox go", func() {
		ns := newNamespace()
		a, stubborn := newStubbornAgent()
		create(service(ns, "first"))
		create(service(ns, "second"))
		sbx := sandbox(ns, "tidy", a.node)
		sbx.Spec.Services = []string{"first", "second"}
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		uid := string(get(sbx).UID)

		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero())
		Expect(stubborn.removals()).To(Equal([]string{
			dsv1alpha1.RolePrimary, dsv1alpha1.RoleService + "second", dsv1alpha1.RoleService + "first", "network", dsv1alpha1.RoleHolder, "volume",
		}))
		Eventually(eventReasons(sbx)).Should(ContainElement("CleanedUp"))
	})

	It("an uncertain removal holds the finalizer, says so, and is retried until Docker confirms", func() {
		ns := newNamespace()
		a, stubborn := newStubbornAgent()
		sbx := sandbox(ns, "sticky", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		uid := string(get(sbx).UID)

		stubborn.uncertain.Store(true)
		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(condition(sbx, dsv1alpha1.ConditionReconciling)).Should(Equal("True/CleanupFailed"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxTerminating))
		Expect(message(sbx, dsv1alpha1.ConditionReconciling)).To(ContainSubstring("not confirmed"))
		Consistently(func() []string { return get(sbx).Finalizers }).Should(ContainElement(dsv1alpha1.FinalizerCleanup))

		stubborn.uncertain.Store(false)
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero())
	})

	It("an uncertain removal of the old topology blocks the new one until a retry confirms it", func() {
		ns := newNamespace()
		a, stubborn := newStubbornAgent()
		sbx := sandbox(ns, "blocked", a.node)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		stubborn.uncertain.Store(true)
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Args = nil; s.Spec.WorkingDir = "/tmp" })
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("False/CleanupFailed"))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring("waits"))
		Consistently(func() int { return len(containers(a.docker, sbx, dsv1alpha1.RolePrimary)) }).Should(Equal(1))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(1), "no new generation while the old may run")

		stubborn.uncertain.Store(false)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(2))
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(HaveLen(1))
	})
})
