package sandbox

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dsv1alpha1 "github.com/dockside-dev/dockside/api/v1alpha1"
	dd "github.com/dockside-dev/dockside/dockerdriver"
	"github.com/dockside-dev/dockside/dockerdriver/fake"
	"github.com/dockside-dev/dockside/internal/status"
	"github.com/dockside-dev/dockside/internal/topology"
)

// poisonedBy records the topology as poisoned for reason.
func poisonedBy(sbx *dsv1alpha1.Sandbox, reason, message string) *dsv1alpha1.Sandbox {
	return withCondition(sbx, dsv1alpha1.ConditionTopologyPoisoned, true, reason, message)
}

// failedWith records a run whose command exited with code a moment ago.
func failedWith(sbx *dsv1alpha1.Sandbox, code int32) *dsv1alpha1.Sandbox {
	finished(sbx)
	sbx.Status.Result = &dsv1alpha1.RunResult{ExitCode: ptr.To(code), Reason: dsv1alpha1.ReasonError}
	return sbx
}

func finishedAgo(sbx *dsv1alpha1.Sandbox, ago time.Duration, ttl int32) *dsv1alpha1.Sandbox {
	finished(sbx)
	sbx.Status.FinishTime = &metav1.Time{Time: time.Now().Add(-ago)}
	sbx.Spec.TTLSecondsAfterFinished = ptr.To(ttl)
	return sbx
}

func TestHoldSettled(t *testing.T) {
	db := newService("db")
	ranAndExited := func(h *harness, s *scope) {
		h.makeWorkspace(s)
		h.exited(h.primarySpec(s), 0)
	}
	runStepCases(t, (*Reconciler).holdSettled, []stepCase{
		{
			name:   "a live topology is left to the steps after",
			sbx:    withStarted(atTopology(newSandbox("s"), 1)),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(BeEmpty())
			},
		},
		{
			name: "a poisoned topology is stopped, primary first, its workspace holder kept",
			sbx: poisonedBy(withStarted(atTopology(newSandbox("s", withServices("db")), 1, db)),
				dsv1alpha1.ReasonServiceUnhealthy, `service "db" failed readiness 3 times in a row`),
			objects: []client.Object{newService("db")},
			docker:  func(h *harness, s *scope) { h.runningTopology(s, db) },
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceUnhealthy},
			message: `service "db" failed readiness 3 times in a row`,
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.view.calls()).To(Equal([]string{"stop " + s.primaryName(), "stop " + s.serviceName("db")}))
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StateExited))
				g.Expect(h.container(s.serviceName("db")).State).To(Equal(dd.StateExited))
				g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
				g.Expect(s.sbx.Status.Services).To(ConsistOf(HaveField("State", dsv1alpha1.ServiceStopped)),
					"no status claims Ready a service the topology's end stopped")
			},
		},
		{
			name: "a poisoned topology whose holder stopped behind the agent's back gets its holder started again",
			sbx: poisonedBy(withStarted(atTopology(newSandbox("s"), 1)),
				dsv1alpha1.ReasonPrimaryExited, "the primary container stopped with exit code 137"),
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				h.exited(h.primarySpec(s), 137)
				h.noErr(h.docker.StopContainer(h.ctx, s.holderName(), 0))
			},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonPrimaryExited},
			message: "exit code 137",
			events:  []string{"Warning " + EventHolderRestarted},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.holderName()).State).To(Equal(dd.StateRunning))
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StateExited), "the primary stays stopped")
			},
		},
		{
			name: "a start that failed before its deadline drops the wakeup it asked for at it",
			sbx: poisonedBy(atTopology(newSandbox("s", withServices("db")), 1, db),
				dsv1alpha1.ReasonServiceReadinessFailed, `service "db" did not pass readiness within 3 checks`),
			objects: []client.Object{newService("db")},
			docker: func(h *harness, s *scope) {
				h.makeWorkspace(s)
				h.r.Wake.At(s.key(), time.Now().Add(time.Hour))
			},
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonServiceReadinessFailed},
			message: "did not pass readiness",
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.alarm(s).IsZero()).To(BeTrue(), "a settled Sandbox is not woken at rest")
			},
		},
		{
			name:   "a run that exited 0 stays Succeeded, and without a TTL it stays",
			sbx:    finished(atTopology(newSandbox("s", run()), 1)),
			docker: ranAndExited,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxSucceeded, ready: true, reason: dsv1alpha1.ReasonCompleted},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(BeZero())
				g.Expect(h.get(s.sbx).DeletionTimestamp).To(BeNil())
				g.Expect(h.view.calls()).To(BeEmpty(), "nothing left running to stop")
			},
		},
		{
			name:    "a run that failed stays Failed with its reason",
			sbx:     failedWith(atTopology(newSandbox("s", run()), 1), 2),
			docker:  ranAndExited,
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonError},
			message: "exited with code 2",
		},
		{
			name:   "a finished run asks for a pass when its TTL runs out",
			sbx:    finishedAgo(atTopology(newSandbox("s", run()), 1), 0, 3600),
			docker: ranAndExited,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxSucceeded, ready: true, reason: dsv1alpha1.ReasonCompleted},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.recheck).To(BeNumerically("~", time.Hour, time.Minute))
				g.Expect(h.get(s.sbx).DeletionTimestamp).To(BeNil())
			},
		},
		{
			name:   "a finished run past its TTL is deleted",
			sbx:    finishedAgo(atTopology(newSandbox("s", run()), 1), 2*time.Minute, 60),
			docker: ranAndExited,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxSucceeded, ready: true, reason: dsv1alpha1.ReasonCompleted},
			events: []string{"Normal " + EventExpired},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.get(s.sbx).DeletionTimestamp).NotTo(BeNil(), "deleted; its finalizer holds it for the cleanup")
			},
		},
		{
			name: "a session stopped at its deadline stays Failed with DeadlineExceeded",
			sbx: func() *dsv1alpha1.Sandbox {
				sbx := withStarted(atTopology(newSandbox("s"), 1))
				sbx.Status.FinishTime = &metav1.Time{Time: time.Now()}
				return sbx
			}(),
			docker: ranAndExited,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonDeadlineExceeded},
		},
		{
			name:   "a stop Docker cannot make is retried",
			sbx:    poisonedBy(withStarted(atTopology(newSandbox("s"), 1)), dsv1alpha1.ReasonPrimaryExited, "the primary container was removed"),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			faults: func(h *harness) { h.docker.FailNext(fake.OpStopContainer, dd.KindUnavailable) },
			stop:   true, err: true,
			want: outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonPrimaryExited},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(h.container(s.primaryName()).State).To(Equal(dd.StateRunning))
			},
		},
	})
}

