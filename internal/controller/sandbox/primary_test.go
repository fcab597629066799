package sandbox

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

func TestEnsurePrimary(t *testing.T) {
	deadline := func(secs int64) func(*dsv1alpha1.Sandbox) {
		return func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.ActiveDeadlineSeconds = ptr.To(secs) }
	}
	withSecret := func(sbx *dsv1alpha1.Sandbox) {
		sbx.Spec.Env = []dsv1alpha1.EnvVar{{Name: "TOKEN", ValueFrom: &dsv1alpha1.EnvVarSource{
			SecretKeyRef: dsv1alpha1.SecretKeySelector{Name: "tokens", Key: "api"},
		}}}
	}
	workspace := func(h *harness, s *scope) { h.makeWorkspace(s) }
	runningAt := func(network string) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			c := h.container(s.primaryName())
			g.Expect(c.State).To(Equal(dd.StateRunning))
			g.Expect(c.Network).To(Equal(network))
			g.Expect(s.sbx.Status.ContainerID).To(Equal(c.ID))
			// a start this pass made is timed by the agent's clock, right after Docker's
			g.Expect(s.sbx.Status.StartTime.Time).To(BeTemporally("~", c.StartedAt, time.Second))
		}
	}
	notMade := func(g Gomega, h *harness, s *scope) {
		g.Expect(h.container(s.primaryName()).Exists).To(BeFalse())
		g.Expect(s.sbx.Status.StartTime).To(BeNil())
	}
	sessionRunning := outcome{phase: dsv1alpha1.SandboxRunning, ready: true, reason: dsv1alpha1.ReasonRunning}
	started := "Normal " + EventStarted
	runStepCases(t, (*Reconciler).ensurePrimary, []stepCase{
		{
			name:   "a session's primary is made and started: Ready, Running",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: workspace,
			want:   sessionRunning,
			events: []string{started},
			check:  runningAt(""),
		},
		{
			name:   "a run's primary is made and started: Running, not Ready until it ends well",
			sbx:    atTopology(newSandbox("s", run()), 1),
			docker: workspace,
			want:   outcome{phase: dsv1alpha1.SandboxRunning, reason: dsv1alpha1.ReasonRunning},
			events: []string{started},
			check:  runningAt(""),
		},
		{
			name:   "an Isolated primary without services joins the node's shared Isolated bridge",
			sbx:    atTopology(newSandbox("s", withNetwork(dsv1alpha1.NetworkIsolated)), 1),
			docker: func(h *harness, s *scope) { h.makeWorkspace(s); h.makeNetwork(s) },
			want:   sessionRunning,
			events: []string{started},
			check:  runningAt(dd.NodeIsolatedNetworkName(testNode)),
		},
		{
			name:   "a primary made by a pass whose status write was lost is started",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) { h.makeWorkspace(s); h.create(h.primarySpec(s)) },
			want:   sessionRunning,
			events: []string{started},
			check: func(g Gomega, h *harness, s *scope) {
				runningAt("")(g, h, s)
				g.Expect(h.docker.Calls(fake.OpEnsureContainer)).To(Equal(2), "the setup's holder and primary; the primary adopted")
			},
		},
		{
			name:   "a running primary is left alone, its start time taken from Docker",
			sbx:    atTopology(newSandbox("s"), 1),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			want:   sessionRunning,
			check: func(g Gomega, h *harness, s *scope) {
				runningAt("")(g, h, s)
				g.Expect(h.view.calls()).To(BeEmpty())
			},
		},
		{
			name:    "a primary Docker can never run is Stalled, not retried",
			sbx:     atTopology(newSandbox("s"), 1),
			docker:  workspace,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpEnsureContainer, dd.KindInvalidSpec) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonStartFailed},
			message: "creating the primary container failed",
			check:   notMade,
		},
		{
			name:    "Docker unavailable while starting the primary: retried",
			sbx:     atTopology(newSandbox("s"), 1),
			docker:  workspace,
			faults:  func(h *harness) { h.docker.FailNext(fake.OpStartContainer, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "starting the primary container failed",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StateCreated))
				g.Expect(s.sbx.Status.StartTime).To(BeNil())
			},
		},
		{
			name:    "a Secret the env needs is waited for, Pending",
			sbx:     atTopology(newSandbox("s", withSecret), 1),
			docker:  workspace,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxPending, reason: dsv1alpha1.ReasonSecretNotFound},
			message: `key "api" of Secret "tokens" does not exist`,
			check:   notMade,
		},
		{
			name:   "an image removed since it was seen to is looked for again",
			sbx:    atTopology(newSandbox("s", withImage(pulledImage, "")), 1),
			docker: workspace,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonImageNotPresent},
			check: func(g Gomega, h *harness, s *scope) {
				notMade(g, h, s)
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
			},
		},
		{
			name:   "a pass is asked for when activeDeadlineSeconds comes",
			sbx:    atTopology(newSandbox("s", deadline(3600)), 1),
			docker: workspace,
			want:   sessionRunning,
			events: []string{started},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(BeNumerically("~", time.Hour, time.Minute))
			},
		},
		{
			name: "a session is killed at activeDeadlineSeconds and ends DeadlineExceeded",
			sbx:  withStarted(atTopology(newSandbox("s", deadline(60)), 1)),
			docker: func(h *harness, s *scope) {
				h.view.age(h.start(h.primarySpec(s)), time.Hour)
			},
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonDeadlineExceeded},
			events: []string{"Warning " + EventDeadlineExceeded},
			check: func(g Gomega, h *harness, s *scope) {
				c := h.container(s.primaryName())
				g.Expect(c.State).To(Equal(dd.StateExited))
				g.Expect(c.ExitCode).To(Equal(137), "killed, no grace")
				g.Expect(s.sbx.Status.FinishTime).NotTo(BeNil())
				g.Expect(topology.Poisoned(s.sbx)).To(BeFalse())
			},
		},
		{
			name: "a run is killed at activeDeadlineSeconds and its result recorded: DeadlineExceeded",
			sbx:  withStarted(atTopology(newSandbox("s", run(deadline(60))), 1)),
			docker: func(h *harness, s *scope) {
				h.view.age(h.start(h.primarySpec(s)), time.Hour)
			},
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonDeadlineExceeded},
			events: []string{"Warning " + EventDeadlineExceeded, "Warning " + EventRunFailed},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.Result.Reason).To(Equal(dsv1alpha1.ReasonDeadlineExceeded))
				g.Expect(*s.sbx.Status.Result.ExitCode).To(Equal(int32(137)))
			},
		},
		{
			name: "a kill at the deadline Docker cannot make is retried",
			sbx:  withStarted(atTopology(newSandbox("s", deadline(60)), 1)),
			docker: func(h *harness, s *scope) {
				h.view.age(h.start(h.primarySpec(s)), time.Hour)
			},
			faults:  func(h *harness) { h.docker.FailNext(fake.OpStopContainer, dd.KindUnavailable) },
			stop:    true,
			err:     true,
			want:    outcome{phase: dsv1alpha1.SandboxStarting, reason: dsv1alpha1.ReasonDockerUnavailable},
			message: "killing the primary container at its deadline failed",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StateRunning))
			},
		},
	}, (*Reconciler).ensureNetwork)
}
