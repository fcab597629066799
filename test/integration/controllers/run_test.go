//go:build integration

package controllers_test

import (
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("A run", func() {
	var (
		ns string
		a  *testAgent
	)
	BeforeEach(func() {
		ns, a = newNamespace(), newAgent()
	})

	// startRun creates a run and waits until its command runs.
	startRun := func(name string, change func(*dsv1alpha1.Sandbox)) (*dsv1alpha1.Sandbox, string) {
		GinkgoHelper()
		sbx := sandbox(ns, name, a.node)
		sbx.Spec.Command = []string{"sh", "-c", "work"}
		if change != nil {
			change(sbx)
		}
		create(sbx)
		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxRunning))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("False/Running"), "a run is Ready only once it finished")
		Expect(condition(sbx, dsv1alpha1.ConditionReconciling)()).To(Equal("True/Running"))
		return sbx, container(a.docker, sbx, dsv1alpha1.RolePrimary, "").Name
	}

	It("succeeds with its exit code and output in status, and stops its services", func() {
		create(service(ns, "helper"))
		sbx, primary := startRun("ok", func(s *dsv1alpha1.Sandbox) { s.Spec.Services = []string{"helper"} })
		Expect(a.docker.WriteLogs(primary, []byte("hello\n"))).To(Succeed())
		Expect(a.docker.Exit(primary, 0)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxSucceeded))
		cur := get(sbx)
		Expect(cur.Status.Result).NotTo(BeNil())
		Expect(*cur.Status.Result.ExitCode).To(BeEquivalentTo(0))
		Expect(cur.Status.Result.Reason).To(Equal(dsv1alpha1.ReasonCompleted))
		Expect(cur.Status.Result.OutputTail).To(Equal("hello\n"))
		Expect(cur.Status.Result.TruncatedBytes).To(BeZero())
		Expect(cur.Status.FinishTime).NotTo(BeNil())
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("True/Completed"))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("False/Completed"))
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleService, "helper")).Should(Equal(dd.StateExited))
		Eventually(state(a.docker, sbx, dsv1alpha1.RoleHolder, "")).Should(Equal(dd.StateRunning), "the workspace is kept")
		Eventually(eventReasons(sbx)).Should(ContainElement("RunSucceeded"))
	})

	It("fails with a non-zero exit code and reads Stalled, so GitOps fails fast", func() {
		sbx, primary := startRun("bad", nil)
		Expect(a.docker.Exit(primary, 3)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed))
		Expect(*get(sbx).Status.Result.ExitCode).To(BeEquivalentTo(3))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("True/Error"))
		Expect(condition(sbx, dsv1alpha1.ConditionReady)()).To(Equal("False/Error"))
		Expect(condition(sbx, dsv1alpha1.ConditionReconciling)()).To(Equal("False/Error"))
		Consistently(state(a.docker, sbx, dsv1alpha1.RolePrimary, "")).Should(Equal(dd.StateExited), "never run again")
	})

	It("keeps the last 8192 bytes of a long output and counts the rest", func() {
		sbx, primary := startRun("chatty", nil)
		Expect(a.docker.WriteLogs(primary, []byte(strings.Repeat("a", 2000)+strings.Repeat("b", 8192)))).To(Succeed())
		Expect(a.docker.Exit(primary, 0)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxSucceeded))
		res := get(sbx).Status.Result
		Expect(res.OutputTail).To(Equal(strings.Repeat("b", 8192)))
		Expect(res.TruncatedBytes).To(BeEquivalentTo(2000))
	})

	It("cuts the output tail on a character boundary", func() {
		sbx, primary := startRun("utf8", nil)
		out := strings.Repeat("é", 4097) + "!" // 8195 bytes: the last 8192 start inside a character
		Expect(a.docker.WriteLogs(primary, []byte(out))).To(Succeed())
		Expect(a.docker.Exit(primary, 0)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxSucceeded))
		res := get(sbx).Status.Result
		Expect(res.OutputTail).To(Equal(strings.Repeat("é", 4095) + "!"))
		Expect(res.TruncatedBytes).To(BeEquivalentTo(4))
	})

	It("reports an OOM kill", func() {
		sbx, primary := startRun("oom", nil)
		Expect(a.docker.OOM(primary)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed))
		Expect(get(sbx).Status.Result.Reason).To(Equal(dsv1alpha1.ReasonOOMKilled))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("True/OOMKilled"))
	})

	It("is killed from the host at activeDeadlineSeconds", func() {
		sbx, _ := startRun("slow", func(s *dsv1alpha1.Sandbox) { s.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) })

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed))
		Expect(get(sbx).Status.Result.Reason).To(Equal(dsv1alpha1.ReasonDeadlineExceeded))
		Expect(container(a.docker, sbx, dsv1alpha1.RolePrimary, "").State).To(Equal(dd.StateExited))
		Expect(condition(sbx, dsv1alpha1.ConditionStalled)()).To(Equal("True/DeadlineExceeded"))
		Eventually(eventReasons(sbx)).Should(ContainElements("DeadlineExceeded", "RunFailed"))
	})

	It("is deleted ttlSecondsAfterFinished after it finished, leaving nothing in Docker", func() {
		sbx, primary := startRun("short-lived", func(s *dsv1alpha1.Sandbox) { s.Spec.TTLSecondsAfterFinished = ptr.To[int32](1) })
		uid := string(get(sbx).UID)
		Expect(a.docker.Exit(primary, 0)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxSucceeded))
		Eventually(gone(sbx)).Should(BeTrue())
		Expect(holdings(a.docker, uid)).To(BeZero())
	})

	It("records a primary that vanished as Lost", func() {
		sbx, primary := startRun("lost", nil)
		Expect(a.docker.RemoveContainer(ctx(), primary)).To(Succeed())

		Eventually(phase(sbx)).Should(Equal(dsv1alpha1.SandboxFailed))
		Expect(get(sbx).Status.Result.Reason).To(Equal(dsv1alpha1.ReasonLost))
		Expect(get(sbx).Status.Result.ExitCode).To(BeNil())
	})
})
