//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

var _ = Describe("An Execution and a freeze of its Sandbox", func() {
	It("applied together with a Checkpoint, runs after the capture (or the capture after it), every time", func() {
		ns, a := newNamespace(), newStoringAgent()
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.DeleteAllOf(ctx, &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})
		sbx := runningSession(ns, "shell", a)
		fillWorkspace(a.docker, sbx, map[string]string{"notes.txt": "hello"})
		primary := container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name
		// The command looks at its container as it runs: a capture must never freeze it meanwhile.
		var frozenUnder atomic.Int32
		a.docker.SetExecHandler(func(ctx context.Context, _ string, req dd.ExecRequest) fake.ExecOutput {
			for range 5 {
				if c, err := a.docker.ObserveContainer(ctx, primary); err == nil && c.State == dd.StatePaused {
					frozenUnder.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
			return fake.ExecOutput{Stdout: []byte("hello from " + req.Command[1] + "\n")}
		})

		frozen := 0
		for i := range 5 {
			ckpt, ex := checkpoint(ns, fmt.Sprintf("snap-%d", i), "shell"), execution(ns, fmt.Sprintf("hello-%d", i), "shell", "echo")
			ex.Spec.Command = []string{"echo", ex.Name}
			create(ckpt)
			create(ex)
			sawFrozen := false
			Eventually(func() string {
				state := execState(ex)()
				sawFrozen = sawFrozen || state == "Queued/"+dsv1alpha1.ReasonSandboxFrozen
				return state
			}).WithPolling(2 * time.Millisecond).Should(Equal("Succeeded/Completed"))
			Expect(getExec(ex).Status.Stdout).To(Equal("hello from " + ex.Name + "\n"))
			Eventually(ckptState(ckpt)).Should(Equal("Ready/Succeeded"))
			if sawFrozen {
				frozen++
			}
		}
		By(fmt.Sprintf("the Execution was seen Queued/SandboxFrozen in %d of 5 rounds", frozen))
		Expect(frozenUnder.Load()).To(BeZero(), "no command ran in a frozen container")
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateRunning))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Running"))
	})

	It("waits Queued (SandboxPaused) while its Sandbox is paused, and runs once it is resumed", func() {
		ns, a := newNamespace(), newAgent()
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8s.DeleteAllOf(ctx, &dsv1alpha1.Execution{}, client.InNamespace(ns))).To(Succeed())
		})
		a.docker.SetExecHandler(func(context.Context, string, dd.ExecRequest) fake.ExecOutput {
			return fake.ExecOutput{Stdout: []byte("resumed\n")}
		})
		sbx := sandbox(ns, "shell", a.node)
		sbx.Spec.Lifecycle = dsv1alpha1.LifecyclePaused
		create(sbx)
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxPaused))

		ex := execution(ns, "hello", "shell", "echo")
		create(ex)
		Eventually(execState(ex)).Should(Equal("Queued/" + dsv1alpha1.ReasonSandboxPaused))
		Expect(getExec(ex).Status.Message).To(Equal("waiting for Sandbox shell to be resumed (spec.lifecycle: Running)"))
		Consistently(execState(ex)).Should(Equal("Queued/" + dsv1alpha1.ReasonSandboxPaused))
		Expect(a.docker.Calls(fake.OpExec)).To(BeZero())

		update(sbx, func(s *dsv1alpha1.Sandbox) { s.Spec.Lifecycle = dsv1alpha1.LifecycleRunning })
		Eventually(execState(ex)).Should(Equal("Succeeded/Completed"))
		Expect(getExec(ex).Status.Stdout).To(Equal("resumed\n"))
	})
})
