//go:build integration

package controllers_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Pausing", func() {
	It("freezes every container of the Sandbox and thaws them again", func() {
		ns, a := newNamespace(), newAgent()
		create(service(ns, "db"))
		sbx := sandbox(ns, "pausable", a.node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecyclePaused })
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxPaused))
		Expect(condition(sbx, dsv1alpha1.ConditionPaused)()).To(Equal("True/Paused"))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Paused"))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StatePaused))
		Expect(container(a.docker, sbx, dsv1alpha1.RoleService, "db").State).To(Equal(dd.StatePaused))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(1), "pausing does not roll the topology")

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecycleRunning })
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxRunning))
		Expect(condition(sbx, dsv1alpha1.ConditionPaused)()).To(Equal("False/Running"))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
		Expect(container(a.docker, sbx, dsv1alpha1.RoleService, "db").State).To(Equal(dd.StateRunning))
		Eventually(eventReasons(sbx)).Should(ContainElements("Paused", "Resumed"))
		cur := get(sbx)
		Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
	})
})

var _ = Describe("A poisoned topology", func() {
	var (
		ns  string
		a   *testAgent
		sbx *dsv1alpha1.Sandbox
	)
	BeforeEach(func() {
		ns, a = newNamespace(), newAgent()
		create(service(ns, "db"))
		sbx = sandbox(ns, "fragile", a.node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("follows a service that stops: poisoned, stopped, never repaired, workspace kept", func() {
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RoleService, "db").Name, 1)).To(Succeed())

		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/ServiceExited"))
		Expect(message(sbx, dsv1alpha1.ConditionTopologyPoisoned)).To(ContainSubstring(`"db"`))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("False/ServiceExited"))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("True/ServiceExited"))
		Expect(condition(sbx, dsv1alpha1.ConditionServicesReady)()).To(Equal("False/ServiceExited"))
		Eventually(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).Should(Equal(dd.StateExited), "the topology is stopped")
		Consistently(state(a.docker, sbx, dsv1alpha1.RoleService, "db")).Should(Equal(dd.StateExited), "no silent repair")
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleHolder, "")).Should(Equal(dd.StateRunning), "the workspace is kept")
		Eventually(eventReasons(sbx)).Should(ContainElement("TopologyPoisoned"))
	})

	It("follows a session's primary that stops", func() {
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, 0)).To(Succeed())

		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/PrimaryExited"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxFailed))
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleService, "db")).Should(Equal(dd.StateExited))
	})

	It("is rolled away by a spec change, keeping the workspace's files", func() {
		fillWorkspace(a.docker, sbx, map[string]string{"notes.txt": "kept"})
		Expect(a.docker.Exit(container(a.docker, sbx, dsv1alpha1.RoleService, "db").Name, 1)).To(Succeed())
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed))

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Env = []dsv1alpha1.EnvVar{{Name: "FIXED", Value: "1"}} })
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
		Expect(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)()).To(Equal("False/Healthy"))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(2))
		Expect(readFile(a.docker, container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name, "/workspace/notes.txt")).To(Equal("kept"))
	})
})

var _ = Describe("Readiness", func() {
	It("poisons a service that never passes it", func() {
		ns := newNamespace()
		node := newNode()
		docker := newDocker(node)
		docker.SetExecHandler(failingChecks)
		a := startAgent(node, docker)
		db := service(ns, "db")
		db.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"false"}, PeriodSeconds: 1, FailureThreshold: 1}
		create(db)
		sbx := sandbox(ns, "never-ready", a.node)
		sbx.Spec.Services = []string{"db"}
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionTopologyPoisoned)).Should(Equal("True/ServiceReadinessFailed"))
		Expect(containers(a.docker, sbx, dsv1alpha1.RolePrimary)).To(BeEmpty(), "the primary never starts")
		Expect(get(sbx).Status.Services[0].State).To(Equal(dsv1alpha1.ServiceFailed))
	})
})
