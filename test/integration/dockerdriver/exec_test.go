//go:build integration

package dockerdriver_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

var _ = Describe("Exec", func() {
	var target dd.ContainerSpec
	BeforeEach(func(ctx SpecContext) {
		target = spec(newOwner("exec"), dsv1alpha1.RolePrimary, "")
		run(ctx, target)
	})

	// noProcessLeft asserts that nothing of the container runs any more: it was killed as a whole.
	noProcessLeft := func(ctx context.Context) {
		GinkgoHelper()
		info, err := driver.ObserveContainer(ctx, target.Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(info.State).To(Equal(dd.StateExited))
		top, err := docker.ContainerTop(ctx, target.Name, nil)
		Expect(err).To(HaveOccurred(), "docker top lists processes only of a running container: %v", top.Processes)
	}

	It("returns the exit code and output of a command", func(ctx SpecContext) {
		res := sh(ctx, target.Name, "echo out; echo err >&2; exit 3", 10*time.Second)
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(res.ExitCode).To(Equal(3))
		Expect(string(res.Stdout)).To(Equal("out\n"))
		Expect(string(res.Stderr)).To(Equal("err\n"))
		Expect(res.ContainerKilled).To(BeFalse())
	})

	// The margin is wide for a loaded machine: what it proves is that the deadline, not the command, ended the wait.
	It("enforces the deadline from the host: a 120 s sleep with a 1 s deadline returns well before its end", func(ctx SpecContext) {
		start := time.Now()
		res := sh(ctx, target.Name, "sleep 120", time.Second)
		Expect(time.Since(start)).To(BeNumerically("<", 60*time.Second))
		Expect(res.Reason).To(Equal(dd.ExecDeadlineExceeded))
		Expect(res.ContainerKilled).To(BeTrue())
		noProcessLeft(ctx)
	})

	It("enforces the deadline even when the command stops its own parent", func(ctx SpecContext) {
		start := time.Now()
		// The inner shell freezes the outer one (its supervisor) and outlives it in the background.
		res := sh(ctx, target.Name, `sh -c 'kill -STOP $PPID; sleep 10' & wait`, time.Second)
		Expect(time.Since(start)).To(BeNumerically("<", 2*time.Second))
		Expect(res.Reason).To(Equal(dd.ExecDeadlineExceeded))
		noProcessLeft(ctx)
	})

	It("kills what it started and reports Canceled when the caller cancels", func(ctx SpecContext) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(500*time.Millisecond, cancel)
		res, err := driver.Exec(cctx, target.Name, dd.ExecRequest{Command: []string{"sleep", "10"}, Timeout: time.Minute, OutputLimit: 1024})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCanceled))
		noProcessLeft(ctx)
	})

	It("cuts output beyond the cap and counts it: 128 KiB written, 64 KiB kept", func(ctx SpecContext) {
		res, err := driver.Exec(ctx, target.Name, dd.ExecRequest{
			Command: []string{"sh", "-c", "head -c 131072 /dev/zero; head -c 10 /dev/zero >&2"},
			Timeout: 10 * time.Second, OutputLimit: 64 << 10,
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(res.Reason).To(Equal(dd.ExecCompleted))
		Expect(res.ExitCode).To(Equal(0))
		Expect(res.Stdout).To(HaveLen(64 << 10))
		Expect(res.StdoutCut).To(Equal(int64(64 << 10)))
		Expect(res.Stderr).To(HaveLen(10))
		Expect(res.StderrCut).To(BeZero())
	})

	It("refuses an exec without deadline or cap, and one in a stopped container", func(ctx SpecContext) {
		_, err := driver.Exec(ctx, target.Name, dd.ExecRequest{Command: []string{"true"}, OutputLimit: 1})
		Expect(dd.IsInvalidSpec(err)).To(BeTrue())
		Expect(driver.StopContainer(ctx, target.Name, 0)).To(Succeed())
		_, err = driver.Exec(ctx, target.Name, dd.ExecRequest{Command: []string{"true"}, Timeout: time.Second, OutputLimit: 1})
		Expect(dd.IsConflict(err)).To(BeTrue())
		Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseExec))
	})
})
