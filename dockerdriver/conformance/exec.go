package conformance

import (
	"time"

	. "github.com/onsi/gomega"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
)

// killedExitCode is what a container's init killed by SIGKILL exits with.
const killedExitCode = 137

func execDeadline(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	started(t, h, s)
	const timeout = time.Second
	res, err := h.Driver.Exec(ctx, s.Name, dd.ExecRequest{Command: SleepCommand, Timeout: timeout, OutputLimit: 1 << 10})
	g.Expect(err).NotTo(HaveOccurred(), "a passed deadline is an outcome, not an error")
	g.Expect(res.Reason).To(Equal(dd.ExecDeadlineExceeded))
	g.Expect(res.ContainerKilled).To(BeTrue())
	g.Expect(res.Duration).To(BeNumerically(">=", timeout))
	info, err := h.Driver.ObserveContainer(ctx, s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.State).To(Equal(dd.StateExited), "the whole container was killed, not just the command")
	g.Expect(info.ExitCode).To(Equal(killedExitCode))
}

func execKeepOnTimeout(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	started(t, h, s)
	const timeout = time.Second
	res, err := h.Driver.Exec(ctx, s.Name, dd.ExecRequest{Command: SleepCommand, Timeout: timeout, OutputLimit: 1 << 10, KeepOnTimeout: true})
	g.Expect(err).NotTo(HaveOccurred(), "a passed deadline is an outcome, not an error")
	g.Expect(res.Reason).To(Equal(dd.ExecDeadlineExceeded))
	g.Expect(res.ContainerKilled).To(BeFalse())
	g.Expect(res.Duration).To(BeNumerically(">=", timeout))
	info, err := h.Driver.ObserveContainer(ctx, s.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.State).To(Equal(dd.StateRunning), "the container was left alone")
}

func execNotRunning(t T, h Harness) {
	g, ctx, o := NewWithT(t), t.Context(), newOwner(t, h)
	s := containerSpec(h, o, dsv1alpha1.RolePrimary)
	req := dd.ExecRequest{Command: SleepCommand, Timeout: time.Minute, OutputLimit: 1 << 10}
	_, err := h.Driver.EnsureContainer(ctx, s)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = h.Driver.Exec(ctx, s.Name, req)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "created, never started: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseExec))
	g.Expect(h.Driver.StartContainer(ctx, s.Name)).To(Succeed())
	g.Expect(h.Driver.StopContainer(ctx, s.Name, 0)).To(Succeed())
	_, err = h.Driver.Exec(ctx, s.Name, req)
	g.Expect(dd.KindOf(err)).To(Equal(dd.KindConflict), "stopped: %v", err)
	g.Expect(dd.PhaseOf(err)).To(Equal(dd.PhaseExec))
}
