//go:build integration

package controllers_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// Lazy start (spec.start: Lazy, docs/design/lazy-start.md): the Sandbox is bound, admitted and Ready with
// reason Lazy while Docker holds nothing of it, and its first command builds the topology and then runs.
var _ = Describe("Lazy start", func() {
	lazy := func(s *dsv1alpha1.Sandbox) { s.Spec.Start = dsv1alpha1.StartLazy }

	It("is Ready with no container until its first Execution, which starts it and then runs", func() {
		ns, a, jobs := newNamespace(), newAgent(), newJobLog()
		a.docker.SetExecHandler(jobs.handle)
		create(service(ns, "db"))
		sbx := session(ns, "sleepy", a.node, busybox, lazy, func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"db"} })
		create(sbx)

		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Lazy"))
		Expect(condition(sbx, dsv1alpha1.ConditionReconciling)()).To(Equal("False/Lazy"), "kstatus reads it Current")
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("False/Lazy"))
		Expect(condition(sbx, dsv1alpha1.ConditionScheduled)()).To(Equal("True/Bound"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxPending))
		Expect(message(sbx, dsv1alpha1.ConditionReady)).To(ContainSubstring("first command"))
		uid := string(get(sbx).UID)
		Consistently(func() int { return holdings(a.docker, uid) }).WithTimeout(2*time.Second).Should(BeZero(),
			"nothing is built before a command comes: no container, network or volume")

		ex := execution(ns, "first", "sleepy", "echo")
		create(ex)
		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		Expect(jobs.started()).To(Equal([]string{"first"}))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(1))
		Expect(state(a.docker, sbx, dsv1alpha1.RoleService, "db")()).To(Equal(dd.StateRunning))
		Expect(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")()).To(Equal(dd.StateRunning))

		By("deleting it removes what the start built")
		Expect(k8s.Delete(ctx(), sbx)).To(Succeed())
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero())
	})

	It("fails its first Execution with the reason its start failed", func() {
		ns, a := newNamespace(), newAgent()
		sbx := session(ns, "doomed", a.node, "dockside.dev/never:local", lazy, func(s *dsv1alpha1.Sandbox) { s.Spec.ImagePullPolicy = dsv1alpha1.PullNever })
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Lazy"), "the image is looked for only at the start")

		ex := execution(ns, "first", "doomed", "echo")
		create(ex)
		Eventually(execState(ex)).Should(Equal("Failed/SandboxNotReady"))
		Expect(getExec(ex).Status.Message).To(ContainSubstring("dockside.dev/never:local"))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("True/ImageNotPresent"))
	})

	It("is started by a change to start: Immediate", func() {
		ns, a := newNamespace(), newAgent()
		sbx := session(ns, "decided", a.node, busybox, lazy)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Lazy"))
		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Start = dsv1alpha1.StartImmediate })
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))
	})

	It("is refused by a warm pool, whose claims then get lazy cold starts", func() {
		ns, a := newNamespace(), newAgent()
		tpl := template(ns, "later", "v1")
		tpl.Spec.Sandbox.Start = dsv1alpha1.StartLazy
		create(tpl)
		pool := warmPool(ns, "later", "later", 2)
		create(pool)
		Eventually(poolCounts(pool)).Should(Equal("0/0/0 LazyTemplate"))
		Expect(poolSandboxes(ns, "later")).To(BeEmpty())

		claim := sandboxClaim(ns, "task", "later")
		create(claim)
		Eventually(claimState(claim)).Should(Equal("True/Claimed Cold"))
		sbx := claimed(claim)
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Lazy"))
		Expect(holdings(a.docker, string(sbx.UID))).To(BeZero())
	})
})
