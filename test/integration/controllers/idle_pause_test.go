//go:build integration

package controllers_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// Idle pause (spec.idlePauseSeconds, docs/design/idle-pause.md): the agent freezes a session that ran no
// command for that long, and the next command thaws it before it runs. The fake daemon refuses an exec in a
// frozen container, so an Execution that succeeds ran in a thawed one.
var _ = Describe("Idle pause", func() {
	const idle = 5 // seconds, the least the API admits

	It("freezes a session after idlePauseSeconds without a command, and its next Execution thaws it first", func() {
		ns, a, jobs := newNamespace(), newAgent(), newJobLog()
		release := make(chan struct{}) // ends the job "hold"
		a.docker.SetExecHandler(func(ctx context.Context, name string, req dd.ExecRequest) fake.ExecOutput {
			if len(req.Command) == 3 && req.Command[2] == "hold" {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return fake.ExecOutput{}
			}
			return jobs.handle(ctx, name, req)
		})
		create(service(ns, "db"))
		sbx := sandbox(ns, "dozy", a.node)
		sbx.Spec.Services = []string{"db"}
		sbx.Spec.IdlePauseSeconds = ptr.To[int32](idle)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionReady)).Should(Equal("True/Running"))

		Eventually(phase(sbx)).WithTimeout(time.Minute).Should(Equal(dsv1alpha1.SandboxPaused))
		Expect(condition(sbx, dsv1alpha1.ConditionPaused)()).To(Equal("True/Idle"))
		Expect(message(sbx, dsv1alpha1.ConditionPaused)).To(ContainSubstring("without a command"))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Idle"), "still Ready: its next command thaws it")
		Expect(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")()).To(Equal(dd.StatePaused))
		Expect(state(a.docker, sbx, dsv1alpha1.RoleService, "db")()).To(Equal(dd.StatePaused))
		Expect(get(sbx).Spec.Lifecycle).To(Equal(dsv1alpha1.LifecycleRunning), "the agent never writes the spec")
		Eventually(eventReasons(sbx)).Should(ContainElement("IdlePaused"))

		ex := execution(ns, "wake", "dozy", "echo")
		create(ex)
		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		Eventually(eventReasons(sbx)).Should(ContainElement("Resumed"))
		Expect(get(sbx).Status.TopologyGeneration).To(BeEquivalentTo(1), "a pause and its resume do not roll the topology")

		By("a command that runs keeps the Sandbox awake past idlePauseSeconds")
		long := execution(ns, "long", "dozy", "hold")
		create(long)
		Eventually(execState(long)).Should(Equal("Running/Running"))
		Eventually(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).Should(Equal(dd.StateRunning))
		Consistently(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).WithTimeout(2 * idle * time.Second).Should(Equal(dd.StateRunning))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxRunning))

		By("once it ends, the count starts again")
		close(release)
		Eventually(execState(long)).Should(Equal("Succeeded/Completed"))
		Eventually(condition(sbx, dsv1alpha1.ConditionPaused)).WithTimeout(time.Minute).Should(Equal("True/Idle"))
		Expect(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")()).To(Equal(dd.StatePaused))
	})

	It("thaws a Sandbox frozen for idleness when idlePauseSeconds is removed", func() {
		ns, a := newNamespace(), newAgent()
		sbx := sandbox(ns, "undecided", a.node)
		sbx.Spec.IdlePauseSeconds = ptr.To[int32](idle)
		create(sbx)
		Eventually(condition(sbx, dsv1alpha1.ConditionPaused)).WithTimeout(time.Minute).Should(Equal("True/Idle"))

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.IdlePauseSeconds = nil })
		Eventually(condition(sbx, dsv1alpha1.ConditionPaused)).Should(Equal("False/Running"))
		Expect(phase(sbx)()).To(Equal(dsv1alpha1.SandboxRunning))
		Expect(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")()).To(Equal(dd.StateRunning))
	})
})