func TestFollowPrimary(t *testing.T) {
	withDeadline := func(sbx *dsv1alpha1.Sandbox) { sbx.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }
	exitedWith := func(code int, output string) func(h *harness, s *scope) {
		return func(h *harness, s *scope) {
			name := h.start(h.primarySpec(s))
			h.noErr(h.docker.WriteLogs(name, []byte(output)))
			h.noErr(h.docker.Exit(name, code))
		}
	}
	ranPastDeadline := func(h *harness, s *scope) {
		name := h.start(h.primarySpec(s))
		h.view.age(name, time.Hour)
		h.noErr(h.docker.Exit(name, 137))
	}
	poisoned := func(reason string) func(g Gomega, h *harness, s *scope) {
		return func(g Gomega, h *harness, s *scope) {
			g.Expect(topology.Poisoned(s.sbx)).To(Equal(reason != ""), "poisoned")
			if reason != "" {
				g.Expect(condition(s.sbx, dsv1alpha1.ConditionTopologyPoisoned).Reason).To(Equal(reason))
			}
		}
	}
	runStepCases(t, (*Reconciler).followPrimary, []stepCase{
		{
			name:   "a running primary is left to the steps after",
			sbx:    withStarted(atTopology(newSandbox("s"), 1)),
			docker: func(h *harness, s *scope) { h.start(h.primarySpec(s)) },
			check:  poisoned(""),
		},
		{
			name:  "no primary yet: nothing to follow",
			sbx:   atTopology(newSandbox("s"), 1),
			check: poisoned(""),
		},
		{
			name:    "a session whose primary exited is poisoned: PrimaryExited",
			sbx:     withStarted(atTopology(newSandbox("s"), 1)),
			docker:  exitedWith(3, ""),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonPrimaryExited},
			message: "stopped with exit code 3",
			events:  []string{"Warning " + EventPoisoned},
			check:   poisoned(dsv1alpha1.ReasonPrimaryExited),
		},
		{
			name: "a session whose primary stopped while an Execution runs waits for the Execution's verdict",
			sbx:  withStarted(atTopology(newSandbox("s"), 1)),
			docker: func(h *harness, s *scope) {
				exitedWith(137, "")(h, s)
				h.r.Commands = commandsRunning{s.sbx.UID: true}
			},
			stop: true,
			want: outcome{phase: dsv1alpha1.SandboxRunning, reason: dsv1alpha1.ReasonRunning},
			check: func(g Gomega, h *harness, s *scope) {
				poisoned("")(g, h, s)
				g.Expect(s.recheck).To(Equal(status.StaleRetry))
			},
		},
		{
			name:   "a session stopped at activeDeadlineSeconds ends DeadlineExceeded, not poisoned",
			sbx:    withStarted(atTopology(newSandbox("s", withDeadline), 1)),
			docker: ranPastDeadline,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonDeadlineExceeded},
			check: func(g Gomega, h *harness, s *scope) {
				poisoned("")(g, h, s)
				g.Expect(s.sbx.Status.FinishTime.Time).To(BeTemporally("==", h.container(s.primaryName()).FinishedAt))
			},
		},
		{
			name:    "a session whose primary was removed is poisoned: PrimaryExited",
			sbx:     withStarted(atTopology(newSandbox("s"), 1)),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonPrimaryExited},
			message: "the primary container was removed",
			events:  []string{"Warning " + EventPoisoned},
			check:   poisoned(dsv1alpha1.ReasonPrimaryExited),
		},
		{
			name: "a run whose command exited 0 records its result and output: Succeeded",
			sbx: func() *dsv1alpha1.Sandbox {
				sbx := withStarted(atTopology(newSandbox("s", run(withServices("db"))), 1, newService("db")))
				sbx.Status.Services[0].State = dsv1alpha1.ServiceReady
				return sbx
			}(),
			objects: []client.Object{newService("db")},
			docker:  exitedWith(0, "hello\n"),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxSucceeded, ready: true, reason: dsv1alpha1.ReasonCompleted},
			events:  []string{"Normal " + EventRunSucceeded},
			check: func(g Gomega, h *harness, s *scope) {
				st := s.sbx.Status
				g.Expect(*st.Result).To(Equal(dsv1alpha1.RunResult{ExitCode: ptr.To[int32](0), Reason: dsv1alpha1.ReasonCompleted, OutputTail: "hello\n"}))
				g.Expect(st.FinishTime.Time).To(BeTemporally("==", h.container(s.primaryName()).FinishedAt))
				g.Expect(st.Services[0].Message).To(Equal("stopped: the run finished"))
				poisoned("")(g, h, s)
			},
		},
		{
			name:    "a run that exited non-zero is Failed: Error, keeping the last bytes of its output",
			sbx:     withStarted(atTopology(newSandbox("s", run()), 1)),
			docker:  exitedWith(2, strings.Repeat("x", dsv1alpha1.MaxOutputTailBytes+100)),
			stop:    true,
			want:    outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonError},
			message: "exited with code 2",
			events:  []string{"Warning " + EventRunFailed},
			check: func(g Gomega, h *harness, s *scope) {
				res := s.sbx.Status.Result
				g.Expect(res.OutputTail).To(HaveLen(dsv1alpha1.MaxOutputTailBytes))
				g.Expect(res.TruncatedBytes).To(Equal(int64(100)))
			},
		},
		{
			name: "a run killed by its memory limit is Failed: OOMKilled",
			sbx:  withStarted(atTopology(newSandbox("s", run()), 1)),
			docker: func(h *harness, s *scope) {
				h.noErr(h.docker.OOM(h.start(h.primarySpec(s))))
			},
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonOOMKilled},
			events: []string{"Warning " + EventRunFailed},
		},
		{
			name:   "a run stopped at activeDeadlineSeconds is Failed: DeadlineExceeded",
			sbx:    withStarted(atTopology(newSandbox("s", run(withDeadline)), 1)),
			docker: ranPastDeadline,
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonDeadlineExceeded},
			events: []string{"Warning " + EventRunFailed},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(*s.sbx.Status.Result.ExitCode).To(Equal(int32(137)))
			},
		},
		{
			name:   "a run whose primary vanished unseen is Failed: Lost",
			sbx:    withStarted(atTopology(newSandbox("s", run()), 1)),
			stop:   true,
			want:   outcome{phase: dsv1alpha1.SandboxFailed, stalled: true, reason: dsv1alpha1.ReasonLost},
			events: []string{"Warning " + EventRunFailed},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.Result.ExitCode).To(BeNil())
				g.Expect(s.sbx.Status.FinishTime).NotTo(BeNil())
			},
		},
		{
			name:   "a run's output Docker cannot give is retried, with no result recorded yet",
			sbx:    withPhase(withStarted(atTopology(newSandbox("s", run()), 1)), dsv1alpha1.SandboxRunning),
			docker: exitedWith(0, "hello\n"),
			faults: func(h *harness) { h.docker.FailNext(fake.OpLogTail, dd.KindUnavailable) },
			stop:   true, err: true,
			want: outcome{phase: dsv1alpha1.SandboxRunning, reason: dsv1alpha1.ReasonDockerUnavailable},
			check: func(g Gomega, h *harness, s *scope) {
				g.Expect(s.sbx.Status.Result).To(BeNil())
				g.Expect(s.sbx.Status.FinishTime).To(BeNil())
			},
		},
	})
}
