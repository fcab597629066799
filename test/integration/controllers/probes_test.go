//go:build integration

package controllers_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
)

// hangingChecks plays readiness commands that never answer: each runs until its timeout ends it.
func hangingChecks(ctx context.Context, _ string, _ dd.ExecRequest) fake.ExecOutput {
	<-ctx.Done()
	return fake.ExecOutput{}
}

var _ = Describe("Readiness checks off the reconcile workers", func() {
	It("lets one tenant's hanging checks delay no other Sandbox's activeDeadlineSeconds", func() {
		ns := newNamespace()
		node := newNode()
		docker := newDocker(node)
		docker.SetExecHandler(hangingChecks)
		a := startAgent(node, docker) // two workers
		stuck := service(ns, "stuck")
		stuck.Spec.Readiness = &dsv1alpha1.Readiness{Command: []string{"check"}, PeriodSeconds: 30, TimeoutSeconds: 30, FailureThreshold: 3}
		create(stuck)
		for i := range 4 {
			sbx := sandbox(ns, fmt.Sprintf("slow-%d", i), a.node)
			sbx.Spec.Services = []string{"stuck"}
			create(sbx)
		}
		Eventually(func() int { return a.docker.Calls(fake.OpExec) }).Should(BeNumerically(">=", 2), "checks hang on every worker the old way")

		timed := sandbox(ns, "timed", a.node)
		timed.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
		created := time.Now()
		create(timed)

		Eventually(condition(timed, dsv1alpha1.ConditionStalled), 15*time.Second).Should(Equal("True/DeadlineExceeded"))
		Expect(time.Since(created)).To(BeNumerically("<", 15*time.Second), "its deadline is 3 s, the checks' timeout 30 s")
		Expect(phase(timed)()).To(Equal(dsv1alpha1.SandboxFailed))
		Expect(phase(sandbox(ns, "slow-0", a.node))()).To(Equal(dsv1alpha1.SandboxStarting), "the hanging checks are still waited for")
	})
})
